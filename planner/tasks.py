from __future__ import annotations

from celery import shared_task

from planner.models import TaskProbe


@shared_task(name="planner.probe", bind=True)
def probe(self: object, token: str) -> None:
    """Record ``token`` in Postgres. Idempotent: a redelivered message finds the row already there."""
    hostname = getattr(getattr(self, "request", None), "hostname", None) or "unknown"
    TaskProbe.objects.get_or_create(token=token, defaults={"worker": hostname})
