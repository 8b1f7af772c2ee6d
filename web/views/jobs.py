"""Searches and sweeps: start one on a plan, watch its progress, read its Pareto front and best layouts.

The job runs as the API's does (``scenarios.search_jobs``); the page polls ``/api/v1/runs/<id>/`` (the
browser session is accepted there) and shows the stored result once the run succeeded. Another team's run
or plan is a 404; starting a job needs the editor role on the plan's team (a viewer gets 403 and sees no
start controls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, path, reverse
from django.views.generic import TemplateView

from api.limits import is_id_text
from scenarios.models import (
    ACTIVE_STATUSES,
    ROLE_EDITOR,
    RUN_KIND_SEARCH,
    RUN_KIND_SWEEP,
    STATUS_SUCCEEDED,
    Plan,
    Run,
)
from web.access import TeamPageMixin
from web.budget import SpendsBudgetMixin
from web.job_forms import METRIC_LABELS, SWEEP_FIELD_SUGGESTIONS, form_for
from web.templatetags.planner_format import sig, usd

JOB_KINDS = (RUN_KIND_SEARCH, RUN_KIND_SWEEP)
LIST_LIMIT = 50
LAYOUT_KEYS: tuple[tuple[str, str], ...] = (
    ("tp", "TP"),
    ("pp", "PP"),
    ("cp", "CP"),
    ("dp", "DP"),
    ("ep", "EP"),
    ("microbatch_seqs", "Microbatch"),
)


def plan_url(plan_id: int) -> str:
    """The plan's dashboard page (``web:plan-detail``, ``/plans/<pk>/``)."""
    try:
        return reverse("web:plan-detail", args=[plan_id])
    except NoReverseMatch:  # the plan pages register their routes in web.views.plans
        return f"/plans/{plan_id}/"


def unit_of(kind: str) -> str:
    return "layouts" if kind == RUN_KIND_SEARCH else "points"


def _int_or_404(raw: str | None) -> int:
    if raw is None or not is_id_text(raw):
        raise Http404("no such plan")
    return int(raw)


class JobListView(TeamPageMixin, TemplateView):
    """The selected team's recent searches and sweeps (one query for the runs, whatever their number)."""

    template_name = "web/jobs/list.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        team = self.access.team
        runs: list[Run] = []
        plans: list[Plan] = []
        if team is not None:
            runs = list(
                Run.objects.filter(team_id=team.pk, kind__in=JOB_KINDS)
                .select_related("plan")
                .only(
                    "pk",
                    "kind",
                    "status",
                    "queued_at",
                    "started_at",
                    "finished_at",
                    "points_done",
                    "points_total",
                    "plan_id",
                    "plan__name",
                )
                .order_by("-queued_at", "-id")[:LIST_LIMIT]
            )
            if context["can_edit"]:
                plans = list(
                    Plan.objects.filter(team_id=team.pk, archived_at__isnull=True)
                    .only("pk", "name")
                    .order_by("name", "pk")
                )
        context.update(
            nav="jobs",
            rows=[{"run": run, "unit": unit_of(run.kind), "plan_url": plan_url(run.plan_id)} for run in runs],
            plans=plans,
            kinds=JOB_KINDS,
        )
        return context


class JobNewView(SpendsBudgetMixin, TeamPageMixin, TemplateView):
    """``/jobs/new/?plan=<id>&kind=search|sweep``: the options of a search or a sweep of one plan."""

    budget_scope = "run"  # as the API's search and sweep

    template_name = "web/jobs/new.html"

    def setup_job(self, request: HttpRequest) -> None:
        kind = request.GET.get("kind", "")
        if kind not in JOB_KINDS:
            raise Http404("kind must be search or sweep")
        plan = (
            Plan.objects.filter(pk=_int_or_404(request.GET.get("plan")), team_id__in=self.access.team_ids)
            .only("pk", "name", "team_id", "archived_at")
            .first()
        )
        if plan is None:
            raise Http404("no such plan")
        self.access.require(ROLE_EDITOR, plan.team_id)
        self.kind, self.plan = kind, plan

    def page(self, form: Any, *, status: int = 200) -> HttpResponse:
        context = self.get_context_data(form=form)
        return render(self.request, self.template_name, context, status=status)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            nav="jobs",
            kind=self.kind,
            plan=self.plan,
            plan_url=plan_url(self.plan.pk),
            field_suggestions=SWEEP_FIELD_SUGGESTIONS,
            button="Start search" if self.kind == RUN_KIND_SEARCH else "Start sweep",
            heading="Start a search" if self.kind == RUN_KIND_SEARCH else "Start a sweep",
        )
        return context

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        self.setup_job(request)
        return self.page(form_for(self.kind))

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        self.setup_job(request)
        form = form_for(self.kind, request.POST)
        run = form.start(plan=self.plan, user=request.user) if form.is_valid() else None
        if run is None:
            return self.page(form, status=400)
        return HttpResponseRedirect(reverse("web:job-detail", args=[run.pk]))


