"""GET /compare/: plans side by side (latest results, or pinned result ids) with deltas against a baseline."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db.models.fields.json import KeyTransform
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api.compare import REPORT_SECTIONS, CompareItem, compare_csv_table, compare_table
from api.filters import MAX_ID
from api.limits import MAX_COMPARE_ITEMS
from api.permissions import team_roles
from api.renderers import CSVRenderer
from api.views.base import AuthenticatedAPIView
from scenarios.currency import results_currency
from scenarios.models import RUN_KIND_SEARCH, RUN_KIND_SOLVE, Result


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Dotted path of the figure in the report document.")
    group = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    unit = serializers.CharField()


class CellSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True, help_text="value - baseline value")
    delta_pct = serializers.FloatField(allow_null=True, help_text="100 * (value - baseline) / |baseline|")


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


def parse_id_list(raw: str | None, *, name: str) -> list[int]:
    if raw is None or raw.strip() == "":
        return []
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) > MAX_COMPARE_ITEMS:
        raise serializers.ValidationError({name: [f"at most {MAX_COMPARE_ITEMS} ids per comparison"]})
    ids: list[int] = []
    for part in parts:
        if not part.isdigit() or not 1 <= int(part) <= MAX_ID:
            raise serializers.ValidationError(
                {name: [f"{part[:20]!r} is not an id (comma-separated positive integers)"]}
            )
        if int(part) in ids:
            raise serializers.ValidationError({name: [f"id {part} is listed twice"]})
        ids.append(int(part))
    return ids


class CompareView(AuthenticatedAPIView):
    """Plans side by side by step budget, time to train, goodput, energy, carbon and TCO.

    ``?plans=1,2,3`` compares each plan's latest result; ``?results=10,11`` pins result ids instead (a
    search result is compared by its best layout's report; a sweep result, one row per point, cannot be
    compared and is refused with 400). Each row says whether the plan fits in memory, whether its result is
    still current, the layout, the cloud price and the warnings.
    ``baseline`` is the plan id (or, with ``results``, the result id) the deltas are taken against; it
    defaults to the first listed. Each figure carries its delta in absolute terms and in percent.
    ``Accept: text/csv`` or ``?format=csv`` gives the same table as CSV, one row per plan.
    """

    throttle_scope = "compare"
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
        raw_baseline = request.query_params.get("baseline")
        teams = list(team_roles(request))
        items = self._plan_items(plan_ids, teams) if plan_ids else self._result_items(result_ids, teams)
        keys = [item.plan_id for item in items] if plan_ids else [item.result_id for item in items]
        baseline_index = 0
        if raw_baseline is not None:
            if not raw_baseline.isdigit() or int(raw_baseline) not in keys:
                name = "a plan id" if plan_ids else "a result id"
                raise serializers.ValidationError({"baseline": [f"must be {name} listed in the comparison"]})
            baseline_index = keys.index(int(raw_baseline))
        currency = results_currency([item.result_id for item in items if item.result_id is not None])
        items = [
            item
            if item.result_id is None
            else replace(
                item,
                current=currency[item.result_id].current,
                stale_reasons=currency[item.result_id].reasons,
            )
            for item in items
        ]
        return Response(compare_table(items=items, baseline_index=baseline_index))

    def _plan_items(self, plan_ids: list[int], teams: list[int]) -> list[CompareItem]:
        from scenarios.models import Plan

        # One query: the plans with their latest result and its price book, reading only the report sections
        # the table shows (a report's assumptions ledger is most of its size).
        plans = {
            plan.pk: plan
            for plan in Plan.objects.filter(pk__in=plan_ids, team_id__in=teams)
            .select_related("latest_result", "latest_result__price_book", "latest_result__team_price_book")
            .defer(*(f"latest_result__{name}" for name in UNUSED_RESULT_FIELDS))
            .annotate(**report_sections("latest_result__report"))
        }
        missing = [pk for pk in plan_ids if pk not in plans]
        if missing:
            raise NotFound(f"plans: no such plan among your teams' plans: {', '.join(map(str, missing))}")
        out = []
        for pk in plan_ids:
            plan = plans[pk]
            out.append(_item(plan_id=plan.pk, plan_name=plan.name, result=plan.latest_result, sections=plan))
        return out

    def _result_items(self, result_ids: list[int], teams: list[int]) -> list[CompareItem]:
        rows = {
            result.pk: result
            for result in Result.objects.filter(pk__in=result_ids, team_id__in=teams)
            .select_related("plan", "price_book", "team_price_book")
            .only(
                "id",
                "plan_id",
                "version",
                "kind",
                "solver_version",
                "created_at",
                "price_book__version",
                "team_price_book__version",
                "plan__id",
                "plan__name",
            )
            .annotate(**report_sections("report"), **report_sections("report", prefix="best_", under="best"))
        }
        missing = [pk for pk in result_ids if pk not in rows]
        if missing:
            raise NotFound(
                f"results: no such result among your teams' results: {', '.join(map(str, missing))}"
            )
        refused = {pk: rows[pk].kind for pk in result_ids if rows[pk].kind not in COMPARABLE_KINDS}
        if refused:
            raise serializers.ValidationError(
                {
                    "results": [
                        f"result {pk} is a {kind} result: it holds one row per point, not one report, so it "
                        "cannot be compared; compare solve or search results (a search is compared by its "
                        "best layout)"
                        for pk, kind in refused.items()
                    ]
                }
            )
        return [
            _item(plan_id=rows[pk].plan_id, plan_name=rows[pk].plan.name, result=rows[pk], sections=rows[pk])
            for pk in result_ids
        ]


UNUSED_RESULT_FIELDS = ("input_snapshot", "prices", "delta", "report")
# A search result's ``best`` is a whole report (the recommended layout's); a sweep has one row per point.
COMPARABLE_KINDS = (RUN_KIND_SOLVE, RUN_KIND_SEARCH)
# The cloud price a report was solved with (the resolved scenario it carries).
CLOUD_PRICE_PATH = ("scenario", "economics", "cloud_usd_per_gpu_hour")


def _json_path(field: str, path: tuple[str, ...]) -> Any:
    expression: Any = field
    for key in path:
        expression = KeyTransform(key, expression)
    return expression


def report_sections(field: str, *, prefix: str = "", under: str | None = None) -> dict[str, Any]:
    """Annotations that read each report section the table uses (and the cloud price) straight from the
    JSONB column; ``under`` reads them from a sub-document (a search's ``best`` report)."""
    base = (under,) if under else ()
    out = {f"{prefix}section_{name}": _json_path(field, (*base, name)) for name in REPORT_SECTIONS}
    out[f"{prefix}cloud_price"] = _json_path(field, (*base, *CLOUD_PRICE_PATH))
    return out


def _number_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _item(*, plan_id: int, plan_name: str, result: Result | None, sections: Any) -> CompareItem:
    prefix = "best_" if result is not None and result.kind == RUN_KIND_SEARCH else ""
    return CompareItem(
        plan_id=plan_id,
        plan_name=plan_name,
        result_id=None if result is None else result.pk,
        result_version=None if result is None else result.version,
        solver_version=None if result is None else result.solver_version,
        price_book_version=None if result is None or result.price_book is None else result.price_book.version,
        team_price_book_version=None
        if result is None or result.team_price_book is None
        else result.team_price_book.version,
        created_at=None if result is None else result.created_at,
        report=None
        if result is None
        else {name: getattr(sections, f"{prefix}section_{name}") for name in REPORT_SECTIONS},
        kind=None if result is None else result.kind,
        cloud_usd_per_gpu_hour=None
        if result is None
        else _number_or_none(getattr(sections, f"{prefix}cloud_price")),
    )
