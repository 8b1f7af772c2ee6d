"""API tokens for tools: created and revoked by users, stored only as a hash, shown once.

A token is 32 random bytes (256 bits) in URL-safe base64 behind the ``pln_`` prefix. Because the secret is
random and long, a single SHA-256 is the right hash (a slow password hash buys nothing against 2^256 guesses
and would cost every request); the database holds only the hash and an 8-character prefix that lets a user
tell tokens apart. A token may be restricted to one team: it then sees and changes only that team's objects,
and that team's admins may list and revoke it.

Every new token expires: after the lifetime its creator gives, or after ``API_TOKEN_DEFAULT_DAYS`` (0 turns
the default off). Tokens made before lifetimes existed were given the default lifetime from the upgrade
(migration 0002), so they keep working and then expire like new ones. A token's ``scope`` is ``read``
(safe methods only: GET, HEAD, OPTIONS) or ``read_write`` (everything its user's roles allow).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

    from scenarios.models import Team

TOKEN_PREFIX = "pln_"
# last_used_at is written at most this often per token, so that authenticating is not a write per request.
LAST_USED_RESOLUTION = timedelta(minutes=5)


SCOPE_READ = "read"
SCOPE_READ_WRITE = "read_write"
SCOPE_CHOICES = [
    (SCOPE_READ, "read: only reads (GET), whatever the user's role"),
    (SCOPE_READ_WRITE, "read and write: everything the user's roles allow"),
]


def default_expiry(now: datetime | None = None) -> datetime | None:
    """When a token made now expires by default: ``API_TOKEN_DEFAULT_DAYS`` from now (None when it is 0)."""
    days = int(getattr(settings, "API_TOKEN_DEFAULT_DAYS", 90))
    if days <= 0:
        return None
    return (now or timezone.now()) + timedelta(days=days)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def new_token_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    team = models.ForeignKey(
        "scenarios.Team",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_tokens",
        help_text="When set, the token acts only on this team's objects.",
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=12, help_text="The first characters of the secret, to tell tokens apart."
    )
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret, hex.")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    scope = models.CharField(
        max_length=16,
        choices=SCOPE_CHOICES,
        default=SCOPE_READ_WRITE,
        help_text="read: only safe methods (GET, HEAD, OPTIONS); read_write: everything the user's roles allow.",
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=["user", "revoked_at"]),)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def read_only(self) -> bool:
        return self.scope == SCOPE_READ

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    @classmethod
    def issue(
        cls,
        *,
        user: AbstractBaseUser,
        name: str,
        team: Team | None = None,
        expires_at: datetime | None = None,
        scope: str = SCOPE_READ_WRITE,
    ) -> tuple[ApiToken, str]:
        """Create a token and return it with its secret; the secret is not stored and cannot be shown again.
        Without ``expires_at`` the token gets the default lifetime (``default_expiry``)."""
        raw = new_token_secret()
        token = cls.objects.create(
            user=user,
            team=team,
            name=name,
            prefix=raw[: len(TOKEN_PREFIX) + 4],
            key_hash=hash_token(raw),
            expires_at=expires_at if expires_at is not None else default_expiry(),
            scope=scope,
        )
        return token, raw

    def revoke(self, *, by: models.Model | None) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.revoked_by = by  # type: ignore[assignment]
            self.save(update_fields=["revoked_at", "revoked_by"])

    def touch(self) -> None:
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at > LAST_USED_RESOLUTION:
            # A conditional UPDATE: concurrent requests do not each write, and a revoked row is left alone.
            ApiToken.objects.filter(pk=self.pk).filter(
                models.Q(last_used_at__isnull=True) | models.Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
            ).update(last_used_at=now)
            self.last_used_at = now


class IdempotencyKey(models.Model):
    """The first answer to a POST sent with an ``Idempotency-Key`` header, so that a retry gets it again
    instead of creating or running twice (``api.idempotency``). Keys are per user; a row whose
    ``status_code`` is null is a request still in progress."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the method, path and JSON body.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    location = models.CharField(max_length=2000, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user"),
        )

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code or 'in progress'})"
