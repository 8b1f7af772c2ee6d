"""Claims: which delivery holds a run (or a sweep chunk), taken and given back with conditional UPDATEs.

A delivery that changes no row stops. The attempt count lives in Postgres, so a run whose worker dies on
every attempt ends ``failed`` with the reason after ``max_attempts``, however often the broker redelivers
it."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import F, Q, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from scenarios import conf
from scenarios.models import (
    DEFAULT_MAX_ATTEMPTS,
    STATUS_FAILED,
    STATUS_QUEUED,
    STATUS_RUNNING,
    PriceFanOut,
    Run,
)
from scenarios.queue import TRANSIENT_RETRIES

log = logging.getLogger(__name__)


CLAIMED = "claimed"
RESUMED = "resumed"
CAPPED = "capped"
BUSY = "busy"


@dataclass(frozen=True)
class Claim:
    """Who holds a run: the Celery task id and its retry count (see ``Run.claim_task_id``)."""

    task_id: str
    retries: int
    worker: str = ""


_TAKEABLE_SQL = (
    "(status = 'queued'"
    " OR (status = 'running' AND lease_expires_at < %(now)s)"
    " OR (status = 'running' AND claim_task_id = %(task_id)s AND claim_retries = %(retries)s))"
)
# A row this task holds under another retry count is its own retry after a database or broker error: it is
# resumed (step 3), never taken as a new attempt or capped, even when its lease ran out during the retry's wait.
_NOT_OUR_RETRY_SQL = (
    "NOT (status = 'running' AND claim_task_id = %(task_id)s AND claim_retries <> %(retries)s)"
)
_GAVE_UP_SQL = (
    "'gave up after ' || attempts || ' attempts: the worker running this run was lost each time "
    "(killed, out of memory, or over the hard time limit) before it finished'"
)


def claim_rows(
    *, table: str, ids: Sequence[int], claim: Claim, gave_up: str, now: dt.datetime | None = None
) -> dict[int, str]:
    """Try to take each row of ``table`` (runs, sweep chunks: the same claim columns) for this delivery,
    with three conditional UPDATEs over the whole set:

    1. takeable and out of attempts -> failed with the reason ``gave_up`` (SQL) (CAPPED);
    2. takeable (queued, lease expired, or running under this very delivery: the broker redelivered it
       because its worker died, which was an attempt) -> running, attempts + 1 (CLAIMED);
    3. running under this task with another retry count (our own retry after a database or broker
       error, whether or not its lease ran out while it waited) -> keep going without counting an attempt
       (RESUMED); steps 1 and 2 leave such a row alone.
    Rows in none of these (done, or held by a live delivery) are BUSY: this delivery must not touch them.
    The order matters: a row claimed in step 2 is not capped by step 1 in the same call."""
    now = now or timezone.now()
    params: dict[str, Any] = {
        "ids": list(ids),
        "now": now,
        "lease": now + dt.timedelta(seconds=conf.run_lease_s()),
        "task_id": claim.task_id,
        "retries": claim.retries,
        "worker": claim.worker[:255],
    }
    states = dict.fromkeys(ids, BUSY)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = 'failed', finished_at = %(now)s, lease_expires_at = NULL, "
            f"error = {gave_up} "
            f"WHERE id = ANY(%(ids)s) AND attempts >= max_attempts AND {_TAKEABLE_SQL} "
            f"AND {_NOT_OUR_RETRY_SQL} RETURNING id",
            params,
        )
        states.update({row[0]: CAPPED for row in cursor.fetchall()})
        cursor.execute(
            f"UPDATE {table} SET status = 'running', attempts = attempts + 1, started_at = %(now)s, "
            "lease_expires_at = %(lease)s, claim_task_id = %(task_id)s, claim_retries = %(retries)s, "
            f"worker = %(worker)s WHERE id = ANY(%(ids)s) AND attempts < max_attempts AND {_TAKEABLE_SQL} "
            f"AND {_NOT_OUR_RETRY_SQL} RETURNING id",
            params,
        )
        states.update({row[0]: CLAIMED for row in cursor.fetchall()})
        cursor.execute(
            f"UPDATE {table} SET claim_retries = %(retries)s, lease_expires_at = %(lease)s, "
            "worker = %(worker)s WHERE id = ANY(%(ids)s) AND status = 'running' "
            "AND claim_task_id = %(task_id)s AND claim_retries <> %(retries)s RETURNING id",
            params,
        )
        states.update({row[0]: RESUMED for row in cursor.fetchall()})
    return states


def runs_claim(*, run_ids: Sequence[int], claim: Claim, now: dt.datetime | None = None) -> dict[int, str]:
    """``claim_rows`` for runs: CLAIMED/RESUMED (go on), CAPPED (just failed, with the reason) or BUSY."""
    return claim_rows(table="scenarios_run", ids=run_ids, claim=claim, gave_up=_GAVE_UP_SQL, now=now)


def run_claim(*, run_id: int, claim: Claim, now: dt.datetime | None = None) -> str:
    """``runs_claim`` for one run: CLAIMED/RESUMED (go on), CAPPED (just failed) or BUSY (stop)."""
    return runs_claim(run_ids=[run_id], claim=claim, now=now)[run_id]


def gave_up_error() -> Any:
    """'gave up after N attempts: ...' built in SQL, so the message carries the stored attempt count."""
    from django.db.models import CharField
    from django.db.models.functions import Cast, Concat

    return Concat(
        Value("gave up after "),
        Cast(F("attempts"), output_field=CharField()),
        Value(
            " attempts: the worker running this run was lost each time (killed, out of memory, or over the "
            "hard time limit) before it finished"
        ),
        output_field=CharField(),
    )


def _holding(run_id: int, claim: Claim) -> Q:
    return Q(pk=run_id, status=STATUS_RUNNING, claim_task_id=claim.task_id)


def run_fail(*, run_id: int, claim: Claim, error: str) -> bool:
    """Mark a run this delivery holds as failed (bad input, time limit). False if it no longer holds it."""
    return (
        Run.objects.filter(_holding(run_id, claim)).update(
            status=STATUS_FAILED, finished_at=timezone.now(), lease_expires_at=None, error=error[:10_000]
        )
        == 1
    )


def runs_renew_lease(*, run_ids: Sequence[int], claim: Claim) -> int:
    """Extend the lease of the runs this delivery still holds; returns how many it holds."""
    lease = timezone.now() + dt.timedelta(seconds=conf.run_lease_s())
    return Run.objects.filter(
        pk__in=list(run_ids), status=STATUS_RUNNING, claim_task_id=claim.task_id
    ).update(lease_expires_at=lease)


def runs_release(*, run_ids: Sequence[int], claim: Claim) -> list[int]:
    """Put the runs this delivery holds back to queued (their attempt stays counted); returns their ids."""
    held = list(
        Run.objects.filter(
            pk__in=list(run_ids), status=STATUS_RUNNING, claim_task_id=claim.task_id
        ).values_list("pk", flat=True)
    )
    Run.objects.filter(pk__in=held, status=STATUS_RUNNING, claim_task_id=claim.task_id).update(
        status=STATUS_QUEUED, enqueued_at=timezone.now(), lease_expires_at=None, claim_task_id="", worker=""
    )
    return held


def run_progress(*, run_id: int, claim: Claim, points_done: int, points_total: int | None = None) -> bool:
    """Record progress of a search or sweep and extend its lease (a long run is not taken for lost). Progress
    never goes back: a run taken up again after its worker was lost counts its points from 0 while the row
    still holds the lost attempt's count, which a client polling the run keeps seeing until it is passed."""
    values: dict[str, Any] = {
        "points_done": Greatest(F("points_done"), Value(points_done)),
        "lease_expires_at": timezone.now() + dt.timedelta(seconds=conf.run_lease_s()),
    }
    if points_total is not None:
        values["points_total"] = points_total
    return Run.objects.filter(_holding(run_id, claim)).update(**values) == 1


