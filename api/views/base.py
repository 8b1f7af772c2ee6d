"""What every API view shares: authentication, strict JSON, team scoping, roles, the error schema."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import django_filters
from django.db.models import Model, QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import serializers, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.filters import BaseFilterBackend, OrderingFilter
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from api import idempotency
from api.audit import set_request_actor
from api.authentication import HashedTokenAuthentication
from api.errors import error_response
from api.filters import StrictOrderingFilter
from api.models import ApiToken
from api.parsers import StrictJSONParser
from api.permissions import TeamRolePermission, has_role, team_roles
from api.schema import PlannerAutoSchema
from api.throttling import PerTokenScopedThrottle

if TYPE_CHECKING:
    from rest_framework.generics import BaseFilterProtocol

AUTHENTICATION_CLASSES = (HashedTokenAuthentication, SessionAuthentication)


PAGINATION_PARAMS = ("page_query_param", "page_size_query_param", "cursor_query_param")


class PlannerViewMixin(APIView):
    """Token first (so that anonymous callers get 401, not 403), then the browser session with CSRF.

    A query parameter the endpoint does not read is refused with 400 naming it (a misspelt filter would
    otherwise answer the whole, unfiltered list): lists take their filterset's filters, ``ordering`` and
    the pagination parameters; other endpoints the parameters they declare in ``extra_query_params`` (by
    action, or by method for plain views); every endpoint takes ``format``."""

    authentication_classes = AUTHENTICATION_CLASSES
    parser_classes = (StrictJSONParser,)
    renderer_classes: tuple[type[BaseRenderer], ...] = (JSONRenderer,)
    throttle_classes = (PerTokenScopedThrottle,)
    filter_backends: Sequence[type[BaseFilterBackend | BaseFilterProtocol[Any]]] = (
        DjangoFilterBackend,
        StrictOrderingFilter,
    )
    schema = PlannerAutoSchema()
    extra_query_params: ClassVar[dict[str, tuple[str, ...]]] = {}

    # True on endpoints that change nothing although they take a POST (the stateless solve).
    read_scope_may_post = False

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with contextlib.ExitStack() as stack:
            self._audit_stack = stack
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.check_token_scope(request)
        self.check_query_params(request)
        # The audit log's actor is the caller DRF authenticated (and the token it used), for this request.
        token = request.auth if isinstance(request.auth, ApiToken) else None
        stack = getattr(self, "_audit_stack", None)
        if request.user is not None and request.user.is_authenticated:
            set_request_actor(request.user, request, token, stack)
        self._idempotency = idempotency.claim(request)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, idempotency.Replay):
            return idempotency.replayed(exc.record)
        if isinstance(exc, idempotency.KeyMismatch):
            return error_response(
                [{"path": idempotency.HEADER, "message": str(exc.detail)}],
                status_code=exc.status_code,
                detail="Idempotency-Key reused for a different request.",
            )
        return super().handle_exception(exc)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        record = getattr(self, "_idempotency", None)
        if record is not None:
            self._idempotency = None
            idempotency.settle(record, response)
        return response

    def check_token_scope(self, request: Request) -> None:
        """A ``read`` token only reads: any unsafe method is refused, whatever its user's role."""
        token = request.auth
        if not isinstance(token, ApiToken) or not token.read_only or request.method in SAFE_METHODS:
            return
        if self.read_scope_may_post and request.method == "POST":
            return
        raise PermissionDenied(
            f"This token's scope is read: it may only read (GET). {request.method} needs a read_write token."
        )

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The list's filters and ordering, on lists only: a row is found by its id whatever the list's
        defaults say (an archived cluster, which live plans and stored results still name, is not listed
        by default but is still ``GET /clusters/{id}/``). Only lists take filter parameters
        (``allowed_query_params``), so a detail route has nothing else to apply."""
        if getattr(self, "action", None) not in (None, "list"):
            return queryset
        filtered: QuerySet[Any] = super().filter_queryset(queryset)  # type: ignore[misc]
        return filtered

    def repeatable_query_params(self, request: Request) -> set[str]:
        """The list's filters that take several values as repeated parameters (``?kind=a&kind=b``)."""
        action = getattr(self, "action", None) or (request.method or "get").lower()
        filterset_class = getattr(self, "filterset_class", None)
        if action != "list" or filterset_class is None:
            return set()
        return {
            name
            for name, spec in filterset_class.base_filters.items()
            if isinstance(spec, django_filters.MultipleChoiceFilter)
        }

    def allowed_query_params(self, request: Request) -> set[str]:
        allowed = {api_settings.URL_FORMAT_OVERRIDE or "format"}
        paginator = getattr(self, "paginator", None)
        if paginator is not None:
            allowed.update(name for attr in PAGINATION_PARAMS if (name := getattr(paginator, attr, None)))
        action = getattr(self, "action", None) or (request.method or "get").lower()
        if action == "list":
            filterset_class = getattr(self, "filterset_class", None)
            if filterset_class is not None:
                allowed.update(filterset_class.base_filters)
            allowed.update(
                backend.ordering_param
                for backend in self.filter_backends
                if issubclass(backend, OrderingFilter)
            )
        allowed.update(self.extra_query_params.get(action, ()))
        return allowed

    def check_query_params(self, request: Request) -> None:
        if getattr(self, "swagger_fake_view", False):
            return
        allowed = self.allowed_query_params(request)
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            known = ", ".join(sorted(allowed))
            raise serializers.ValidationError(
                {name: [f"unknown query parameter; this endpoint takes: {known}"] for name in unknown}
            )
        # ``?plans=1&plans=2`` would be read as its last value alone: a parameter takes one value (a list is
        # written once, comma-separated), except a filter of several choices (``?kind=a&kind=b``).
        repeatable = self.repeatable_query_params(request)
        repeated = sorted(
            name
            for name in request.query_params
            if name not in repeatable and len(request.query_params.getlist(name)) > 1
        )
        if repeated:
            raise serializers.ValidationError(
                {
                    name: [
                        f"given {len(request.query_params.getlist(name))} times; give it once (a list is "
                        "comma-separated: plans=1,2)"
                    ]
                    for name in repeated
                }
            )


