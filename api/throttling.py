"""Per-token throttling of the expensive endpoints (scopes "solve", "run", "compare" in settings).

Requests made with an API token are counted per token (two tokens of one user have separate budgets, as
two tools would); session requests are counted per user.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle

from api.models import ApiToken


class PerTokenScopedThrottle(ScopedRateThrottle):
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"addr-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
