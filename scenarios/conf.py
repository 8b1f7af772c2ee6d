"""Tunables of run execution, read at call time: a Django setting of the same name wins, then the
environment variable, then the default (so tests and worker subprocesses can shorten them)."""

from __future__ import annotations

import os

from django.conf import settings


def _int(name: str, default: int) -> int:
    value = getattr(settings, name, None)
    if value is None:
        raw = os.environ.get(name, "")
        value = int(raw) if raw.strip() else default
    return int(value)


def run_lease_s() -> int:
    """How long a claimed run stays claimed before the sweeper may hand it to another worker. It outlives
    the hard time limit, so a live worker never loses a run it is still allowed to solve."""
    return _int("RUN_LEASE_S", int(getattr(settings, "SOLVE_TIME_LIMIT_S", 300)) + 60)


def sweep_queued_after_s() -> int:
    """A queued run whose message was sent this long ago without a worker claiming it is sent again
    (Redis keeps nothing on disk; a restart loses every queued message)."""
    return _int("SWEEP_QUEUED_AFTER_S", 60)


def run_chunk_size() -> int:
    """Runs per Celery message when many are enqueued at once (price fan-out, sweeper, nightly)."""
    return _int("RUN_CHUNK_SIZE", 50)


def sweep_batch_limit() -> int:
    return _int("SWEEP_BATCH_LIMIT", 5000)
