"""Webhook endpoints and their deliveries.

* ``Endpoint``: a team's URL that receives the change feed (``scenarios.events``), with its filters (event
  kinds, thresholds on ``result.stored``, one plan), its batching, its signing secrets and its health.
  ``last_event_id`` and ``horizon_xid`` are its position in the feed (see ``integrations.dispatch``).
* ``Delivery``: one request's worth of events for one endpoint (one event, or a batch of up to
  ``batch_size``), retried until it is accepted or its retry window closes. ``DeliveryEvent`` links it to
  its events; (endpoint, event) is unique, so an event reaches an endpoint in at most one delivery.
* ``DeliveryAttempt``: the attempt log (time, HTTP status or error, latency, a response excerpt).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scenarios.models import Event, Team

DEFAULT_FAILURE_LIMIT = 10
MAX_FAILURE_LIMIT = 1000
MAX_BATCH_SIZE = 100
RESPONSE_EXCERPT_BYTES = 1024

DELIVERY_PENDING = "pending"
DELIVERY_DELIVERED = "delivered"
DELIVERY_FAILED = "failed"
DELIVERY_STATUS_CHOICES = [
    (DELIVERY_PENDING, "waiting for its next attempt (or being sent)"),
    (DELIVERY_DELIVERED, "the endpoint answered 2xx"),
    (DELIVERY_FAILED, "failed for good: its retry window closed"),
]


class Endpoint(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=500, blank=True, default="")
    # Kinds of scenarios.models.EVENT_KINDS; empty: every kind.
    event_kinds = models.JSONField(default=list, blank=True)
    # {figure: fraction} (scenarios.events.THRESHOLD_FIGURES): a ``result.stored`` event is delivered only
    # when one of these figures' |change_fraction| reaches its fraction. Empty: every result.
    thresholds = models.JSONField(default=dict, blank=True)
    # Only events about this plan (a plain id, like the events': the filter outlives a deleted plan).
    plan_id = models.BigIntegerField(null=True, blank=True)
    batch_size = models.PositiveSmallIntegerField(default=1)
    enabled = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=1000, blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0)
    failure_limit = models.PositiveIntegerField(default=DEFAULT_FAILURE_LIMIT)
    # whsec_<base64>: stored so that it can sign, never shown again after creation or rotation.
    secret = models.CharField(max_length=200)
    previous_secret = models.CharField(max_length=200, blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)
    # Position in the feed: every event with id <= last_event_id whose transaction had finished before
    # horizon_xid has been considered (integrations.dispatch.fan_out).
    last_event_id = models.BigIntegerField(default=0)
    horizon_xid = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]  # noqa: RUF012
        constraints = (
            models.CheckConstraint(
                condition=Q(batch_size__gte=1, batch_size__lte=MAX_BATCH_SIZE), name="endpoint_batch_size"
            ),
            models.CheckConstraint(
                condition=Q(failure_limit__gte=1, failure_limit__lte=MAX_FAILURE_LIMIT),
                name="endpoint_failure_limit",
            ),
        )
        indexes = (models.Index(fields=["team", "-id"], name="endpoint_team_recent"),)

    def __str__(self) -> str:
        return f"{self.team_id}: {self.url}"


class Delivery(models.Model):
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    # The webhook-id header: the event's public id (one event) or a stable id of the batch.
    webhook_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=DELIVERY_STATUS_CHOICES, default=DELIVERY_PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Retries stop at this time (the oldest event's time + the retry window; a manual redelivery moves it).
    expires_at = models.DateTimeField()
    # A claimed delivery (being sent): nobody else sends it until the lease ends.
    lease_until = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    last_error = models.CharField(max_length=1000, blank=True, default="")
    # A manual redelivery was asked for: the next attempt is logged as manual.
    redeliver_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)
    events = models.ManyToManyField(Event, through="DeliveryEvent", related_name="+")

    class Meta:
        ordering = ["-id"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(fields=["endpoint", "webhook_id"], name="delivery_endpoint_webhook_id"),
        )
        indexes = (
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status=DELIVERY_PENDING),
                name="delivery_pending_due",
            ),
            models.Index(fields=["endpoint", "-id"], name="delivery_endpoint_recent"),
        )

    def __str__(self) -> str:
        return f"{self.webhook_id} -> endpoint {self.endpoint_id} ({self.status})"


class DeliveryEvent(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="links")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="+")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "position"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(fields=["endpoint", "event"], name="delivery_event_once_per_endpoint"),
        )

    def __str__(self) -> str:
        return f"event {self.event_id} in delivery {self.delivery_id}"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=1000, blank=True, default="")
    latency_ms = models.FloatField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=RESPONSE_EXCERPT_BYTES * 4, blank=True, default="")
    manual = models.BooleanField(default=False)
    succeeded = models.BooleanField(default=False)

    class Meta:
        ordering = ["delivery", "number"]  # noqa: RUF012

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"
