"""Per-token throttling of the expensive endpoints (scopes "solve", "run", "compare" in settings), and the
throttle on failed token authentication.

Requests made with an API token are counted per token (two tokens of one user have separate budgets, as
two tools would); session requests are counted per user, and the dashboard's costly forms (a plan created, a
run or a job started) draw on that same per-user budget (``session_budget_wait``).

Failed token authentications are counted per client address (``FailedTokenThrottle``): a client that sends
more wrong tokens than the ``token_failure`` rate allows gets 429 with ``Retry-After`` on every token
request until the window has passed, so guessing tokens costs a window per handful of guesses. (A token is
256 random bits, so guessing cannot succeed anyway; the throttle keeps the attempts from costing a database
query each and makes them visible.)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

from api.models import ApiToken


class PerTokenScopedThrottle(ScopedRateThrottle):
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        # a dashboard request (``session_budget_wait``) is a Django request: no ``auth``, a session user
        token = getattr(request, "auth", None)
        if isinstance(token, ApiToken):
            ident = f"token-{token.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"addr-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


def session_budget_wait(request: HttpRequest, scope: str) -> float | None:
    """For a dashboard request that costs what an API request of ``scope`` costs (a plan created, a run or a
    job started): None, and the request counted against the signed-in user's budget of that scope, which the
    user's browser-session API requests draw on too; or, when that budget is spent, the seconds to wait (the
    request is then not counted). The rates are the API's (``THROTTLE_SOLVE``, ``THROTTLE_RUN``)."""
    throttle = PerTokenScopedThrottle()
    if throttle.allow_request(request, SimpleNamespace(throttle_scope=scope)):  # type: ignore[arg-type]
        return None
    return throttle.wait() or 1.0


def client_ip(request: HttpRequest) -> str:
    """The client's address: the peer, or, behind ``TRUSTED_PROXY_COUNT`` proxies, the address the
    outermost of them saw (the same rule as DRF's ``NUM_PROXIES``; django-axes keys its lockout on it)."""
    proxies = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0))
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies > 0 and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return str(request.META.get("REMOTE_ADDR", ""))


class FailedTokenThrottle(SimpleRateThrottle):
    """Counts failed token authentications per client address; over the rate, token requests get 429."""

    scope = "token_failure"
    num_requests: int | None
    duration: int | None

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}

    def _load(self, request: Any) -> None:
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        self.history = [t for t in self.cache.get(self.key, []) if t > self.now - (self.duration or 0)]

    def blocked_for(self, request: Any) -> float | None:
        """Seconds until this client may try a token again, or None when it is not over the rate."""
        if self.rate is None or self.num_requests is None:
            return None
        self._load(request)
        if len(self.history) >= self.num_requests:
            return self.wait() or 1.0
        return None

    def record_failure(self, request: Any) -> None:
        if self.rate is None:
            return
        self._load(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)
