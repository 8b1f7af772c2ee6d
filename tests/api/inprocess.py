"""Executing runs in the test process through the worker's own code path (``execution.run_execute``), so the
stored rows are exactly those a worker stores, without a broker or a worker process (tests that use these
take the ``no_broker`` fixture of ``tests/api/conftest.py``)."""

from __future__ import annotations

import uuid

from scenarios import execution, services
from scenarios.models import Plan, Result, Run


def claim() -> execution.Claim:
    return execution.Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def solve_plan(plan: Plan) -> Result:
    """Request a solve of ``plan`` and execute it here; the stored (or found) result."""
    run = services.run_request(plan=plan, user=None)
    outcome = execution.run_execute(run_id=run.pk, claim=claim())
    assert outcome.status == "succeeded" and outcome.result_id is not None, Run.objects.get(pk=run.pk).error
    return Result.objects.get(pk=outcome.result_id)
