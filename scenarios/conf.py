"""Tunables of run execution, read from Django settings at call time (``planner.settings`` reads them from
the environment), so tests can shorten them with the ``settings`` fixture and worker subprocesses with env."""

from __future__ import annotations

from django.conf import settings


def run_lease_s() -> int:
    """How long a claimed run stays claimed without a renewal. The worker renews it every third of this
    while the run executes (``scenarios.runs.lease``), so a live worker keeps its runs however long they
    take, and the sweeper takes a dead worker's runs back within a lease plus one sweeper period."""
    return max(3, int(settings.RUN_LEASE_S))


def sweep_queued_after_s() -> int:
    """A queued run or price fan-out whose message was sent this long ago without a worker claiming it is
    sent again (Redis keeps nothing on disk; a restart loses every queued message)."""
    return int(settings.SWEEP_QUEUED_AFTER_S)


def run_chunk_size() -> int:
    """Runs per Celery message when many are enqueued at once (price fan-out, sweeper, nightly)."""
    return max(1, int(settings.RUN_CHUNK_SIZE))


def sweep_batch_limit() -> int:
    return int(settings.SWEEP_BATCH_LIMIT)
