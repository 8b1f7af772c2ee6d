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


@pytest.fixture
def chunks_sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, str]]:
    """Record the chunk tasks a sweep start fans out instead of sending them."""
    from scenarios.jobs import sweep

    calls: list[tuple[int, int, str]] = []

    def send_chunks(*, run_id: int, chunks: Any, input_hash: str) -> None:
        calls.extend((run_id, chunk, input_hash) for chunk in chunks)

    monkeypatch.setattr(sweep, "send_chunks", send_chunks)
    return calls


@pytest.fixture
def starts_sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the search and sweep starts sent instead of sending them."""
    from scenarios.jobs import requests
    from scenarios.runs import execute

    calls: list[int] = []
    monkeypatch.setattr(requests, "send_start", calls.append)

    def send_starts(run_ids: Any) -> int:
        calls.extend(run_ids)
        return len(run_ids)

    monkeypatch.setattr(execute, "send_starts", send_starts)
    return calls


@pytest.fixture
def feed_dir(tmp_path: Any, settings: Any) -> Any:
    """A directory price feeds may read (PRICE_FEED_DIRS), empty."""
    directory = tmp_path / "feeds"
    directory.mkdir()
    settings.PRICE_FEED_DIRS = [str(directory)]
    return directory