class JobDetailView(TeamPageMixin, TemplateView):
    """One search or sweep: live progress while it runs, then its Pareto front and best layouts."""

    template_name = "web/jobs/detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        run = (
            Run.objects.filter(pk=kwargs["run_id"], team_id__in=self.access.team_ids, kind__in=JOB_KINDS)
            .select_related("plan", "result")
            .defer("params", "result__input_snapshot", "result__prices", "result__delta")
            .first()
        )
        if run is None:
            raise Http404("no such search or sweep")
        unit = unit_of(run.kind)
        context.update(
            nav="jobs",
            run=run,
            unit=unit,
            active=run.status in ACTIVE_STATUSES,
            kind_label="Search" if run.kind == RUN_KIND_SEARCH else "Sweep",
            plan_url=plan_url(run.plan_id),
            can_start=self.access.can(ROLE_EDITOR, run.team_id),
            new_url=f"{reverse('web:job-new')}?plan={run.plan_id}",
            api_run_url=reverse("run-detail", kwargs={"pk": run.pk}),
            job_data={
                "url": reverse("run-detail", kwargs={"pk": run.pk}),
                "status": run.status,
                "unit": unit,
            },
        )
        if run.status == STATUS_SUCCEEDED and run.result is not None:
            report = run.result.report
            context["api_result_url"] = reverse("result-detail", kwargs={"pk": run.result_id})
            context.update(sweep_view(report) if run.kind == RUN_KIND_SWEEP else search_view(report))
        return context


# --- The stored report as the page shows it ------------------------------------------------------------


def _settings_text(layout: Mapping[str, Any]) -> str:
    """What else tells two layouts of the same parallelism apart (ZeRO stage, schedule, recompute)."""
    if not layout:
        return ""
    parts = [
        f"ZeRO {layout.get('zero_stage')}",
        str(layout.get("schedule")),
        f"recompute {layout.get('recompute')}",
    ]
    return ", ".join(parts)


def _support(support: Any) -> dict[str, Any] | None:
    """A layout's place against the validated runs (CONTRACT.md "Support") as the table shows it: inside, or
    outside with the reasons; None for a result stored before layouts carried it."""
    if not isinstance(support, Mapping) or "within_validated" not in support:
        return None
    reasons = [str(reason) for reason in support.get("reasons") or []]
    return {"inside": support["within_validated"] is True, "reasons": "; ".join(reasons)}


def _row(
    *,
    layout: Mapping[str, Any],
    metrics: Mapping[str, Any],
    mfu: Any,
    fits: Any,
    pareto: bool,
    support: Any = None,
) -> dict[str, Any]:
    kg = metrics.get("total_kgco2e")
    return {
        "support": _support(support),
        "layout": [layout.get(key) for key, _ in LAYOUT_KEYS],
        "layout_text": ", ".join(f"{label.lower()} {layout.get(key)}" for key, label in LAYOUT_KEYS)
        if layout
        else "",
        "settings": _settings_text(layout),
        "step_s": metrics.get("step_s"),
        "mfu": mfu,
        "days": metrics.get("wall_clock_days"),
        "total_usd": metrics.get("total_usd"),
        "usd_per_million_tokens": metrics.get("usd_per_million_tokens"),
        "tco2e": kg / 1000 if isinstance(kg, int | float) else None,
        "fits": fits,
        "pareto": pareto,
        "error": None,
    }


def search_view(report: Mapping[str, Any]) -> dict[str, Any]:
    """The best layout, the alternatives and the Pareto rows of a search, one row per layout by rank.

    Every layout a search lists is feasible (layouts that do not fit in memory are rejected), so ``fits``
    is the best layout's memory verdict and true for the others."""
    best = report.get("best") or {}
    front = {int(item["rank"]) for item in report.get("pareto") or []}
    rows: dict[int, dict[str, Any]] = {}
    if best:
        metrics = {
            "step_s": (best.get("step") or {}).get("step_s"),
            "wall_clock_days": (best.get("schedule") or {}).get("wall_clock_days"),
            "total_usd": (best.get("tco") or {}).get("total_usd"),
            "usd_per_million_tokens": (best.get("tco") or {}).get("usd_per_million_tokens"),
            "total_kgco2e": (best.get("carbon") or {}).get("total_kgco2e"),
        }
        rows[1] = _row(
            layout=best.get("layout") or {},
            metrics=metrics,
            mfu=(best.get("step") or {}).get("mfu"),
            fits=(best.get("memory") or {}).get("fits"),
            pareto=1 in front,
            support=best.get("support"),
        )
    for item in [*(report.get("alternatives") or []), *(report.get("pareto") or [])]:
        rank = int(item["rank"])
        if rank not in rows:
            rows[rank] = _row(
                layout=item.get("layout") or {},
                metrics=item.get("metrics") or {},
                mfu=item.get("mfu"),
                fits=item.get("fits", True),
                pareto=rank in front,
                support=item.get("support"),
            )
    table = [{**row, "rank": rank} for rank, row in sorted(rows.items())]
    objective = str(report.get("objective") or "step_s")
    baseline = report.get("baseline") or {}
    return {
        "objective": objective,
        "objective_label": METRIC_LABELS.get(objective, objective),
        "pareto_objectives": [METRIC_LABELS.get(m, m) for m in report.get("pareto_objectives") or []],
        "table": table,
        "summary": {
            "evaluated": report.get("evaluated"),
            "feasible": report.get("feasible"),
            "pareto_size": report.get("pareto_size"),
            "elapsed_s": report.get("elapsed_s"),
        },
        "baseline_summary": (baseline.get("versus_best") or {}).get("summary"),
        "chart": _chart(
            table, y_key="step_s", y_label="Step time (s)", noun="layouts", label_key="layout_text"
        ),
    }


