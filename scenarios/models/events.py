"""Events: an append-only log of what happened (results stored, figures moved, books published, ...)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from scenarios.models.plans import ImmutableModel, Team

# --- Events -------------------------------------------------------------------------------------------

EVENT_RESULT_STORED = "result.stored"
EVENT_FIGURE_MOVED = "figure.moved"
EVENT_RUN_FAILED = "run.failed"
EVENT_JOB_FINISHED = "job.finished"
EVENT_PRICE_BOOK_PUBLISHED = "price_book.published"
EVENT_SOLVER_CHANGED = "solver.changed"
EVENT_PRICE_FEED_FAILED = "price_feed.failed"
EVENT_WEBHOOK_DISABLED = "webhook.disabled"
EVENT_KIND_CHOICES = [
    (EVENT_RESULT_STORED, "a result was stored (with its headline deltas)"),
    (EVENT_FIGURE_MOVED, "a headline figure moved past a team threshold"),
    (EVENT_RUN_FAILED, "a run failed"),
    (EVENT_JOB_FINISHED, "a search or sweep finished"),
    (EVENT_PRICE_BOOK_PUBLISHED, "a price book was published (entries changed, plans to re-run)"),
    (EVENT_SOLVER_CHANGED, "a new solver version stored its first result for the team"),
    (EVENT_PRICE_FEED_FAILED, "a price feed could not be read or was refused"),
    (EVENT_WEBHOOK_DISABLED, "a webhook endpoint was disabled after consecutive failures"),
]
EVENT_KINDS = tuple(kind for kind, _ in EVENT_KIND_CHOICES)


class ClockTimestamp(models.Func):
    """PostgreSQL's ``clock_timestamp()``: the time the statement reaches the row, not the transaction's start."""

    template = "clock_timestamp()"
    output_field = models.DateTimeField()


class Event(ImmutableModel):
    """Something a team may want to hear about, written in the same transaction as its cause (an outbox):
    a committed cause always has its event and a rolled-back one never does. ``uid`` is the stable public
    id (``evt_<hex>``) a receiver deduplicates by; ``id`` orders the feed. ``team`` null: a global event
    (the global price book), visible to every team. ``dedupe_key`` makes an event that two paths could
    raise (a retried store, a second fan-out) exist once."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=40, choices=EVENT_KIND_CHOICES)
    # Plain ids, not foreign keys: an event outlives what it speaks of and is never updated.
    plan_id = models.BigIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)
    result_id = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField(default=dict)
    dedupe_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    # The database's clock when the row is written (not the transaction's start, not an app server's clock):
    # the feed's tail shows an event only once no transaction still open could hold a lower id (api.views.events).
    created_at = models.DateTimeField(db_default=ClockTimestamp())

    class Meta:
        ordering = ["-id"]  # noqa: RUF012
        constraints = (models.CheckConstraint(condition=Q(kind__in=EVENT_KINDS), name="event_kind_valid"),)
        indexes = (
            models.Index(fields=["team", "-id"], name="event_team_recent"),
            models.Index(fields=["team", "kind", "-id"], name="event_team_kind_recent"),
            models.Index(fields=["plan_id", "-id"], name="event_plan_recent"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.public_id}"

    @property
    def public_id(self) -> str:
        return f"evt_{self.uid.hex}"
