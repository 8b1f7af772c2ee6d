"""Delivering the change feed to webhook endpoints: fan-out, claims, signed requests, retries.

**Fan-out** (``fan_out``): for each enabled endpoint, the events of its team (and global ones) after its
high-water mark become delivery rows (one per event, or one per batch of up to ``batch_size``), and the mark
advances in the same transaction as the rows it creates: a crash before the commit leaves both as they
were, after it both moved, so an event is never skipped nor fanned out twice. Event ids come from a sequence
and a transaction may commit after a later one that took a higher id: the endpoint therefore also keeps the
transaction horizon of its last pass (``horizon_xid``: every transaction older than it had finished) and
each pass also looks at events at or below the mark that were written by a transaction not finished at that
horizon, skipping those that already reached the endpoint ((endpoint, event) is unique besides).

**Sending** (``claim_due`` + ``attempt``): due deliveries are claimed with ``SELECT ... FOR UPDATE SKIP
LOCKED`` and a lease (``lease_until``, ``claim_token``), so two dispatchers never send one delivery at the
same time; the attempt re-takes its lease with a conditional UPDATE and records its outcome only under the
same token. Retries are rows, not Celery countdowns: a failed attempt sets ``next_attempt_at`` with
exponential backoff and full jitter, until the retry window (24 h after the event) closes; then the delivery
has failed for good. Each request is signed as the Standard Webhooks specification says (``webhook-id``,
``webhook-timestamp``, ``webhook-signature``); a retried delivery carries the same ``webhook-id``.

**Health**: every failed attempt counts towards the endpoint's consecutive failures, a 2xx resets them;
at ``failure_limit`` the endpoint is disabled and a ``webhook.disabled`` event is recorded.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import secrets as secrets_module
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from standardwebhooks import Webhook

from integrations.models import (
    DELIVERY_DELIVERED,
    DELIVERY_FAILED,
    DELIVERY_PENDING,
    RESPONSE_EXCERPT_BYTES,
    Delivery,
    DeliveryAttempt,
    DeliveryEvent,
    Endpoint,
)
from scenarios import events as feed
from scenarios import outbound
from scenarios.models import EVENT_RESULT_STORED, EVENT_WEBHOOK_DISABLED, Event

log = logging.getLogger(__name__)

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
BATCH_ID_PREFIX = "msg_"
FAN_OUT_CHUNK = 500  # events read per endpoint per pass
CLAIM_LIMIT = 100  # deliveries claimed per dispatch
LATE_LOOKBACK = timedelta(hours=1)  # how far back a late-committed event is looked for
USER_AGENT = "Planner-Webhooks/1"


def url_origin(url: str) -> str:
    """The scheme and host of an endpoint's URL, the rest elided: what a team's viewers and its event feed are
    shown. Chat services' incoming-webhook URLs carry their credential in the path or the query, so only the
    team's admins (who manage the endpoint) read the whole URL.
    Example: "https://hooks.slack.com/services/T0/B0/XXXX" -> "https://hooks.slack.com/…"."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return "…"
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/…"


def retry_window() -> timedelta:
    return timedelta(seconds=float(settings.WEBHOOK_RETRY_WINDOW_S))


def backoff_base_s() -> float:
    return float(settings.WEBHOOK_BACKOFF_BASE_S)


def backoff_max_s() -> float:
    return float(settings.WEBHOOK_BACKOFF_MAX_S)


def timeout_s() -> float:
    return float(settings.WEBHOOK_TIMEOUT_S)


def lease() -> timedelta:
    return timedelta(seconds=timeout_s() + 60.0)


# --- secrets and signatures -----------------------------------------------------------------------------


def new_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets_module.token_bytes(SECRET_BYTES)).decode("ascii")


def signing_secrets(endpoint: Endpoint, now: datetime) -> list[str]:
    """The secrets that sign now: the current one, and the previous one during a rotation's overlap."""
    out = [endpoint.secret]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret and expires is not None and now < expires:
        out.append(endpoint.previous_secret)
    return out