def _point_text(point: Mapping[str, Any], fields: Sequence[str]) -> str:
    return ", ".join(f"{field} = {point.get(field)}" for field in fields)


def sweep_view(report: Mapping[str, Any]) -> dict[str, Any]:
    """One row per point (its swept values, its best layout and figures), sorted by the objective; rows of
    points that break a rule come last with the rule."""
    fields = [str(axis["field"]) for axis in report.get("axes") or []]
    objective = str(report.get("objective") or "step_s")
    front = {int(i) for i in report.get("pareto") or []}
    table: list[dict[str, Any]] = []
    for position, item in enumerate(report.get("rows") or []):
        point = item.get("point") or {}
        best = item.get("best")
        if best:
            row = _row(
                layout=best.get("layout") or {},
                metrics=best.get("metrics") or {},
                mfu=best.get("mfu"),
                fits=True,
                pareto=position in front,
                support=best.get("support"),
            )
            key = (0, float((best.get("metrics") or {}).get(objective) or 0.0), position)
        else:
            error = item.get("error") or {}
            row = _row(layout={}, metrics={}, mfu=None, fits=None, pareto=False)
            row["error"] = f"{error.get('path', '')}: {error.get('message', '')}".strip(": ")
            key = (1, 0.0, position)
        row.update(
            point_values=[point.get(field) for field in fields],
            point_text=_point_text(point, fields),
            key=key,
        )
        table.append(row)
    table.sort(key=lambda row: row["key"])
    return {
        "objective": objective,
        "objective_label": METRIC_LABELS.get(objective, objective),
        "pareto_objectives": [METRIC_LABELS.get(m, m) for m in report.get("pareto_objectives") or []],
        "axis_fields": fields,
        "table": table,
        "summary": {
            "points": report.get("points"),
            "solved": report.get("solved"),
            "failed": report.get("failed"),
            "elapsed_s": report.get("elapsed_s"),
        },
        "chart": _chart(
            table, y_key="days", y_label="Time to train (days)", noun="points", label_key="point_text"
        ),
    }


def _chart(
    table: Sequence[Mapping[str, Any]], *, y_key: str, y_label: str, noun: str, label_key: str
) -> dict[str, Any]:
    """The scatter's data (for ``json_script``) and the summary its canvas announces."""
    points = [
        {
            "x": row["total_usd"],
            "y": row[y_key],
            "carbon_t": row["tco2e"],
            "label": row[label_key]
            if label_key != "layout_text"
            else f"{row[label_key]} ({row['settings']})",
            "pareto": row["pareto"],
        }
        for row in table
        if isinstance(row.get("total_usd"), int | float) and isinstance(row.get(y_key), int | float)
    ]
    on_front = sum(1 for p in points if p["pareto"])
    summary = (
        f"Scatter of {y_label.lower()} against TCO (USD) for {len(points)} {noun}; {on_front} on the Pareto "
        "front, highlighted; point size shows tCO2e."
    )
    if points:
        first = points[0]
        unit = " s" if y_key == "step_s" else " days"
        summary += (
            f" Best by the objective: {first['label']}, {sig(first['y'])}{unit}, TCO {usd(first['x'])}, "
            f"{sig(first['carbon_t'])} tCO2e."
        )
    data = {"x_label": "TCO (USD)", "y_label": y_label, "points": points, "noun": noun}
    return {"data": data, "summary": summary}


urlpatterns = [
    path("jobs/", JobListView.as_view(), name="jobs"),
    path("jobs/new/", JobNewView.as_view(), name="job-new"),
    path("jobs/<int:run_id>/", JobDetailView.as_view(), name="job-detail"),
]
