"""Price feeds: a team's price source polled on a schedule; each changed content publishes a book version."""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import PriceFeedFilter
from api.schema import ErrorSerializer
from api.serializers.price_feeds import (
    PriceFeedPollSerializer,
    PriceFeedSerializer,
    PriceFeedUpdateSerializer,
)
from api.views.base import TeamScopedViewSetMixin, resolve_team
from scenarios.models import PriceFeed

log = logging.getLogger(__name__)


class PriceFeedViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your teams' price feeds (members read, editors write). A feed reads its ``source`` (an http(s) URL,
    or a file path under ``<dir>/<team slug>/`` for a directory ``<dir>`` the operator lists in
    ``PRICE_FEED_DIRS``: the team's own directory, never another team's file) on its ``schedule`` (a
    django-celery-beat row, also editable in the admin): changed content publishes the next version of the
    team's price book with the feed's ``mode`` (re-running the plans whose prices it changes), unchanged
    content publishes nothing, malformed content is refused whole (``last_error`` names the row and the
    field) and an unreadable source is ``unreachable``; both raise a ``price_feed.failed`` event.

    ``POST /price-feeds/{id}/poll/`` polls now (202). DELETE removes the feed and its schedule; the books it
    published stay."""

    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    ordering_fields = ("name", "created_at", "last_checked_at")
    filterset_class = PriceFeedFilter
    ordering = ("name", "id")

    def base_queryset(self) -> QuerySet[PriceFeed]:
        return PriceFeed.objects.select_related("schedule__interval", "schedule__crontab")

    @property
    def throttle_scope(self) -> str | None:
        # A poll asked for by hand fetches the source and may publish a book that re-runs plans: a run's cost.
        return "run" if getattr(self, "action", None) == "poll" else None

    def get_serializer_class(self) -> Any:
        if self.action in {"update", "partial_update"}:
            return PriceFeedUpdateSerializer
        return PriceFeedSerializer

    def perform_create(self, serializer: Any) -> None:
        from scenarios import feeds

        fields = dict(serializer.validated_data)
        team = resolve_team(self.request, fields)
        feed = feeds.feed_create(team=team, user=self.request.user, **fields)
        serializer.instance = self.base_queryset().get(pk=feed.pk)

    def perform_update(self, serializer: Any) -> None:
        from scenarios import feeds

        feed = feeds.feed_update(feed=serializer.instance, **serializer.validated_data)
        serializer.instance = self.base_queryset().get(pk=feed.pk)

    def perform_destroy(self, instance: PriceFeed) -> None:
        from scenarios import feeds

        feeds.feed_delete(feed=instance)

    @extend_schema(
        request=None,
        responses={
            202: PriceFeedPollSerializer,
            503: OpenApiResponse(
                ErrorSerializer, description="The broker is unreachable; nothing was queued."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def poll(self, request: Request, pk: str | None = None) -> Response:
        """Queue a poll of the feed now (a disabled feed too); its ``last_*`` fields show the outcome."""
        from scenarios import feeds

        feed = self.get_object()
        # a broker that is down is an outage: the exception handler answers 503 with Retry-After (api.errors)
        feeds.enqueue_poll(feed_id=feed.pk)
        url = request.build_absolute_uri(reverse("price-feed-detail", kwargs={"pk": feed.pk}))
        return Response(
            {"feed": feed.pk, "status": "queued", "url": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )
