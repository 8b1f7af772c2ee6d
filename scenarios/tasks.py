"""Every Celery task of the scenarios wing: ids in, one call out (``scenarios.runs``, ``scenarios.fanout``,
``scenarios.jobs``, ``scenarios.feeds``). Messages are sent by name (``scenarios.queue``), so nothing below
this module imports it.

Late acks and reject-on-worker-lost (planner.celery) make the broker redeliver a message whose worker died;
the claim in Postgres decides whether a delivery may run. Database and broker errors retry with exponential
backoff; the soft time limit fails the run with the reason; the hard limit kills the child, which counts as
a lost attempt.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from scenarios import execution, fanout, feeds, queue
from scenarios.jobs import sweep
from scenarios.models import STATUS_FAILED
from scenarios.runs import execute

log = logging.getLogger(__name__)

TRANSIENT_ERRORS = queue.TRANSIENT_ERRORS  # one table: the fan-out gives its lease back on these
RETRY_OPTIONS: dict[str, Any] = {
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 1,
    # A retry waits at most half a run's lease, so the lease it renewed last (a third of a lease before at
    # most) still holds when it comes back: the sweeper does not take the run for lost while it waits.
    "retry_backoff_max": max(1, int(settings.RUN_LEASE_S) // 2),
    "retry_jitter": True,
    # Transient errors are retried for about ten minutes (60 waits of at most ten seconds at the default
    # lease); attempts lost to dead workers are capped in the database (Run.max_attempts), not here.
    "max_retries": queue.TRANSIENT_RETRIES,
}


def _claim(task: Any) -> execution.Claim:
    request = task.request
    return execution.Claim(
        task_id=str(request.id or ""),
        retries=int(request.retries or 0),
        worker=str(request.hostname or socket.gethostname()),
    )


def _time_limit_error() -> str:
    return (
        f"the solve exceeded its time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s soft, "
        f"{settings.CELERY_TASK_TIME_LIMIT} s hard)"
    )


@shared_task(name="scenarios.execute_run", bind=True, **RETRY_OPTIONS)
def execute_run(self: Any, run_id: int) -> str:
    """Claim, solve and store one run."""
    claim = _claim(self)
    try:
        outcome = execution.run_execute(run_id=run_id, claim=claim)
    except SoftTimeLimitExceeded:
        execution.run_fail(run_id=run_id, claim=claim, error=_time_limit_error())
        return "failed"
    return outcome.status


@shared_task(name="scenarios.execute_runs", bind=True, **RETRY_OPTIONS)
def execute_runs(self: Any, run_ids: list[int]) -> dict[str, int]:
    """Claim, solve and store a chunk of runs (price fan-out, nightly, sweeper) with a handful of queries
    per chunk; each run is claimed on its own, so a repeated chunk skips the runs already done."""
    claim = _claim(self)
    try:
        outcomes = execution.runs_execute(run_ids=run_ids, claim=claim)
    except SoftTimeLimitExceeded:
        # Nothing of the chunk was stored (one transaction). Its runs go back to the queue one per message,
        # each with a time budget of its own; a run that exceeds that alone fails with the reason.
        released = execution.runs_release(run_ids=run_ids, claim=claim)
        execute.enqueue_runs(run_ids=released, chunk_size=1)
        return {"released": len(released)}
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return counts


@shared_task(name="scenarios.sweep_runs", **RETRY_OPTIONS)
def sweep_runs() -> dict[str, int]:
    """Beat: re-send queued runs and price fan-outs Redis may have lost (or that were never sent because the
    broker was down) and recover runs whose lease expired."""
    report = execution.runs_sweep()
    return {
        "resent": report.resent,
        "expired": report.expired,
        "failed": report.failed,
        "fan_outs": report.fan_outs,
    }


@shared_task(name="scenarios.fan_out_prices", bind=True, **RETRY_OPTIONS)
def fan_out_prices(self: Any, price_book_id: int) -> dict[str, Any]:
    """After a price book is published (or the sweeper re-sent its pending ``PriceFanOut``): re-run the
    plans whose resolved prices changed. The task id holds the fan-out across the task's own retries."""
    outcome = fanout.price_book_fan_out(
        price_book_id=price_book_id, delivery=True, holder=str(self.request.id or "")
    )
    return {"plans_changed": outcome.plans_changed, "runs_created": outcome.runs_created}


@shared_task(name="scenarios.nightly_recheck", **RETRY_OPTIONS)
def nightly_recheck() -> dict[str, Any]:
    """Beat (nightly): re-run auto-rerun plans whose inputs have no stored result."""
    outcome = fanout.plans_recheck()
    return {"plans_checked": outcome.plans_checked, "runs_created": outcome.runs_created}


@shared_task(name="scenarios.poll_price_feed", **RETRY_OPTIONS)
def poll_price_feed(feed_id: int, force: bool = False) -> dict[str, Any]:
    """Beat (each feed's own schedule) or a poll asked for now: read the feed's source and publish its
    prices when they changed (``scenarios.feeds.poll``). A failed read or refused content is recorded on
    the feed and raises ``price_feed.failed``; it is not retried (the next scheduled poll reads again)."""
    outcome = feeds.poll(feed_id=feed_id, force=force)
    return {"status": outcome.status, "book": outcome.book_id, "errors": list(outcome.errors)}


@shared_task(name="scenarios.sweep_start", bind=True, **RETRY_OPTIONS)
def sweep_start(self: Any, run_id: int) -> str:
    """Claim a sweep, freeze its inputs and send one message per chunk of its points."""
    claim = _claim(self)
    try:
        return sweep.sweep_begin(run_id=run_id, claim=claim)
    except SoftTimeLimitExceeded:
        execution.run_fail(run_id=run_id, claim=claim, error=_time_limit_error())
        return STATUS_FAILED


@shared_task(name="scenarios.sweep_chunk", bind=True, **RETRY_OPTIONS)
def sweep_chunk(self: Any, run_id: int, chunk: int, input_hash: str) -> str:
    """Solve one chunk of a sweep's points; the chunk that completes the sweep stores its result."""
    try:
        return sweep.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=_claim(self))
    except SoftTimeLimitExceeded:
        sweep.fail_running(run_id=run_id, error=f"points chunk {chunk} timed out: {_time_limit_error()}")
        return STATUS_FAILED
