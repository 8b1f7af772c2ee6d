"""The audit log: who created, changed, archived or deleted which scenario, plan, price book, membership, API
token, team, webhook endpoint and price feed, through which token (django-auditlog).

django-auditlog writes a ``LogEntry`` from the model signals of the registered models, with the changed
fields (``changes``, as JSON values) and the object's state (``serialized_data``, whose ``team`` scopes the
entry to a team). Who acted is set per request:

- in API views, after DRF has authenticated the caller (``set_request_actor``, from
  ``api.views.base.PlannerViewMixin``): the user, the client address and, in ``additional_data``, the token
  (id, prefix, name) or ``"via": "session"``;
- in every other view (the dashboard, the admin), by ``AuditContextMiddleware``: the session's user (the
  lazy ``request.user``: nothing is read from the database unless an entry is written).

Changes made outside a request (workers, management commands) have no actor. Writes through
``QuerySet.update()`` send no signal and are not logged, so the code paths that archive, revoke or remove
save the rows one by one.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.db.models import Model
from django.http import HttpRequest, HttpResponse

from api.throttling import client_ip

# Fields never copied into the log: the token's hash is a credential; last_used_at changes on use, not edit.
TOKEN_EXCLUDED_FIELDS = ["key_hash", "last_used_at"]
# A webhook endpoint's secrets are credentials; its delivery state changes with every delivery, not an edit.
ENDPOINT_EXCLUDED_FIELDS = [
    "secret",
    "previous_secret",
    "last_event_id",
    "horizon_xid",
    "consecutive_failures",
    "updated_at",
]
# A price feed's poll state (``PRICE_FEED_POLL_STATE_FIELDS``) changes with every poll, not an edit; its
# schedule is a django-celery-beat row linked once after the feed is made (its id says nothing; the period
# lives in that row).
PRICE_FEED_EXCLUDED_FIELDS = ["updated_at", "schedule"]


def register_models() -> None:
    from auditlog.registry import auditlog

    from api.models import ApiToken
    from integrations.models import Endpoint
    from scenarios.models import (
        PRICE_FEED_POLL_STATE_FIELDS,
        ClusterScenario,
        Membership,
        ModelScenario,
        Plan,
        PriceBook,
        PriceFeed,
        SiteScenario,
        Team,
    )

    for model in (ClusterScenario, ModelScenario, SiteScenario, Plan, PriceBook, Membership, Team):
        if not auditlog.contains(model):
            auditlog.register(model, exclude_fields=["updated_at"], serialize_data=True)
    settings_models: tuple[tuple[type[Model], list[str]], ...] = (
        (Endpoint, ENDPOINT_EXCLUDED_FIELDS),
        (PriceFeed, [*PRICE_FEED_EXCLUDED_FIELDS, *PRICE_FEED_POLL_STATE_FIELDS]),
    )
    for settings_model, excluded in settings_models:
        if not auditlog.contains(settings_model):
            auditlog.register(
                settings_model,
                exclude_fields=excluded,
                serialize_data=True,
                serialize_auditlog_fields_only=True,
            )
    if not auditlog.contains(ApiToken):
        auditlog.register(
            ApiToken,
            exclude_fields=TOKEN_EXCLUDED_FIELDS,
            serialize_data=True,
            serialize_auditlog_fields_only=True,
        )


def _context_data(user: Any, request: Any, token: Any = None) -> dict[str, Any]:
    if token is not None:
        via: dict[str, Any] = {"via": "token", "token": token.pk, "token_prefix": token.prefix}
    else:
        via = {"via": "session"}
    return {"actor": user, "remote_addr": client_ip(request) or None, "additional_data": via}


def set_request_actor(
    user: Any, request: Any, token: Any = None, stack: contextlib.ExitStack | None = None
) -> None:
    """Make ``user`` (through ``token``) the actor of what the rest of this request changes.

    The middleware's context is updated in place: django-auditlog's contexts do not restore the previous
    one when they end, so a nested context would leave the outer one's signal receiver connected for good.
    Without the middleware (a view called directly), a context of its own is entered on ``stack``."""
    data = _context_data(user, request, token)
    current = getattr(getattr(request, "_request", request), "_planner_audit_context", None)
    if current is not None:
        current.update(data)
    elif stack is not None:
        from auditlog.context import set_extra_data

        stack.enter_context(set_extra_data(data))


class AuditContextMiddleware:
    """Sets the session user as the actor of whatever the view changes (API views replace it with the
    caller they authenticated, ``set_request_actor``)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from auditlog.context import set_extra_data

        data = _context_data(request.user, request)
        request._planner_audit_context = data  # type: ignore[attr-defined]
        with set_extra_data(data):
            response: HttpResponse = self.get_response(request)
        return response
