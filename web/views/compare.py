"""The compare page: 2 to 20 plans side by side against a baseline, as charts and a table of differences.

The selection lives in the query string (``?plans=1,2,3&baseline=1``, or repeated ``plans=``), so a
comparison's URL can be shared. The rows are loaded and the table is built by the API's own function
(``api.compare_query.load_comparison``), so the page, the JSON and the CSV download always agree, refuse
the same requests and cost the same queries. The page adds the charts' series, the figures printed for
reading, and the p10-p90 ranges when a report carries them.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path, reverse
from django.views.generic import TemplateView
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from api.compare_query import Comparison, load_comparison, parse_id_list
from api.limits import MAX_COMPARE_ITEMS
from scenarios.models import Plan
from web.access import TeamPageMixin
from web.compare_figures import chart_specs, delta_table

MIN_COMPARE_ITEMS = 2


class SelectionError(Exception):
    """A selection that breaks a rule: ``{parameter: [rule, ...]}``, shown on the page with status 400."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def selected_plan_ids(request: HttpRequest) -> list[int]:
    """``?plans=1,2,3`` or ``?plans=1&plans=2`` (or both): the API's id rules, and 2 to 20 plans."""
    parts = [part for value in request.GET.getlist("plans") for part in value.split(",") if part.strip()]
    if not MIN_COMPARE_ITEMS <= len(parts) <= MAX_COMPARE_ITEMS:
        raise SelectionError(
            {
                "plans": [
                    f"choose from {MIN_COMPARE_ITEMS} to {MAX_COMPARE_ITEMS} plans to compare "
                    f"({len(parts)} chosen)"
                ]
            }
        )
    try:
        return parse_id_list(",".join(parts), name="plans")
    except serializers.ValidationError as exc:
        raise SelectionError(_messages(exc.detail)) from exc


def _messages(detail: Any) -> dict[str, list[str]]:
    if isinstance(detail, dict):
        return {str(key): [str(m) for m in value] for key, value in detail.items()}
    return {"plans": [str(m) for m in detail]}


class CompareView(TeamPageMixin, TemplateView):
    """Page 2: the selection form, then (with 2 to 20 plans chosen) the charts and the delta table."""

    template_name = "web/compare.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        submitted = "plans" in request.GET or "baseline" in request.GET
        raw_baseline = request.GET.get("baseline", "").strip() or None
        context = self.get_context_data(**kwargs)
        comparison: Comparison | None = None
        errors: dict[str, list[str]] = {}
        if submitted:
            try:
                plan_ids = selected_plan_ids(request)
                comparison = load_comparison(
                    plan_ids=plan_ids, result_ids=(), teams=self.access.team_ids, raw_baseline=raw_baseline
                )
            except SelectionError as exc:
                errors = exc.errors
            except serializers.ValidationError as exc:
                errors = _messages(exc.detail)
            except NotFound as exc:
                raise Http404(str(exc.detail)) from exc
        context.update(self.selection_context(request, comparison, raw_baseline))
        context["errors"] = [(field, message) for field, messages in errors.items() for message in messages]
        if comparison is not None:
            context.update(self.comparison_context(comparison))
        return self.render_to_response(context, status=400 if errors else 200)

    def selection_context(
        self, request: HttpRequest, comparison: Comparison | None, raw_baseline: str | None
    ) -> dict[str, Any]:
        """The form's choices: the selected team's live plans, and any other chosen plan (from another of
        the user's teams, or archived) so that the form shows the comparison it came from."""
        team = self.access.team
        options: list[tuple[int, str]] = (
            []
            if team is None
            else list(
                Plan.objects.filter(team_id=team.pk, archived_at__isnull=True)
                .order_by("name", "pk")
                .values_list("pk", "name")
            )
        )
        chosen: set[str] = {
            part.strip()
            for value in request.GET.getlist("plans")
            for part in value.split(",")
            if part.strip()
        }
        if comparison is not None:
            known = {pk for pk, _ in options}
            options += [
                (item.plan_id, item.plan_name) for item in comparison.items if item.plan_id not in known
            ]
        return {
            "nav": "compare",
            "plan_options": [
                {"pk": pk, "name": name, "checked": str(pk) in chosen, "baseline": str(pk) == raw_baseline}
                for pk, name in options
            ],
            "max_plans": MAX_COMPARE_ITEMS,
            "min_plans": MIN_COMPARE_ITEMS,
        }

    def comparison_context(self, comparison: Comparison) -> dict[str, Any]:
        table = comparison.table()
        plan_ids = ",".join(str(item.plan_id) for item in comparison.items)
        baseline = comparison.items[comparison.baseline_index].plan_id
        query = f"plans={plan_ids}&baseline={baseline}"
        charts = chart_specs(table, comparison.items)
        return {
            "table": delta_table(table, comparison.items),
            "items": table["items"],
            "charts": charts,
            "chart_data": {"plans": [item.plan_name for item in comparison.items], "charts": charts},
            "share_url": f"{reverse('web:compare')}?{query}",
            "csv_url": f"{reverse('compare')}?{query}&format=csv",
        }


urlpatterns = [path("compare/", CompareView.as_view(), name="compare")]
