"""Plans: the team's list (figures, fit, currency, run status), a new plan, a plan's report, run now.

Every page reads rows of the user's teams only (another team's plan is a 404) and every write goes through
``scenarios.services`` with the editor role on the plan's team, as the API's ``PlanViewSet`` does. A page's
query count does not grow with its rows: the list reads its plans, their latest results and scenarios in one
query (the latest run is a subquery of it), and whether each result is current in a fixed handful.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.views import View

from scenarios.adapters import PLAN_RELATED
from scenarios.currency import results_currency
from scenarios.models import ACTIVE_STATUSES, ROLE_EDITOR, TRIGGER_USER, Plan, Run
from web import plan_report
from web.access import TeamAccess, TeamPageMixin
from web.budget import SpendsBudgetMixin
from web.plan_forms import NO_RUN, SORT_KEYS, PlanListForm, PresetPlanForm, UploadPlanForm

PAGE_SIZE = 50
# The large documents of a result; a list reads only its promoted figures.
RESULT_DOCUMENTS = ("report", "input_snapshot", "prices", "delta")


def _page(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    access: TeamAccess = context["access"]
    context.setdefault("can_edit", access.can(ROLE_EDITOR))
    context.setdefault("nav", "plans")
    return render(request, f"web/plans/{template}", context, status=status)


def _latest_run() -> QuerySet[Run]:
    return Run.objects.filter(plan_id=OuterRef("pk")).order_by("-queued_at", "-id")


def _fits() -> Coalesce:
    """``memory.fits`` of the latest result's report (a search or sweep keeps it under ``best``)."""
    report = "latest_result__report"
    return Coalesce(
        KeyTransform("fits", KeyTransform("memory", report)),
        KeyTransform("fits", KeyTransform("memory", KeyTransform("best", report))),
    )


def _list_queryset(access: TeamAccess, filters: dict[str, Any]) -> QuerySet[Plan]:
    queryset = (
        Plan.objects.filter(team=access.team, archived_at__isnull=True)
        .select_related(*PLAN_RELATED, "latest_result")
        .defer(*(f"latest_result__{name}" for name in RESULT_DOCUMENTS))
        .annotate(
            run_id=Subquery(_latest_run().values("pk")[:1]),
            run_status=Subquery(_latest_run().values("status")[:1]),
            run_kind=Subquery(_latest_run().values("kind")[:1]),
            fits=_fits(),
        )
    )
    if filters.get("q"):
        queryset = queryset.filter(name__icontains=filters["q"])
    status = filters.get("status")
    if status == NO_RUN:
        queryset = queryset.filter(run_status__isnull=True)
    elif status:
        queryset = queryset.filter(run_status=status)
    if filters.get("fits") == "yes":
        queryset = queryset.filter(fits=True)
    elif filters.get("fits") == "no":
        queryset = queryset.filter(fits=False)
    sort: str = filters.get("sort") or "name"
    column = F(SORT_KEYS[sort.removeprefix("-")].field)
    ordering = column.desc(nulls_last=True) if sort.startswith("-") else column.asc(nulls_last=True)
    return queryset.order_by(ordering, "name", "pk")


class PlanListView(TeamPageMixin, View):
    """The selected team's live plans with their latest figures; filter, search, sort, compare."""

    def get(self, request: HttpRequest) -> HttpResponse:
        form = PlanListForm(request.GET)
        context: dict[str, Any] = {"access": self.access, "form": form, "sort_keys": SORT_KEYS}
        if not form.is_valid():
            context.update(rows=[], page_obj=None, sort_links=_sort_links("", "name"))
            return _page(request, "list.html", context, status=400)
        filters = form.cleaned_data
        queryset = _list_queryset(self.access, filters) if self.access.team else Plan.objects.none()
        wanted = filters.get("current")
        if wanted and self.access.team is not None:
            # Currency is worked out in Python (scenarios.currency): for every matching plan, in a fixed
            # number of queries, then the list keeps those that match.
            pairs = list(queryset.values_list("pk", "latest_result_id"))
            currency = results_currency([rid for _, rid in pairs if rid is not None])
            keep = [pk for pk, rid in pairs if rid is not None and currency[rid].current == (wanted == "yes")]
            queryset = queryset.filter(pk__in=keep)
        paginator = Paginator(queryset, PAGE_SIZE)
        page_obj = paginator.get_page(filters.get("page") or 1)
        plans = list(page_obj.object_list)
        currency = results_currency([p.latest_result_id for p in plans if p.latest_result_id is not None])
        rows = [
            {
                "plan": plan,
                "setup": plan_report.plan_setup(plan),
                "result": plan.latest_result,
                "tco2e": (
                    plan.latest_result.total_kgco2e / 1000
                    if plan.latest_result is not None and plan.latest_result.total_kgco2e is not None
                    else None
                ),
                "currency": currency.get(plan.latest_result_id) if plan.latest_result_id else None,
            }
            for plan in plans
        ]
        query = request.GET.copy()
        query.pop("page", None)
        query.pop("sort", None)
        context.update(
            rows=rows,
            page_obj=page_obj,
            sort_links=_sort_links(query.urlencode(), filters.get("sort") or "name"),
            page_query=_without(request, "page"),
        )
        return _page(request, "list.html", context)