def signature_headers(
    *, secrets: Sequence[str], msg_id: str, body: bytes, timestamp: datetime
) -> dict[str, str]:
    """The three Standard Webhooks headers; one ``v1,<base64>`` signature per secret, space-separated."""
    stamp = timestamp.astimezone(UTC)
    text = body.decode("utf-8")
    signature = " ".join(Webhook(secret).sign(msg_id, stamp, text) for secret in secrets)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": signature,
    }


# --- what an endpoint receives ----------------------------------------------------------------------------


def event_document(event: Event) -> dict[str, Any]:
    """One event as a receiver sees it (the same bytes on every attempt: events are immutable)."""
    return {
        "id": event.public_id,
        "type": event.kind,
        "timestamp": event.created_at.astimezone(UTC).isoformat(),
        "team": event.team_id,
        "plan": event.plan_id,
        "run": event.run_id,
        "result": event.result_id,
        "data": event.payload,
    }


def request_body(events: Sequence[Event], *, batch: bool) -> bytes:
    document: Any = {"events": [event_document(e) for e in events]} if batch else event_document(events[0])
    return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8")


def _fraction(deltas: Mapping[str, Any], figure: str) -> float | None:
    moved = deltas.get(figure)
    value = moved.get("change_fraction") if isinstance(moved, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def matches(endpoint: Endpoint, event: Event) -> bool:
    """Whether the endpoint's filters let the event through: kinds (empty = all), plan, and for
    ``result.stored`` the thresholds (some listed figure's |change_fraction| reaches its threshold)."""
    if endpoint.event_kinds and event.kind not in endpoint.event_kinds:
        return False
    if endpoint.plan_id is not None and event.plan_id != endpoint.plan_id:
        return False
    if event.kind == EVENT_RESULT_STORED and endpoint.thresholds:
        payload = event.payload if isinstance(event.payload, Mapping) else {}
        deltas = payload.get("deltas")
        if not isinstance(deltas, Mapping):
            return False
        for figure, threshold in endpoint.thresholds.items():
            fraction = _fraction(deltas, figure)
            limit = _number(threshold)  # stored unchecked before the admin held to the API's rule
            if fraction is not None and limit is not None and abs(fraction) >= limit:
                return True
        return False
    return True


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


# --- fan-out ----------------------------------------------------------------------------------------------

_CANDIDATES_SQL = """
WITH snap AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon,
           pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax
),
fresh AS (
    SELECT e.id FROM {event} e
    WHERE (e.team_id = %(team)s OR e.team_id IS NULL) AND e.id > %(mark)s
    ORDER BY e.id
    LIMIT %(limit)s
),
late AS (
    SELECT e.id FROM {event} e, snap
    WHERE (e.team_id = %(team)s OR e.team_id IS NULL)
      AND e.id <= %(mark)s
      AND e.created_at > %(lookback)s
      -- an endpoint receives the events recorded since it was made (its first horizon may be older)
      AND e.created_at >= %(since)s
      -- the writing transaction's full id (xmin is its low 32 bits) was not finished at the last horizon
      AND snap.xmax - ((snap.xmax - e.xmin::text::bigint) & 4294967295) >= %(horizon)s
      AND NOT EXISTS (
          SELECT 1 FROM {link} d WHERE d.endpoint_id = %(endpoint)s AND d.event_id = e.id
      )
)
SELECT snap.horizon, 'fresh', fresh.id FROM snap LEFT JOIN fresh ON true
UNION ALL
SELECT snap.horizon, 'late', late.id FROM snap JOIN late ON true
"""


def feed_position() -> tuple[int, int, datetime]:
    """(the newest event id, the transaction horizon, the database's clock) now: where a new endpoint starts
    reading. The clock is the one events are stamped with (``created_at``), which the late-event check
    compares with the endpoint's creation, so the web host's clock has no say."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COALESCE(MAX(id), 0), pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
            f"clock_timestamp() FROM {Event._meta.db_table}"
        )
        mark, horizon, clock = cursor.fetchone()
    return int(mark), int(horizon), clock


@dataclass(frozen=True)
class FanOutPass:
    deliveries: int
    more: bool


def _candidates(endpoint: Endpoint) -> tuple[list[int], int | None, bool, int]:
    """(candidate event ids, the highest fresh id, whether the fresh part was cut, the current horizon)."""
    sql = _CANDIDATES_SQL.format(event=Event._meta.db_table, link=DeliveryEvent._meta.db_table)
    params: dict[str, Any] = {
        "team": endpoint.team_id,
        "mark": endpoint.last_event_id,
        "limit": FAN_OUT_CHUNK,
        "lookback": timezone.now() - LATE_LOOKBACK,
        "since": endpoint.created_at,
        "horizon": endpoint.horizon_xid,
        "endpoint": endpoint.pk,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    horizon = int(rows[0][0])
    fresh = [int(r[2]) for r in rows if r[1] == "fresh" and r[2] is not None]
    late = [int(r[2]) for r in rows if r[1] == "late" and r[2] is not None]
    return sorted({*fresh, *late}), (max(fresh) if fresh else None), len(fresh) >= FAN_OUT_CHUNK, horizon


def _chunks(items: Sequence[Event], size: int) -> Iterable[Sequence[Event]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def fan_out_endpoint(endpoint_id: int, *, now: datetime | None = None) -> FanOutPass:
    """One pass for one endpoint, in one transaction (the endpoint row locked; a busy one is skipped)."""
    now = now or timezone.now()
    with transaction.atomic():
        endpoint = (
            Endpoint.objects.select_for_update(skip_locked=True).filter(pk=endpoint_id, enabled=True).first()
        )
        if endpoint is None:
            return FanOutPass(deliveries=0, more=False)
        ids, fresh_max, more, horizon = _candidates(endpoint)
        window = retry_window()
        chosen = [
            e
            for e in Event.objects.filter(pk__in=ids).order_by("id")
            if e.created_at + window > now and matches(endpoint, e)
        ]
        created = 0
        for group in _chunks(chosen, endpoint.batch_size):
            uid = uuid.uuid4()
            batch = endpoint.batch_size > 1
            delivery = Delivery.objects.create(
                uid=uid,
                endpoint=endpoint,
                webhook_id=f"{BATCH_ID_PREFIX}{uid.hex}" if batch else group[0].public_id,
                status=DELIVERY_PENDING,
                next_attempt_at=now,
                expires_at=min(e.created_at for e in group) + window,
                created_at=now,
            )
            DeliveryEvent.objects.bulk_create(
                DeliveryEvent(delivery=delivery, endpoint=endpoint, event=e, position=i)
                for i, e in enumerate(group)
            )
            created += 1
        Endpoint.objects.filter(pk=endpoint.pk).update(
            last_event_id=max(endpoint.last_event_id, fresh_max or 0), horizon_xid=horizon
        )
    return FanOutPass(deliveries=created, more=more)


def fan_out(*, now: datetime | None = None) -> int:
    """Create the delivery rows of every enabled endpoint's new events; returns how many were created."""
    total = 0
    for endpoint_id in Endpoint.objects.filter(enabled=True).order_by("id").values_list("pk", flat=True):
        for _ in range(100):  # at most 100 chunks per endpoint per call; the next call goes on
            outcome = fan_out_endpoint(endpoint_id, now=now)
            total += outcome.deliveries
            if not outcome.more:
                break
    return total


# --- claims -----------------------------------------------------------------------------------------------


def expire(*, now: datetime | None = None) -> int:
    """Pending deliveries whose retry window closed (an endpoint disabled meanwhile) fail for good."""
    now = now or timezone.now()
    return (
        Delivery.objects.filter(status=DELIVERY_PENDING, expires_at__lte=now, redeliver_requested=False)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(
            status=DELIVERY_FAILED,
            next_attempt_at=None,
            claim_token=None,
            lease_until=None,
            last_error="not delivered within the retry window",
        )
    )


def claim_due(*, now: datetime | None = None, limit: int = CLAIM_LIMIT) -> list[tuple[int, uuid.UUID]]:
    """Claim up to ``limit`` due deliveries of enabled endpoints (FOR UPDATE SKIP LOCKED, then a lease)."""
    now = now or timezone.now()
    token = uuid.uuid4()
    with transaction.atomic():
        ids = list(
            Delivery.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(status=DELIVERY_PENDING, next_attempt_at__lte=now, endpoint__enabled=True)
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .order_by("next_attempt_at", "id")
            .values_list("pk", flat=True)[:limit]
        )
        if ids:
            Delivery.objects.filter(pk__in=ids).update(lease_until=now + lease(), claim_token=token)
    return [(int(pk), token) for pk in ids]


# --- one attempt ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    sent: bool  # False: the claim was lost, nothing was sent
    delivered: bool = False
    status_code: int | None = None
    error: str = ""


def backoff(attempts: int, *, rng: random.Random | None = None) -> timedelta:
    """Full jitter: uniform in [0, min(max, base * 2**(attempts-1))] seconds."""
    cap = min(backoff_max_s(), backoff_base_s() * (2 ** min(max(attempts - 1, 0), 30)))
    return timedelta(seconds=(rng or random).uniform(0.0, cap))


def _excerpt(body: bytes) -> str:
    # NUL is the one character PostgreSQL's text refuses: a binary or UTF-16 answer would fail the record
    return body[:RESPONSE_EXCERPT_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def _send(endpoint: Endpoint, delivery: Delivery, now: datetime) -> tuple[int | None, str, float, str]:
    """POST the delivery once: (status code, error, latency in ms, response excerpt)."""
    links = list(DeliveryEvent.objects.filter(delivery=delivery).select_related("event").order_by("position"))
    events = [link.event for link in links]
    if not events:
        return None, "the delivery has no events", 0.0, ""
    body = request_body(events, batch=delivery.webhook_id.startswith(BATCH_ID_PREFIX))
    headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        **signature_headers(
            secrets=signing_secrets(endpoint, now),
            msg_id=delivery.webhook_id,
            body=body,
            timestamp=timezone.now(),  # the receiver checks it against its clock: always the real time
        ),
    }
    started = time.perf_counter()
    try:
        answer = outbound.request(
            "POST",
            endpoint.url,
            content=body,
            headers=headers,
            timeout_s=timeout_s(),
            max_bytes=RESPONSE_EXCERPT_BYTES,
        )
    except outbound.OutboundRefused as exc:
        return None, f"refused: {exc}", (time.perf_counter() - started) * 1000, ""
    except Exception as exc:  # time-outs, refused connections, TLS and protocol errors
        elapsed = (time.perf_counter() - started) * 1000
        kind = "timed out" if "Timeout" in type(exc).__name__ else type(exc).__name__
        return None, f"{kind}: {exc}"[:1000], elapsed, ""
    return answer.status, "", answer.latency_s * 1000, _excerpt(answer.body)


def _take(delivery_id: int, token: uuid.UUID, now: datetime) -> uuid.UUID | None:
    """Take a claim that is still ours for one attempt (a conditional UPDATE): its lease renewed and its token
    replaced by the attempt's own, returned. So the same task run twice at once (a message put back while its
    first copy still runs) sends once: the second copy's token no longer matches. A claim whose endpoint was
    disabled meanwhile (by its failures or by an operator) is let go instead: nothing more is sent to it."""
    attempt_token = uuid.uuid4()
    # endpoint_id IN (...), not a join: Django turns a joined UPDATE into "id IN (a subquery)", which a
    # concurrent UPDATE's commit does not re-check, and both copies would take the claim.
    taken = Delivery.objects.filter(
        pk=delivery_id,
        claim_token=token,
        status=DELIVERY_PENDING,
        lease_until__gt=now,
        endpoint_id__in=Endpoint.objects.filter(enabled=True).values("pk"),
    ).update(lease_until=now + lease(), claim_token=attempt_token)
    if taken:
        return attempt_token
    Delivery.objects.filter(pk=delivery_id, claim_token=token, status=DELIVERY_PENDING).update(
        claim_token=None, lease_until=None
    )
    return None


def attempt(delivery_id: int, token: uuid.UUID | str, *, now: datetime | None = None) -> Outcome:
    """Send one claimed delivery and record the attempt (a claim lost meanwhile sends nothing)."""
    now = now or timezone.now()
    taken = _take(delivery_id, uuid.UUID(str(token)), now)
    if taken is None:
        return Outcome(sent=False)
    token = taken
    delivery = Delivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    status_code, error, latency_ms, excerpt = _send(endpoint, delivery, now)
    delivered = status_code is not None and 200 <= status_code < 300
    if status_code is not None and not delivered:
        error = f"HTTP {status_code}"
    _record(
        delivery_id=delivery_id,
        token=token,
        now=now,
        delivered=delivered,
        status_code=status_code,
        error=error,
        latency_ms=latency_ms,
        excerpt=excerpt,
    )
    return Outcome(sent=True, delivered=delivered, status_code=status_code, error=error)


def _record(
    *,
    delivery_id: int,
    token: uuid.UUID,
    now: datetime,
    delivered: bool,
    status_code: int | None,
    error: str,
    latency_ms: float,
    excerpt: str,
) -> None:
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().get(pk=delivery_id)
        ours = delivery.claim_token == token
        number = delivery.attempts + 1
        DeliveryAttempt.objects.create(
            delivery=delivery,
            number=number,
            started_at=now,
            status_code=status_code,
            error=error[:1000],
            latency_ms=round(latency_ms, 3),
            response_excerpt=excerpt,
            manual=delivery.redeliver_requested and ours,
            succeeded=delivered,
        )
        delivery.attempts = number
        if ours:
            delivery.claim_token = None
            delivery.lease_until = None
            delivery.redeliver_requested = False
            if delivered:
                delivery.status = DELIVERY_DELIVERED
                delivery.delivered_at = now
                delivery.next_attempt_at = None
                delivery.last_error = ""
            else:
                delivery.last_error = error[:1000]
                later = now + backoff(number)
                if later >= delivery.expires_at:
                    delivery.status = DELIVERY_FAILED
                    delivery.next_attempt_at = None
                else:
                    delivery.next_attempt_at = later
        delivery.save()
        _endpoint_health(endpoint_id=delivery.endpoint_id, delivered=delivered, error=error, now=now)


def _endpoint_health(*, endpoint_id: int, delivered: bool, error: str, now: datetime) -> None:
    if delivered:
        Endpoint.objects.filter(pk=endpoint_id, consecutive_failures__gt=0).update(consecutive_failures=0)
        return
    Endpoint.objects.filter(pk=endpoint_id).update(consecutive_failures=F("consecutive_failures") + 1)
    disable(
        Endpoint.objects.filter(pk=endpoint_id, consecutive_failures__gte=F("failure_limit")),
        reason=f"disabled after consecutive failed attempts; the last: {error}",
        last_error=error,
        now=now,
    )


def disable(endpoints: QuerySet[Endpoint], *, reason: str, last_error: str, now: datetime) -> int:
    """Disable the enabled ones of ``endpoints``, each with its ``webhook.disabled`` event (after its
    failures, or by an operator); returns how many were disabled."""
    reason = reason[:1000]
    disabled = 0
    for endpoint_id in endpoints.filter(enabled=True).values_list("pk", flat=True):
        if not endpoints.filter(pk=endpoint_id, enabled=True).update(
            enabled=False, disabled_at=now, disabled_reason=reason, updated_at=now
        ):
            continue  # disabled (or no longer due) meanwhile
        disabled += 1
        endpoint = Endpoint.objects.get(pk=endpoint_id)
        log.warning("webhook endpoint %s disabled: %s", endpoint_id, reason)
        feed.record(
            [
                feed.event(
                    kind=EVENT_WEBHOOK_DISABLED,
                    team_id=endpoint.team_id,
                    payload={
                        "endpoint": endpoint.pk,
                        "url": url_origin(endpoint.url),  # every member reads the feed
                        "consecutive_failures": endpoint.consecutive_failures,
                        "failure_limit": endpoint.failure_limit,
                        "last_error": last_error[:1000],
                    },
                )
            ]
        )
    return disabled


def deliver_due(*, now: datetime | None = None, limit: int = CLAIM_LIMIT) -> list[Outcome]:
    """In process: expire, claim and send every due delivery now (tests, the admin, a one-off catch-up)."""
    now = now or timezone.now()
    expire(now=now)
    return [attempt(pk, token, now=now) for pk, token in claim_due(now=now, limit=limit)]


def run_once(*, now: datetime | None = None) -> list[Outcome]:
    """Fan out, then send what is due, all in this process."""
    fan_out(now=now)
    return deliver_due(now=now)
