"""GET /compare/: plans side by side (latest results, or pinned result ids) with deltas against a baseline."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.compare import compare_csv_table
from api.compare_query import load_comparison, parse_id_list
from api.conditional import with_etag
from api.limits import MAX_COMPARE_ITEMS
from api.permissions import team_roles
from api.renderers import CSVRenderer
from api.views.base import AuthenticatedAPIView


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Dotted path of the figure in the report document.")
    group = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    unit = serializers.CharField()


class RangeSerializer(serializers.Serializer):
    p10 = serializers.FloatField()
    p50 = serializers.FloatField()
    p90 = serializers.FloatField()


class CellSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True, help_text="value - baseline value")
    delta_pct = serializers.FloatField(allow_null=True, help_text="100 * (value - baseline) / |baseline|")
    range = RangeSerializer(
        allow_null=True,
        help_text="The figure's p10, p50 and p90 from the report's ranges; null when the report has none.",
    )
    within_uncertainty = serializers.BooleanField(
        allow_null=True,
        help_text="True when this plan's p10-p90 range and the baseline's overlap (with one range only: the "
        "other figure lies in it), so the delta is within the uncertainty; null for the baseline and when "
        "neither has a range.",
    )


class CompareItemSerializer(serializers.Serializer):
    plan = serializers.IntegerField()
    plan_name = serializers.CharField()
    result = serializers.IntegerField(allow_null=True, help_text="Null when the plan has no result yet.")
    result_version = serializers.IntegerField(allow_null=True)
    kind = serializers.CharField(
        allow_null=True, help_text="solve, or search (its best layout's report is compared)."
    )
    solver_version = serializers.CharField(allow_null=True, help_text="The solver that made these figures.")
    price_book_version = serializers.IntegerField(
        allow_null=True, help_text="The global price book's version."
    )
    team_price_book_version = serializers.IntegerField(
        allow_null=True, help_text="The version of the team's own price book, when it had one."
    )
    created_at = serializers.DateTimeField(allow_null=True)
    current = serializers.BooleanField(
        allow_null=True,
        help_text="False when the solver, the plan's inputs, its revisions or its prices changed since.",
    )
    fits = serializers.BooleanField(allow_null=True, help_text="Whether the layout fits in GPU memory.")
    layout = serializers.JSONField(allow_null=True, help_text="The layout the figures were solved with.")
    cloud_usd_per_gpu_hour = serializers.FloatField(
        allow_null=True, help_text="The cloud price the cloud alternative (tco.cloud_usd) uses."
    )
    warnings = serializers.ListField(child=serializers.CharField(), help_text="The report's own warnings.")
    flags = serializers.ListField(
        child=serializers.CharField(),
        help_text="What to read before the figures: not fitting in memory, not current (and why).",
    )
    baseline = serializers.BooleanField()
    values = serializers.DictField(child=CellSerializer(), help_text="By metric key.")


class BaselineSerializer(serializers.Serializer):
    plan = serializers.IntegerField()
    result = serializers.IntegerField(allow_null=True)


class CompareSerializer(serializers.Serializer):
    baseline = BaselineSerializer()
    metrics = MetricSerializer(many=True)
    items = CompareItemSerializer(many=True)


@with_etag
class CompareView(AuthenticatedAPIView):
    """Plans side by side by step budget, time to train, goodput, energy, carbon and TCO.

    ``?plans=1,2,3`` compares each plan's latest result; ``?results=10,11`` pins result ids instead (a
    search result is compared by its best layout's report; a sweep result, one row per point, cannot be
    compared and is refused with 400). Each row says whether the plan fits in memory, whether its result is
    still current, the layout, the cloud price and the warnings.
    ``baseline`` is the plan id (or, with ``results``, the result id) the deltas are taken against; it
    defaults to the first listed. Each figure carries its delta in absolute terms and in percent, its range
    (p10, p50, p90) where the report has one, and whether the delta is within the uncertainty (the ranges
    overlap).
    ``Accept: text/csv`` or ``?format=csv`` gives the same table as CSV, one row per plan.
    The answer carries an ETag; ``If-None-Match`` gets 304 when the comparison has not changed.
    """

    throttle_scope = "compare"
    extra_query_params: ClassVar[dict[str, tuple[str, ...]]] = {"get": ("plans", "results", "baseline")}
    renderer_classes = (*AuthenticatedAPIView.renderer_classes, CSVRenderer)
    csv_filename = "compare.csv"

    def csv_table(self, data: Any) -> tuple[list[str], list[list[Any]]]:
        return compare_csv_table(data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "plans",
                OpenApiTypes.STR,
                description=f"Comma-separated plan ids (at most {MAX_COMPARE_ITEMS}).",
            ),
            OpenApiParameter(
                "results", OpenApiTypes.STR, description="Comma-separated result ids (instead of plans)."
            ),
            OpenApiParameter(
                "baseline", OpenApiTypes.INT, description="Plan id (or result id with results=)."
            ),
        ],
        responses={200: OpenApiResponse(CompareSerializer)},
        tags=["compare"],
    )
    def get(self, request: Request) -> Response:
        plan_ids = parse_id_list(request.query_params.get("plans"), name="plans")
        result_ids = parse_id_list(request.query_params.get("results"), name="results")
        if bool(plan_ids) == bool(result_ids):
            raise serializers.ValidationError(
                {"plans": ["give either plans=... or results=... (one of them)"]}
            )
        comparison = load_comparison(
            plan_ids=plan_ids,
            result_ids=result_ids,
            teams=team_roles(request),
            raw_baseline=request.query_params.get("baseline"),
        )
        return Response(comparison.table())