def _sort_links(base_query: str, sort: str) -> dict[str, dict[str, str]]:
    """For each sortable column: the URL that sorts by it (ascending first, then flipping) and its
    ``aria-sort`` state."""
    links = {}
    for key in SORT_KEYS:
        state, following = "none", key
        if sort == key:
            state, following = "ascending", f"-{key}"
        elif sort == f"-{key}":
            state, following = "descending", key
        prefix = f"?{base_query}&" if base_query else "?"
        links[key] = {"url": f"{prefix}sort={following}", "state": state}
    return links


def _without(request: HttpRequest, name: str) -> str:
    query = request.GET.copy()
    query.pop(name, None)
    return query.urlencode()


class PlanCreateView(SpendsBudgetMixin, TeamPageMixin, View):
    """A new plan for the selected team, from the catalog's presets or from a scenario file."""

    budget_scope = "solve"  # the plan is checked as a solve checks it (web.budget)

    def _require(self) -> None:
        self.access.require(ROLE_EDITOR)

    def _render(
        self, request: HttpRequest, preset: PresetPlanForm, upload: UploadPlanForm, status: int = 200
    ) -> HttpResponse:
        context = {"access": self.access, "preset": preset, "upload": upload, "team": self.access.team}
        return _page(request, "create.html", context, status=status)

    def get(self, request: HttpRequest) -> HttpResponse:
        self._require()
        return self._render(request, PresetPlanForm(), UploadPlanForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        self._require()
        team = self.access.team
        assert team is not None  # require() passed, so a team is selected
        if request.POST.get("form") == "upload":
            upload = UploadPlanForm(request.POST, request.FILES)
            preset = PresetPlanForm()
            plan = upload.create(team=team, user=request.user) if upload.is_valid() else None
        else:
            preset = PresetPlanForm(request.POST)
            upload = UploadPlanForm()
            plan = preset.create(team=team, user=request.user) if preset.is_valid() else None
        if plan is None:
            return self._render(request, preset, upload, status=400)
        messages.success(request, f"Plan “{plan.name}” created. Run it to see its figures.")
        return HttpResponseRedirect(reverse("web:plan-detail", kwargs={"pk": plan.pk}))


def _team_plan(access: TeamAccess, pk: int, *related: str) -> Plan:
    """A plan of one of the user's teams (another team's plan is a 404, so its existence does not leak)."""
    return get_object_or_404(Plan.objects.select_related(*related), pk=pk, team_id__in=access.team_ids)


class PlanDetailView(TeamPageMixin, View):
    """One plan's latest report, its assumptions and every result version with what changed."""

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        # The run first: a worker stores a result and marks its run succeeded in one transaction, and each
        # statement reads what was committed when it began, so a run read as finished guarantees that the
        # plan and results read after it hold its result. Read the other way round, a page drawn while the
        # worker committed showed the run finished and no result, and stopped following the run.
        run = Run.objects.filter(plan_id=pk).order_by("-queued_at", "-id").first()
        plan = _team_plan(
            self.access,
            pk,
            *PLAN_RELATED,
            "team",
            "latest_result__price_book",
            "latest_result__team_price_book",
        )
        results = list(
            plan.results.select_related("price_book", "team_price_book").defer("report").order_by("-version")
        )
        currency = results_currency([result.pk for result in results])
        report = plan_report.shown_report(plan.latest_result)
        latest = plan.latest_result
        context: dict[str, Any] = {
            "access": self.access,
            "can_edit": self.access.can(ROLE_EDITOR, plan.team_id),
            "plan": plan,
            "setup": plan_report.plan_setup(plan),
            "latest": latest,
            "latest_currency": currency.get(latest.pk) if latest is not None else None,
            "report": report,
            "is_best_of_job": latest is not None and report is not latest.report,
            "versions": plan_report.versions(results, currency),
            "run": run,
            "run_active": run is not None and run.status in ACTIVE_STATUSES,
            "run_api_url": reverse("run-detail", kwargs={"pk": run.pk}) if run is not None else "",
        }
        if report is not None:
            context.update(
                cards=plan_report.headline_cards(report),
                sections=plan_report.report_sections(report),
                layout=plan_report.layout_rows(report),
                layout_summary=plan_report.layout_summary(report),
                warnings=[str(w) for w in report.get("warnings") or []],
                assumptions=plan_report.assumptions(report),
            )
        return _page(request, "detail.html", context)


class PlanRunView(SpendsBudgetMixin, TeamPageMixin, View):
    """Queue a solve of the plan's current inputs (``services.run_request``, as the API's ``run`` action)."""

    budget_scope = "run"

    http_method_names = ["post"]  # noqa: RUF012

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        from scenarios import services

        plan = _team_plan(self.access, pk)
        self.access.require(ROLE_EDITOR, plan.team_id)
        detail = reverse("web:plan-detail", kwargs={"pk": plan.pk})
        if plan.archived_at is not None:
            messages.error(request, "plan: the plan is archived and can no longer run")
            return HttpResponseRedirect(detail)
        try:
            with transaction.atomic():
                run = services.run_request(plan=plan, user=request.user, trigger=TRIGGER_USER, kind="solve")
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
            return HttpResponseRedirect(detail)
        messages.success(request, f"Run {run.pk} queued: this page updates when it finishes.")
        return HttpResponseRedirect(detail)


urlpatterns = [
    path("", PlanListView.as_view(), name="plans"),
    path("plans/new/", PlanCreateView.as_view(), name="plan-create"),
    path("plans/<int:pk>/", PlanDetailView.as_view(), name="plan-detail"),
    path("plans/<int:pk>/run/", PlanRunView.as_view(), name="plan-run"),
]
