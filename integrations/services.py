"""Managing webhook endpoints: create (the secret is returned once), change, rotate the secret, enable,
redeliver. Bad input raises Django's ``ValidationError`` naming the field (the API turns it into a 400)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from integrations import dispatch
from integrations.models import (
    DEFAULT_FAILURE_LIMIT,
    DELIVERY_PENDING,
    MAX_BATCH_SIZE,
    MAX_FAILURE_LIMIT,
    Delivery,
    Endpoint,
)
from scenarios import events as feed
from scenarios import outbound
from scenarios.models import EVENT_KINDS, Plan, Team

DEFAULT_ROTATION_OVERLAP = timedelta(hours=24)
MAX_ROTATION_OVERLAP = timedelta(days=7)
EDITABLE = ("url", "description", "event_kinds", "thresholds", "plan_id", "batch_size", "failure_limit")


class DeliveryConflict(Exception):
    """A redelivery that cannot start now (an attempt is in flight, or the endpoint is disabled)."""


def check_url(url: str) -> str:
    try:
        outbound.check_url(url)
    except outbound.OutboundRefused as exc:
        raise ValidationError({"url": [str(exc)]}) from None
    return url


def clean_event_kinds(raw: Any) -> list[str]:
    if not isinstance(raw, list | tuple):
        raise ValidationError({"event_kinds": ["must be a list of event kinds"]})
    out: list[str] = []
    for kind in raw:
        if kind not in EVENT_KINDS:
            raise ValidationError({"event_kinds": [f"{kind!r} is not one of {', '.join(EVENT_KINDS)}"]})
        if kind not in out:
            out.append(kind)
    return out


def clean_thresholds(raw: Any) -> dict[str, float]:
    try:
        return feed.validate_thresholds(raw)
    except ValueError as exc:
        raise ValidationError({"thresholds": [str(exc)]}) from None


def endpoint_fields_clean(team: Team, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The editable fields of an endpoint (``EDITABLE``) as stored, or ``ValidationError`` naming the field:
    the rules of the API, the admin and the services alike."""
    clean = dict(fields)
    if "url" in clean:
        clean["url"] = check_url(str(clean["url"]))
    if "event_kinds" in clean:
        clean["event_kinds"] = clean_event_kinds(clean["event_kinds"])
    if "thresholds" in clean:
        clean["thresholds"] = clean_thresholds(clean["thresholds"] or {})
    if clean.get("plan_id") is not None and not Plan.objects.filter(pk=clean["plan_id"], team=team).exists():
        raise ValidationError({"plan": ["no such plan in the endpoint's team"]})
    if "batch_size" in clean and not 1 <= int(clean["batch_size"]) <= MAX_BATCH_SIZE:
        raise ValidationError({"batch_size": [f"must be from 1 to {MAX_BATCH_SIZE}"]})
    if "failure_limit" in clean and not 1 <= int(clean["failure_limit"]) <= MAX_FAILURE_LIMIT:
        raise ValidationError({"failure_limit": [f"must be from 1 to {MAX_FAILURE_LIMIT}"]})
    unknown = set(clean) - set(EDITABLE)
    if unknown:
        raise ValidationError({name: ["cannot be set"] for name in sorted(unknown)})
    return clean


@dataclass(frozen=True)
class WithSecret:
    endpoint: Endpoint
    secret: str  # shown once


def endpoint_create(
    *,
    team: Team,
    user: Any,
    url: str,
    description: str = "",
    event_kinds: Sequence[str] = (),
    thresholds: Mapping[str, float] | None = None,
    plan_id: int | None = None,
    batch_size: int = 1,
    failure_limit: int = DEFAULT_FAILURE_LIMIT,
) -> WithSecret:
    """A new endpoint that receives the events recorded from now on (not the past feed)."""
    clean = endpoint_fields_clean(
        team,
        {
            "url": url,
            "description": description,
            "event_kinds": list(event_kinds),
            "thresholds": dict(thresholds or {}),
            "plan_id": plan_id,
            "batch_size": batch_size,
            "failure_limit": failure_limit,
        },
    )
    secret = dispatch.new_secret()
    with transaction.atomic():
        mark, horizon, clock = dispatch.feed_position()
        endpoint = Endpoint.objects.create(
            team=team,
            created_at=clock,
            created_by=user if getattr(user, "pk", None) else None,
            secret=secret,
            last_event_id=mark,
            horizon_xid=horizon,
            **clean,
        )
    return WithSecret(endpoint=endpoint, secret=secret)


def endpoint_update(*, endpoint: Endpoint, fields: Mapping[str, Any]) -> Endpoint:
    clean = endpoint_fields_clean(endpoint.team, fields)
    if not clean:
        return endpoint
    for name, value in clean.items():
        setattr(endpoint, name, value)
    endpoint.updated_at = timezone.now()
    endpoint.save(update_fields=[*clean, "updated_at"])
    return endpoint


def secret_rotate(
    *, endpoint: Endpoint, overlap: timedelta = DEFAULT_ROTATION_OVERLAP, now: datetime | None = None
) -> WithSecret:
    """A new secret (returned once); the old one keeps signing beside it for ``overlap``."""
    now = now or timezone.now()
    if not timedelta(0) <= overlap <= MAX_ROTATION_OVERLAP:
        raise ValidationError({"overlap_hours": ["must be from 0 to 168 hours"]})
    secret = dispatch.new_secret()
    with transaction.atomic():
        locked = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
        locked.previous_secret = locked.secret
        locked.previous_secret_expires_at = now + overlap
        locked.secret = secret
        locked.secret_rotated_at = now
        locked.updated_at = now
        locked.save(
            update_fields=[
                "previous_secret",
                "previous_secret_expires_at",
                "secret",
                "secret_rotated_at",
                "updated_at",
            ]
        )
    return WithSecret(endpoint=locked, secret=secret)


def endpoint_enable(*, endpoint: Endpoint, now: datetime | None = None) -> Endpoint:
    """Enable again and reset the failure count (its pending deliveries resume; events of the last 24 h
    recorded while it was disabled are delivered)."""
    now = now or timezone.now()
    with transaction.atomic():
        # a save, not a queryset update: the audit log records who enabled it
        locked = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
        locked.enabled, locked.consecutive_failures, locked.disabled_at = True, 0, None
        locked.disabled_reason, locked.updated_at = "", now
        locked.save(
            update_fields=["enabled", "consecutive_failures", "disabled_at", "disabled_reason", "updated_at"]
        )
    endpoint.refresh_from_db()
    transaction.on_commit(feed.nudge_dispatcher)
    return endpoint


def delivery_redeliver(*, delivery: Delivery, now: datetime | None = None) -> Delivery:
    """A new attempt of an existing delivery, with the same ``webhook-id``, as soon as a dispatcher runs.

    The retry window is kept when still open; otherwise this one attempt is made and nothing after it."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = Delivery.objects.select_for_update().select_related("endpoint").get(pk=delivery.pk)
        if not locked.endpoint.enabled:
            raise DeliveryConflict("the endpoint is disabled; enable it first")
        in_flight = (
            locked.status == DELIVERY_PENDING and locked.lease_until is not None and locked.lease_until > now
        )
        if in_flight:
            raise DeliveryConflict("an attempt of this delivery is in flight; try again when it is recorded")
        locked.status = DELIVERY_PENDING
        locked.next_attempt_at = now
        locked.redeliver_requested = True  # made even when the retry window is closed (expire skips it)
        locked.save(update_fields=["status", "next_attempt_at", "redeliver_requested"])
    transaction.on_commit(feed.nudge_dispatcher)
    return locked
