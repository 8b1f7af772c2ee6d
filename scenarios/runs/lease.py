"""Leases kept alive while work executes: short leases (``RUN_LEASE_S``, 20 s) renewed by the executing
worker, so a dead worker's runs are back in the queue within a lease plus one sweeper period."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.utils import timezone

from scenarios import conf
from scenarios.models import (
    STATUS_RUNNING,
    Run,
)
from scenarios.runs.claims import Claim, runs_renew_lease

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews a lease from a daemon thread every third of ``RUN_LEASE_S`` while the work it guards executes
    (``with LeaseKeeper(renew): ...``), so leases can be short: a live worker keeps its runs however long a
    solve takes, and a dead worker's runs expire within one lease and are taken back by the sweeper.

    ``renew`` runs in the thread, on the thread's own database connection (closed when the keeper stops);
    a failed renewal (database briefly unreachable) is logged and tried again on the next period."""

    def __init__(self, renew: Callable[[], Any], *, period_s: float | None = None) -> None:
        self.renew = renew
        self.period_s = period_s if period_s is not None else conf.run_lease_s() / 3
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0

    def _loop(self) -> None:
        from django.db import DatabaseError
        from django.db import connection as thread_connection

        try:
            while not self._stop.wait(self.period_s):
                try:
                    self.renew()
                    self.renewals += 1
                except DatabaseError as exc:
                    log.warning("lease renewal failed, trying again in %.1f s: %s", self.period_s, exc)
        finally:
            thread_connection.close()

    def __enter__(self) -> LeaseKeeper:
        self._thread = threading.Thread(target=self._loop, name="lease-keeper", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def keep_runs_leased(*, run_ids: Sequence[int], claim: Claim) -> LeaseKeeper:
    """A ``LeaseKeeper`` for the runs this delivery holds."""
    ids = list(run_ids)
    return LeaseKeeper(lambda: runs_renew_lease(run_ids=ids, claim=claim))


def keep_run_leased(*, run_id: int) -> LeaseKeeper:
    """A ``LeaseKeeper`` for a running run whatever delivery claimed it (a sweep's chunks run under other
    task ids than the sweep's claim)."""
    return LeaseKeeper(
        lambda: Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(
            lease_expires_at=timezone.now() + dt.timedelta(seconds=conf.run_lease_s())
        )
    )
