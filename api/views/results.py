"""Results: read-only, append-only solved reports; GET /results/{id}/diff/ shows what changed."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api.conditional import with_etag
from api.diffing import changes
from api.filters import MAX_ID, ResultFilter
from api.limits import is_id_text
from api.renderers import CSVRenderer
from api.serializers.results import ResultDetailSerializer, ResultDiffSerializer, ResultSerializer
from api.views.base import TeamScopedReadOnlyViewSet
from scenarios.models import Result

# Deferred in lists (a report is tens of KB); ``delta``, a few numbers, is listed.
LARGE_FIELDS = ("input_snapshot", "report", "prices")


@with_etag
class ResultViewSet(TeamScopedReadOnlyViewSet):
    """Results of your teams' plans. Lists carry the promoted figures; one result carries its input
    snapshot (with the prices used), the report and the delta to the previous version. CSV with
    ``Accept: text/csv`` or ``?format=csv``. Every GET carries an ETag; ``If-None-Match`` gets 304 when
    nothing changed."""

    filterset_class = ResultFilter
    extra_query_params: ClassVar[dict[str, tuple[str, ...]]] = {"diff": ("against",)}
    ordering_fields = (
        "created_at",
        "version",
        "step_s",
        "mfu",
        "total_usd",
        "usd_per_million_tokens",
        "total_kgco2e",
    )
    ordering = ("-created_at", "-id")
    renderer_classes = (*TeamScopedReadOnlyViewSet.renderer_classes, CSVRenderer)

    def base_queryset(self) -> QuerySet[Result]:
        queryset = Result.objects.select_related("price_book", "team_price_book")
        if getattr(self, "action", None) == "list":
            queryset = queryset.defer(*LARGE_FIELDS)
        return queryset

    def get_serializer_class(self) -> Any:
        return ResultSerializer if self.action == "list" else ResultDetailSerializer

    @extend_schema(
        responses={200: ResultDiffSerializer},
        parameters=[
            OpenApiParameter(
                "against",
                OpenApiTypes.INT,
                description="Id of the earlier result of the same plan (default: the previous result of the same "
                "kind, so a solve is compared with the last solve).",
            )
        ],
    )
    @action(detail=True, methods=["get"], renderer_classes=TeamScopedReadOnlyViewSet.renderer_classes)
    def diff(self, request: Request, pk: str | None = None) -> Response:
        """What changed between two results of one plan: inputs, prices and report fields, with deltas.

        ``?against=`` names the earlier result, of the same plan and kind (a solve against a solve, a search
        against a search); without it, the result's own ``previous`` (the one its ``delta`` is taken against:
        the plan's current result when it was made), else the previous result of the same kind."""
        after = self.get_object()
        raw = request.query_params.get("against")
        if raw is None:
            before = None
            if after.previous_id is not None:
                before = self.get_queryset().filter(pk=after.previous_id).first()
            if before is None:
                # The previous result of the same kind: a solve against the last solve, never a sweep.
                before = (
                    self.get_queryset()
                    .filter(plan_id=after.plan_id, kind=after.kind, version__lt=after.version)
                    .order_by("-version")
                    .first()
                )
            if before is None:
                raise NotFound(
                    f"This is the plan's first {after.kind} result: there is no previous {after.kind} result "
                    "to compare with (name one with ?against=)."
                )
        else:
            if not is_id_text(raw) or not 1 <= int(raw) <= MAX_ID:
                raise serializers.ValidationError({"against": ["must be a result id (a positive integer)"]})
            before = self.get_queryset().filter(pk=int(raw)).first()
            if before is None:
                raise NotFound("against: no such result.")
            if before.plan_id != after.plan_id:
                raise serializers.ValidationError({"against": ["must be a result of the same plan"]})
            if before.kind != after.kind:
                # a search's figures sit under ``best`` and a sweep's in rows: no path of a solve lines up
                raise serializers.ValidationError(
                    {
                        "against": [
                            f"must be a {after.kind} result, as this one is (it is a {before.kind} result)"
                        ]
                    }
                )
            if before.version >= after.version:
                raise serializers.ValidationError(
                    {
                        "against": [
                            f"must be an earlier result than this one (version {after.version}), got version "
                            f"{before.version}: name the earlier one here, or diff that one against this"
                        ]
                    }
                )
        context = self.get_serializer_context()
        return Response(
            {
                "plan": after.plan_id,
                "before": ResultSerializer(before, context=context).data,
                "after": ResultSerializer(after, context=context).data,
                "inputs": changes(before.input_snapshot, after.input_snapshot),
                "prices": changes(before.prices, after.prices),
                "outputs": changes(before.report, after.report),
            }
        )
