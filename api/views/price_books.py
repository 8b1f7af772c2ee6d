"""Price books: list, fetch, publish a new version (which re-runs the plans whose prices it changes)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import PriceBookFilter
from api.permissions import team_roles
from api.serializers.price_books import (
    PriceBookDetailSerializer,
    PriceBookPublishedSerializer,
    PriceBookPublishSerializer,
    PriceBookSerializer,
)
from api.views.base import TeamScopedViewSetMixin, resolve_team
from scenarios.models import PriceBook


class PriceBookViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Your teams' price books and the global ones (team null), newest version first. Published books are
    immutable; POST publishes the next version for a team (editor role) and re-runs every plan of the team
    whose resolved prices it changes (trigger ``price_change``).

    ``mode`` "patch" (the default) applies the entries on top of the team's previous version (keys it does
    not list are kept; ``{"kind", "key", "remove": true}`` deletes one); "replace" makes the entries the
    whole book. Each version lists its complete entries. The answer tells ``changes`` against the previous
    version and ``plans_to_rerun``. Unknown keys (with the closest known key) and prices outside the
    solver's limits are refused with the entry's path."""

    ordering_fields = ("published_at", "version")
    ordering = ("-published_at", "-id")
    filterset_class = PriceBookFilter

    def base_queryset(self) -> QuerySet[PriceBook]:
        return PriceBook.objects.annotate(entry_count=Count("entries"))

    @property
    def throttle_scope(self) -> str | None:
        # Publishing re-runs every plan whose prices it moves: it spends what ``POST /plans/{id}/run/`` does.
        return "run" if getattr(self, "action", None) == "create" else None

    def get_queryset(self) -> QuerySet[PriceBook]:
        if getattr(self, "swagger_fake_view", False):
            return PriceBook.objects.none()
        visible = Q(team_id__in=list(team_roles(self.request))) | Q(team__isnull=True)
        queryset = self.base_queryset().filter(visible)
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("entries")
        return queryset

    def object_team_id(self, obj: Any) -> int | None:
        return obj.team_id

    def check_object_permissions(self, request: Request, obj: Any) -> None:
        # Global books are readable by every authenticated caller; they are never written through the API.
        if obj.team_id is None:
            return
        super().check_object_permissions(request, obj)

    def get_serializer_class(self) -> Any:
        if self.action == "create":
            return PriceBookPublishSerializer
        return PriceBookDetailSerializer if self.action == "retrieve" else PriceBookSerializer

    @extend_schema(request=PriceBookPublishSerializer, responses={201: PriceBookPublishedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        from scenarios import services

        serializer = PriceBookPublishSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        team = resolve_team(request, data, role="editor")
        book = services.price_book_publish(
            team=team,
            user=request.user,
            name=data["name"],
            entries=[dict(entry) for entry in data["entries"]],
            notes=data.get("notes", ""),
            source=data.get("source", ""),
            mode=data["mode"],
        )
        summary = services.published_summary(book=book)
        book = self.base_queryset().prefetch_related("entries").get(pk=book.pk)
        body = PriceBookDetailSerializer(book, context=self.get_serializer_context()).data
        # 201 even with the broker down: the book and its pending fan-out are stored (scenarios.queue).
        fan_out = services.fan_out_state(book=book)
        return Response({**body, **summary, "fan_out": fan_out}, status=status.HTTP_201_CREATED)
