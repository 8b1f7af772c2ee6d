"""Fixtures of the scenarios tests: an in-process delivery identity, and a guard that keeps the tests from
sending messages to a broker unless they start workers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def claim() -> Any:
    from scenarios.execution import Claim

    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[int]]]:
    """Record run ids handed to the broker instead of sending them (tests without workers)."""
    from scenarios.runs import execute

    calls: list[list[int]] = []

    def record(*, run_ids: Any, chunk_size: int | None = None) -> int:
        calls.append(list(run_ids))
        return 1 if run_ids else 0

    monkeypatch.setattr(execute, "enqueue_runs", record)
    yield calls
