"""Runs: read-only job rows (status, attempts, error, timings, progress)."""

from __future__ import annotations

from django.db.models import QuerySet

from api.filters import RunFilter
from api.serializers.runs import RunSerializer
from api.views.base import TeamScopedReadOnlyViewSet
from scenarios.models import Run


class RunViewSet(TeamScopedReadOnlyViewSet):
    """Runs of your teams' plans, newest first. ``result`` links the result a succeeded run produced."""

    serializer_class = RunSerializer
    filterset_class = RunFilter
    ordering_fields = ("queued_at", "started_at", "finished_at")
    ordering = ("-queued_at", "-id")

    def base_queryset(self) -> QuerySet[Run]:
        return Run.objects.select_related("price_book")
