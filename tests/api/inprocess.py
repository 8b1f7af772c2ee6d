"""Executing runs in the test process through the worker's own code path (``execution.run_execute``), so the
stored rows are exactly those a worker stores, without a broker or a worker process (tests that use these
take the ``no_broker`` fixture of ``tests/api/conftest.py``)."""

from __future__ import annotations

import uuid
from typing import Any
from unittest import mock

from scenarios import execution, services
from scenarios.jobs import sweep
from scenarios.models import RUN_KIND_SWEEP, Plan, Result, Run


def claim() -> execution.Claim:
    return execution.Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def solve_plan(plan: Plan) -> Result:
    """Request a solve of ``plan`` and execute it here; the stored (or found) result."""
    run = services.run_request(plan=plan, user=None)
    outcome = execution.run_execute(run_id=run.pk, claim=claim())
    assert outcome.status == "succeeded" and outcome.result_id is not None, Run.objects.get(pk=run.pk).error
    return Result.objects.get(pk=outcome.result_id)


def execute_run(run_id: int) -> Run:
    """Execute a run here as workers would: a solve or a search in one task, a sweep started and then each of
    its chunks (the messages ``sweep_start`` would send, solved in turn); the run as it ends."""
    if Run.objects.get(pk=run_id).kind != RUN_KIND_SWEEP:
        execution.run_execute(run_id=run_id, claim=claim())
        return Run.objects.get(pk=run_id)
    sent: list[tuple[int, int, str]] = []

    def record(*, run_id: int, chunks: Any, input_hash: str) -> None:
        sent.extend((run_id, chunk, input_hash) for chunk in chunks)

    with mock.patch.object(sweep, "send_chunks", record):
        sweep.sweep_begin(run_id=run_id, claim=claim())  # what scenarios.sweep_start runs
        for run, chunk, input_hash in sent:
            sweep.chunk_execute(run_id=run, chunk=chunk, input_hash=input_hash, claim=claim())
    return Run.objects.get(pk=run_id)
