"""The audit log: who created, changed, archived or deleted which scenario, plan, price book, membership and
API token, through which token (django-auditlog).

django-auditlog writes a ``LogEntry`` from the model signals of the registered models, with the changed
fields (``changes``, as JSON values) and the object's state (``serialized_data``, whose ``team`` scopes the
entry to a team). Who acted is set per request:

- in API views, after DRF has authenticated the caller (``AuditContext.enter``, from
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

from django.http import HttpRequest, HttpResponse

from api.throttling import client_ip

# Fields never copied into the log: the token's hash is a credential; last_used_at changes on use, not edit.
TOKEN_EXCLUDED_FIELDS = ["key_hash", "last_used_at"]


def register_models() -> None:
    from auditlog.registry import auditlog

    from api.models import ApiToken
    from scenarios.models import ClusterScenario, Membership, ModelScenario, Plan, PriceBook, SiteScenario

    for model in (ClusterScenario, ModelScenario, SiteScenario, Plan, PriceBook, Membership):
        if not auditlog.contains(model):
            auditlog.register(model, exclude_fields=["updated_at"], serialize_data=True)
    if not auditlog.contains(ApiToken):
        auditlog.register(
            ApiToken,
            exclude_fields=TOKEN_EXCLUDED_FIELDS,
            serialize_data=True,
            serialize_auditlog_fields_only=True,
        )


def request_context(user: Any, request: Any, token: Any = None) -> contextlib.AbstractContextManager[None]:
    """The audit context of one request: ``user`` acts (through ``token`` when it is an API token)."""
    from auditlog.context import set_extra_data

    if token is not None:
        via: dict[str, Any] = {"via": "token", "token": token.pk, "token_prefix": token.prefix}
    else:
        via = {"via": "session"}
    return set_extra_data({"actor": user, "remote_addr": client_ip(request) or None, "additional_data": via})


class AuditContextMiddleware:
    """Sets the session user as the actor of whatever the view changes (API views set their own)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with request_context(request.user, request):
            response: HttpResponse = self.get_response(request)
        return response
