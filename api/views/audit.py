"""GET /audit/: the audit log of the teams you administer (django-auditlog entries, ``api.audit``)."""

from __future__ import annotations

from typing import Any

import django_filters
from auditlog.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q, QuerySet
from rest_framework import mixins, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated

from api.filters import MAX_ID, IdFilter, UtcDateTimeFilter
from api.models import ApiToken
from api.permissions import team_roles
from api.serializers.audit import OBJECT_APPS, OBJECT_TYPES, AuditEntrySerializer
from api.views.base import PlannerViewMixin
from scenarios.models import ROLE_ADMIN

ACTION_NUMBERS = {"create": 0, "update": 1, "delete": 2}


def about_teams(teams: list[int]) -> Q:
    """Entries about these teams: their objects' (the object's ``team``) and the teams' own."""
    own = Q(content_type__app_label="scenarios", content_type__model="team", object_id__in=teams)
    return Q(serialized_data__fields__team__in=teams) | own


class AuditFilter(django_filters.FilterSet):
    team = IdFilter(method="filter_team", label="Entries about this team and its objects.")
    object_type = django_filters.ChoiceFilter(
        choices=[(name, name) for name in OBJECT_TYPES.values()], method="filter_object_type"
    )
    object_id = IdFilter(field_name="object_id")
    action = django_filters.ChoiceFilter(
        choices=[(name, name) for name in ACTION_NUMBERS], method="filter_action"
    )
    actor = django_filters.CharFilter(field_name="actor__username", max_length=150, label="User name.")
    token = IdFilter(field_name="additional_data__token", label="Entries made through this API token.")
    since = UtcDateTimeFilter(field_name="timestamp", lookup_expr="gte")
    until = UtcDateTimeFilter(field_name="timestamp", lookup_expr="lt")

    class Meta:
        model = LogEntry
        fields: tuple[str, ...] = ()

    def filter_team(self, qs: QuerySet[Any], name: str, value: Any) -> QuerySet[Any]:
        if value in (None, ""):
            return qs
        if value != int(value) or not 1 <= value <= MAX_ID:  # as IdFilter: out of range matches nothing
            return qs.none()
        return qs.filter(about_teams([int(value)]))

    def filter_object_type(self, qs: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        if not value:
            return qs
        models = [model for model, api_name in OBJECT_TYPES.items() if api_name == value]
        return qs.filter(content_type__model__in=models)

    def filter_action(self, qs: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        return qs.filter(action=ACTION_NUMBERS[value]) if value else qs


class AuditViewSet(PlannerViewMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Who created, changed, archived or deleted which scenario, plan, price book, membership, API token,
    webhook endpoint and price feed of the teams you administer (and the teams themselves), when, from which address and through which token; newest first.

    Team admins only (403 for anyone else). An entry belongs to the team of its object; an API token with no
    team (one that acts on all its user's teams) is shown to its own user."""

    serializer_class = AuditEntrySerializer
    permission_classes = (IsAuthenticated,)
    filterset_class = AuditFilter
    ordering_fields = ("timestamp", "id")
    ordering = ("-timestamp", "-id")

    def admin_teams(self) -> list[int]:
        return [team_id for team_id, role in team_roles(self.request).items() if role == ROLE_ADMIN]

    def get_queryset(self) -> QuerySet[LogEntry]:
        if getattr(self, "swagger_fake_view", False):
            return LogEntry.objects.none()
        teams = self.admin_teams()
        if not teams:
            raise PermissionDenied("The audit log is for team admins.")
        shown = ContentType.objects.filter(app_label__in=OBJECT_APPS, model__in=list(OBJECT_TYPES)).values(
            "pk"
        )
        own_tokens = Q(
            content_type__app_label="api",
            content_type__model="apitoken",
            serialized_data__fields__team=None,
            serialized_data__fields__user=self.request.user.pk,
        )
        token = self.request.auth
        if isinstance(token, ApiToken) and token.team_id is not None:
            # a token restricted to one team reads that team's entries, not those of its user's other tokens
            own_tokens = Q(pk__in=[])
        return (
            LogEntry.objects.filter(content_type__in=shown)
            .filter(about_teams(teams) | own_tokens)
            .select_related("actor", "content_type")
        )
