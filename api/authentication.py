"""Token authentication against hashed API tokens: ``Authorization: Bearer pln_...`` (or ``Token pln_...``).

Failures are counted per client address (``api.throttling.FailedTokenThrottle``): a client over the rate
gets 429 with ``Retry-After`` for any token until the window has passed, before its token is looked up."""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from api.models import ApiToken, hash_token
from api.throttling import FailedTokenThrottle

KEYWORDS = (b"bearer", b"token")


class HashedTokenAuthentication(BaseAuthentication):
    """Look the token up by its SHA-256; the request acts as the token's user (``request.auth`` = the token)."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None
        throttle = FailedTokenThrottle()
        wait = throttle.blocked_for(request)
        if wait is not None:
            raise Throttled(wait, detail="Too many failed token authentications from this address.")
        if len(parts) != 2:
            throttle.record_failure(request)
            raise AuthenticationFailed("Invalid Authorization header: expected 'Bearer <token>'.")
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError:
            throttle.record_failure(request)
            raise AuthenticationFailed("Invalid token.") from None
        token = ApiToken.objects.active().select_related("user").filter(key_hash=hash_token(raw)).first()
        if token is None or not token.user.is_active:
            throttle.record_failure(request)
            raise AuthenticationFailed("Invalid, expired or revoked token.")
        token.touch()
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to unauthenticated requests.
        return 'Bearer realm="api"'
