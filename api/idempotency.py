"""``Idempotency-Key`` on POST: a retry of a request gets the first answer instead of creating or running again.

A client that does not know whether its POST arrived (a time-out, a dropped connection) sends it again with
the same key (draft-ietf-httpapi-idempotency-key-header): the first request's status, body and ``Location``
are stored under (user, key) and returned to every retry, marked ``Idempotent-Replayed: true``. The same key
with a different method, path, body or credential (another API token of the user, or the browser session
instead of a token) is a client error, 422 naming the header: an answer is replayed only to the credential
that was given it, so a token restricted to one team never receives what another token of its user was
answered. An answer that holds a secret (a new API token, a webhook's signing secret) is not kept: secrets
are shown once and stored only as hashes, so its retry gets 409 saying the request was answered and the
secret is not shown again. A retry that arrives while
the first request is still being answered gets 409 (retry later). Answers of 5xx are not kept (the request
may be retried for real). Keys are kept ``IDEMPOTENCY_KEY_TTL_HOURS``; a key older than that starts afresh,
as does one whose first request died before answering (``IDEMPOTENCY_PENDING_S``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.models import ApiToken, IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255


class Replay(APIException):
    """Raised from a view's ``initial`` to answer with the stored response (``PlannerViewMixin``)."""

    status_code = 200

    def __init__(self, record: IdempotencyKey) -> None:
        super().__init__("replayed")
        self.record = record


class KeyMismatch(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "Idempotency-Key was already used for a different request."


class KeyInProgress(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "A request with this Idempotency-Key is still being answered; retry in a moment."


def ttl() -> timedelta:
    return timedelta(hours=int(getattr(settings, "IDEMPOTENCY_KEY_TTL_HOURS", 24)))


def pending_limit() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "IDEMPOTENCY_PENDING_S", 60)))


# Top-level fields of an answer that hold a secret shown once (tokens.py, webhooks.py): never kept here.
SECRET_FIELDS = ("token", "secret")
_WITHHELD = "withheld_secret_fields"  # the stored answer of a request whose answer held a secret


def credential(request: Request) -> str:
    """Which of the user's credentials sent the request: an API token (by id) or the browser session."""
    token = request.auth if isinstance(request.auth, ApiToken) else None
    return f"token:{token.pk}" if token is not None else "session"


def fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    text = (
        f"{request.method} {request.path}?{request.META.get('QUERY_STRING', '')}\n"
        f"{credential(request)}\n{body}"
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def header_key(request: Request) -> str | None:
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ValidationError({HEADER: [f"must be 1 to {MAX_KEY_LENGTH} printable characters"]})
    return key


def claim(request: Request) -> IdempotencyKey | None:
    """For a POST with the header: the new in-progress row this request will fill in (None without the
    header). Raises ``Replay`` (a stored answer), ``KeyMismatch`` (422) or ``KeyInProgress`` (409)."""
    if request.method != "POST":
        return None
    key = header_key(request)
    if key is None or request.user is None or not request.user.is_authenticated:
        return None
    now = timezone.now()
    print_ = fingerprint(request)
    user_id = request.user.pk
    IdempotencyKey.objects.filter(user_id=user_id, created_at__lt=now - ttl()).delete()
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(user_id=user_id, key=key, fingerprint=print_, created_at=now)
    except IntegrityError:
        pass
    record = IdempotencyKey.objects.filter(user_id=user_id, key=key).first()
    if record is None:  # removed meanwhile (expired): nothing to replay
        raise KeyInProgress()
    if record.fingerprint != print_:
        raise KeyMismatch(
            f"{HEADER} '{key}' was first used for a different request (method, path, body or credential); "
            "use a new key for a new request."
        )
    if record.status_code is not None:
        raise Replay(record)
    if now - record.created_at > pending_limit():
        # The first request died before answering: this one takes the key over.
        IdempotencyKey.objects.filter(pk=record.pk).update(created_at=now)
        record.created_at = now
        return record
    raise KeyInProgress()


def settle(record: IdempotencyKey, response: Response) -> None:
    """Keep the answer (or, for a 5xx, free the key so that a retry runs the request again)."""
    if response.status_code >= 500:
        IdempotencyKey.objects.filter(pk=record.pk).delete()
        return
    data = getattr(response, "data", None)
    secrets = sorted(name for name in SECRET_FIELDS if data.get(name)) if isinstance(data, Mapping) else []
    try:
        stored = {_WITHHELD: secrets} if secrets else json.loads(json.dumps(data, default=str))
    except (TypeError, ValueError):
        stored = None
    IdempotencyKey.objects.filter(pk=record.pk).update(
        status_code=response.status_code, response=stored, location=response.get("Location", "")
    )


def replayed(record: IdempotencyKey) -> Response:
    headers = {"Idempotent-Replayed": "true"}
    if record.location:
        headers["Location"] = record.location
    assert record.status_code is not None
    withheld = record.response.get(_WITHHELD) if isinstance(record.response, Mapping) else None
    if withheld:
        where = f" ({record.location})" if record.location else ""
        message = (
            f"this request was answered with status {record.status_code}{where}; the answer held a secret "
            f"({', '.join(withheld)}), which is shown once and not kept, so it is not shown again: "
            "revoke what was made and make it again if the answer was lost"
        )
        return Response(
            {
                "detail": "Answered already; its secret is not shown again.",
                "errors": [{"path": HEADER, "message": message}],
            },
            status=status.HTTP_409_CONFLICT,
            headers=headers,
        )
    return Response(record.response, status=record.status_code, headers=headers)