# Deliveries of one fan-out whose worker may be lost (killed, out of memory, over the hard time limit) before
# it is given up: as a run's ``max_attempts``. A delivery that fails with an error gives its lease back and is
# not counted (the task's own retries after a database or broker error are not losses).
FAN_OUT_MAX_LOST = DEFAULT_MAX_ATTEMPTS
# Attempts failed with an error the task retries before the fan-out is given up: every retry of
# ``FAN_OUT_MAX_LOST`` messages (a database error that repeats, a statement timeout, not an outage of minutes).
FAN_OUT_MAX_FAILED = FAN_OUT_MAX_LOST * (TRANSIENT_RETRIES + 1)


def fan_outs_give_up(*, now: dt.datetime, price_book_id: int | None = None, holder: str = "") -> int:
    """Give up the fan-outs whose worker was lost ``FAN_OUT_MAX_LOST`` times: each lost delivery left its lease
    to expire, and one more would be taken by a new delivery that dies the same way. Marked done with the
    reason (``error``); the plans it owed re-runs are left to the nightly re-check (``auto_rerun`` plans) or a
    user's run. Returns how many were given up."""
    rows = PriceFanOut.objects.filter(
        done_at__isnull=True, lease_expires_at__lt=now, lost_deliveries__gte=FAN_OUT_MAX_LOST - 1
    )
    if price_book_id is not None:
        rows = rows.filter(pk=price_book_id)
    if holder:
        rows = rows.exclude(holder=holder)  # its own lease, which the task's retry takes again: not a loss
    given_up = rows.update(
        done_at=now,
        lease_expires_at=None,
        lost_deliveries=F("lost_deliveries") + 1,
        error=f"gave up after {FAN_OUT_MAX_LOST} deliveries whose worker was lost (killed, out of memory, or "
        "over the time limit) before the re-runs were created",
    )
    failing = PriceFanOut.objects.filter(done_at__isnull=True, failed_attempts__gte=FAN_OUT_MAX_FAILED)
    if price_book_id is not None:
        failing = failing.filter(pk=price_book_id)
    given_up += failing.update(
        done_at=now,
        lease_expires_at=None,
        error=f"gave up after {FAN_OUT_MAX_FAILED} attempts failed with a database or broker error",
    )
    if given_up:
        log.error("gave up %s price fan-out(s) that kept failing", given_up)
    return given_up