def refuse_archived(instance: Any, what: str) -> None:
    """An archived scenario or plan is read through the API, not changed: reached by id so that the plans and
    results that name it can be followed, it keeps what it was when archived."""
    if getattr(instance, "archived_at", None) is not None:
        raise serializers.ValidationError(
            {"archived_at": [f"this {what} is archived: it can be read, not changed"]}
        )


class AuthenticatedAPIView(PlannerViewMixin):
    """Any authenticated caller, team or not (catalog, stateless solve)."""

    permission_classes = (IsAuthenticated,)


class TeamScopedViewSetMixin(PlannerViewMixin, GenericAPIView):
    """Rows of the caller's teams only; another team's row is not in the queryset, hence 404 on every method."""

    permission_classes = (TeamRolePermission,)
    lookup_value_regex = r"\d+"
    write_role = "editor"
    team_field = "team_id"

    def base_queryset(self) -> QuerySet[Any]:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet[Any]:
        if getattr(self, "swagger_fake_view", False):
            return self.base_queryset().none()
        return self.base_queryset().filter(**{f"{self.team_field}__in": list(team_roles(self.request))})

    def object_team_id(self, obj: Model) -> int | None:
        return getattr(obj, "team_id", None)


class TeamScopedReadOnlyViewSet(TeamScopedViewSetMixin, viewsets.ReadOnlyModelViewSet):
    pass


def resolve_team(request: Request, validated: dict[str, Any], *, role: str = "editor") -> Any:
    """The team a new object goes to: the one named, or the caller's only team; the caller must hold ``role``.

    ``validated["team"]`` was already checked to be one of the caller's teams (``TeamField``), so a team of
    someone else reads as 'does not exist' (400), never as a 403 that would confirm it exists.
    """
    from scenarios.models import Team

    team = validated.pop("team", None)
    if team is None:
        writable = [team_id for team_id in team_roles(request) if has_role(request, team_id, role)]
        if len(writable) != 1:
            raise serializers.ValidationError(
                {"team": ["required: name the team (you can write to none or to more than one)"]}
            )
        team = Team.objects.get(pk=writable[0])
    if not has_role(request, team.pk, role):
        raise PermissionDenied(f"Your role on this team does not allow this (needs {role}).")
    return team
