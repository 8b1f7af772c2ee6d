"""Loading a comparison: the plans (or pinned results) of the caller's teams, their report sections, the
baseline and whether each result is still current.

One function, ``load_comparison``, serves both the API (``GET /api/v1/compare/``) and the dashboard's compare
page, so that both read the same rows, refuse the same requests with the same messages and build the same
table (``api.compare.compare_table``). It costs the same number of queries for 2 items as for 20: one for the
rows (reading only the report sections the table uses) and a fixed few for the currency check.

Errors are the API's own: ``rest_framework.exceptions.NotFound`` for ids outside the caller's teams (their
existence does not leak) and ``rest_framework.serializers.ValidationError`` (``{parameter: [rule]}``) for a
request that breaks a rule; the dashboard turns them into its 404 and 400 pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db.models.fields.json import KeyTransform
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from api.compare import REPORT_SECTIONS, CompareItem, compare_table
from api.filters import MAX_ID
from api.limits import MAX_COMPARE_ITEMS, is_id_text
from scenarios.currency import results_currency
from scenarios.models import RUN_KIND_SEARCH, RUN_KIND_SOLVE, Plan, Result

UNUSED_RESULT_FIELDS = ("input_snapshot", "prices", "delta", "report")
# A search result's ``best`` is a whole report (the recommended layout's); a sweep has one row per point.
COMPARABLE_KINDS = (RUN_KIND_SOLVE, RUN_KIND_SEARCH)
# The cloud price a report was solved with (the resolved scenario it carries).
CLOUD_PRICE_PATH = ("scenario", "economics", "cloud_usd_per_gpu_hour")


def parse_id_list(raw: str | None, *, name: str) -> list[int]:
    """Comma-separated ids of parameter ``name``: at most MAX_COMPARE_ITEMS, positive, none twice."""
    if raw is None or raw.strip() == "":
        return []
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) > MAX_COMPARE_ITEMS:
        raise serializers.ValidationError({name: [f"at most {MAX_COMPARE_ITEMS} ids per comparison"]})
    ids: list[int] = []
    for part in parts:
        if not is_id_text(part) or not 1 <= int(part) <= MAX_ID:
            raise serializers.ValidationError(
                {name: [f"{part[:20]!r} is not an id (comma-separated positive integers)"]}
            )
        if int(part) in ids:
            raise serializers.ValidationError({name: [f"id {part} is listed twice"]})
        ids.append(int(part))
    return ids


@dataclass(frozen=True)
class Comparison:
    """The loaded items (each with the report sections the table reads) and the baseline's position."""

    items: list[CompareItem]
    baseline_index: int

    def table(self) -> dict[str, Any]:
        """The comparison table the API returns (and its CSV is made of)."""
        return compare_table(items=self.items, baseline_index=self.baseline_index)


def load_comparison(
    *, plan_ids: Sequence[int], result_ids: Sequence[int], teams: Iterable[int], raw_baseline: str | None
) -> Comparison:
    """The comparison of ``plan_ids`` (each plan's latest result) or of pinned ``result_ids`` (exactly one of
    them non-empty), restricted to ``teams``; ``raw_baseline`` is the baseline parameter as given (a plan id,
    or a result id with ``result_ids``; None for the first listed)."""
    team_ids = list(teams)
    items = _plan_items(plan_ids, team_ids) if plan_ids else _result_items(result_ids, team_ids)
    keys = [item.plan_id for item in items] if plan_ids else [item.result_id for item in items]
    baseline_index = 0
    if raw_baseline is not None:
        if not is_id_text(raw_baseline) or int(raw_baseline) not in keys:
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
    return Comparison(items=items, baseline_index=baseline_index)


def _plan_items(plan_ids: Sequence[int], teams: list[int]) -> list[CompareItem]:
    # One query: the plans with their latest result and its price book, reading only the report sections the
    # table shows (a report's assumptions ledger is most of its size).
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


def _result_items(result_ids: Sequence[int], teams: list[int]) -> list[CompareItem]:
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
        raise NotFound(f"results: no such result among your teams' results: {', '.join(map(str, missing))}")
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
