"""The sweeper (beat, every 30 s): queued runs whose message went out long ago (or never: the broker was
down) are sent again; running runs whose lease expired are put back to queued (or failed at the attempt cap)
and sent again; price fan-outs that have not created their runs yet are sent again."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scenarios import conf, queue
from scenarios.models import (
    STATUS_FAILED,
    STATUS_QUEUED,
    STATUS_RUNNING,
    PriceFanOut,
    Run,
)
from scenarios.runs import execute
from scenarios.runs.claims import fan_outs_give_up, gave_up_error

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepReport:
    resent: int
    expired: int
    failed: int
    fan_outs: int = 0


def _fan_outs_due(*, now: dt.datetime, stale: dt.datetime, limit: int) -> list[int]:
    """Price fan-outs not done whose message is unsent or old, and that no delivery holds: marked as sent
    now (in the caller's transaction) and returned, so the caller sends them after commit. Those whose worker
    was lost too often are given up first (``claims.fan_outs_give_up``), not sent again."""
    fan_outs_give_up(now=now)
    due = list(
        PriceFanOut.objects.select_for_update(skip_locked=True)
        .filter(Q(enqueued_at__lt=stale) | Q(enqueued_at__isnull=True), done_at__isnull=True)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    PriceFanOut.objects.filter(pk__in=due).update(enqueued_at=now)
    return due


def runs_sweep(*, now: dt.datetime | None = None, send: bool = True) -> SweepReport:
    """Re-send queued runs whose message went out ``sweep_queued_after_s`` ago (or never: the broker was
    down), recover running runs whose lease expired, and re-send price fan-outs that have not created their
    runs yet. Rows are picked with FOR UPDATE SKIP LOCKED, so two sweepers split the work. With the broker
    still down the rows are marked unsent again and the next tick tries once more."""
    now = now or timezone.now()
    limit = conf.sweep_batch_limit()
    stale = now - dt.timedelta(seconds=conf.sweep_queued_after_s())
    with transaction.atomic():
        lost = list(
            Run.objects.select_for_update(skip_locked=True)
            .filter(Q(enqueued_at__lt=stale) | Q(enqueued_at__isnull=True), status=STATUS_QUEUED)
            .order_by("queued_at")
            .values_list("pk", flat=True)[:limit]
        )
        Run.objects.filter(pk__in=lost).update(enqueued_at=now)
        expired_rows = list(
            Run.objects.select_for_update(skip_locked=True)
            .filter(status=STATUS_RUNNING, lease_expires_at__lt=now)
            .order_by("lease_expires_at")
            .values_list("pk", "attempts", "max_attempts")[:limit]
        )
        capped = [pk for pk, attempts, cap in expired_rows if attempts >= cap]
        retry = [pk for pk, attempts, cap in expired_rows if attempts < cap]
        if capped:
            Run.objects.filter(pk__in=capped, status=STATUS_RUNNING).update(
                status=STATUS_FAILED, finished_at=now, lease_expires_at=None, error=gave_up_error()
            )
        if retry:
            Run.objects.filter(pk__in=retry, status=STATUS_RUNNING).update(
                status=STATUS_QUEUED, enqueued_at=now, lease_expires_at=None, claim_task_id="", worker=""
            )
        fan_outs = _fan_outs_due(now=now, stale=stale, limit=limit)
        to_send = [*lost, *retry]
        if send and to_send:
            execute.enqueue_runs_on_commit(run_ids=to_send)
        if send and fan_outs:
            queue.on_commit(
                lambda: queue.send_many((queue.FAN_OUT_PRICES, [book_id]) for book_id in fan_outs),
                on_broker_down=lambda: PriceFanOut.objects.filter(
                    pk__in=fan_outs, done_at__isnull=True
                ).update(enqueued_at=None),
            )
    if lost or expired_rows or fan_outs:
        log.info(
            "sweeper: resent %d queued, %d expired (%d failed at the attempt cap), %d price fan-outs",
            len(lost),
            len(retry),
            len(capped),
            len(fan_outs),
        )
    return SweepReport(resent=len(lost), expired=len(retry), failed=len(capped), fan_outs=len(fan_outs))
