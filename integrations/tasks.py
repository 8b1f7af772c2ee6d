"""Celery tasks of the webhooks: ``integrations.dispatch`` (nudged after every recorded event and on a beat
schedule) fans new events out into delivery rows and hands each due delivery to ``integrations.deliver``,
which sends one request and records it. Retries are ``next_attempt_at`` in the database, never long Celery
countdowns (Redis redelivers a message whose countdown outlives its visibility timeout)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from integrations import dispatch as dispatching
from scenarios.events import DISPATCH_TASK
from scenarios.tasks import RETRY_OPTIONS

DELIVER_TASK = "integrations.deliver"


@shared_task(name=DISPATCH_TASK, **RETRY_OPTIONS)
def dispatch() -> dict[str, Any]:
    """Fan out new events, fail deliveries whose retry window closed, claim due ones and send each in a
    task of its own (a claim is a lease: a lost message is claimed again once it ends)."""
    created = dispatching.fan_out()
    expired = dispatching.expire()
    claimed = dispatching.claim_due()
    for delivery_id, token in claimed:
        deliver.delay(delivery_id, str(token))
    if len(claimed) >= dispatching.CLAIM_LIMIT:
        # More may be due: the next pass queues behind the deliveries just sent, so a backlog drains at the
        # workers' pace instead of one claim's worth per beat.
        dispatch.delay()
    return {"created": created, "expired": expired, "claimed": len(claimed)}


@shared_task(name=DELIVER_TASK, **RETRY_OPTIONS)
def deliver(delivery_id: int, token: str) -> dict[str, Any]:
    """Send one claimed delivery and record the attempt."""
    outcome = dispatching.attempt(delivery_id, token)
    return {"sent": outcome.sent, "delivered": outcome.delivered, "status": outcome.status_code}
