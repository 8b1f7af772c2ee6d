"""A plan's page (/plans/<pk>/): the report as people read it, result versions with what changed, Run now,
the live run status; team scoping (another team's plan is a 404) and roles (a viewer cannot run)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from scenarios.models import Plan, Run
from tests.api import factories as f
from tests.api.inprocess import solve_plan
from tests.web.conftest import Browsers, preset_fields

pytestmark = pytest.mark.django_db

DETAIL_QUERIES = 12


def detail(plan: Plan) -> str:
    return reverse("web:plan-detail", args=[plan.pk])


def run_url(plan: Plan) -> str:
    return reverse("web:plan-run", args=[plan.pk])


@pytest.fixture
def plan(browsers: Browsers) -> Plan:
    world = browsers.world
    return f.plan_for(team=world.alpha, user=world.alice.user, name="Alpha plan")


def with_versions(plan: Plan, n: int) -> list[Any]:
    results, previous = [], None
    for i in range(n):
        previous = f.insert_result(plan=plan, scale=1.0 + i / 10, previous=previous)
        results.append(previous)
    return results


def test_plan_without_result_says_so_and_offers_run_now(browsers: Browsers, plan: Plan) -> None:
    html = browsers.carol.get(detail(plan)).content.decode()
    assert "<h1>Alpha plan</h1>" in html
    assert "This plan has no result yet." in html
    assert "Run now" in html and run_url(plan) in html
    job_new = reverse("web:job-new")
    assert f"{job_new}?plan={plan.pk}&amp;kind=search" in html and "Start sweep" in html


def test_viewer_sees_no_run_now_and_gets_403_on_post(browsers: Browsers, plan: Plan) -> None:
    response = browsers.bob.get(detail(plan))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Run now" not in html and "Start search" not in html
    assert browsers.bob.post(run_url(plan)).status_code == 403
    assert not Run.objects.filter(plan=plan).exists()


def test_other_team_gets_404(browsers: Browsers, plan: Plan) -> None:
    assert browsers.mallory.get(detail(plan)).status_code == 404
    assert browsers.mallory.post(run_url(plan)).status_code == 404
    assert browsers.nobody.get(detail(plan)).status_code == 404
    assert not Run.objects.filter(plan=plan).exists()


def test_run_now_is_post_only(browsers: Browsers, plan: Plan) -> None:
    assert browsers.carol.get(run_url(plan)).status_code == 405


def test_run_now_queues_a_solve_and_the_page_polls_it(
    browsers: Browsers, plan: Plan, no_broker: None
) -> None:
    response = browsers.carol.post(run_url(plan))
    assert response.status_code == 302 and response["Location"] == detail(plan)
    run = Run.objects.get(plan=plan)
    assert run.kind == "solve" and run.status == "queued" and run.requested_by == browsers.world.carol.user
    html = browsers.carol.get(detail(plan)).content.decode()
    assert 'role="status"' in html
    assert f'data-run-url="{reverse("run-detail", args=[run.pk])}"' in html
    assert "plan_detail.js" in html
    assert "queued" in html


def test_failed_run_shows_its_error(browsers: Browsers, plan: Plan) -> None:
    Run.objects.create(plan=plan, team=plan.team, status="failed", error="cluster.gpus: the node went away")
    html = browsers.bob.get(detail(plan)).content.decode()
    assert "failed" in html and "cluster.gpus: the node went away" in html
    assert "plan_detail.js" not in html  # nothing to poll


def test_created_plan_solves_and_shows_the_real_report(browsers: Browsers, no_broker: None) -> None:
    fields = {"form": "preset", "name": "Solved", **preset_fields()}
    assert browsers.carol.post(reverse("web:plan-create"), fields).status_code == 302
    plan = Plan.objects.get(name="Solved")
    result = solve_plan(plan)
    html = browsers.bob.get(detail(plan)).content.decode()
    for heading in (
        "Step-time budget",
        "Memory",
        "Reliability",
        "Schedule",
        "Energy",
        "Carbon",
        "TCO",
        "Layout",
        "Assumptions",
        "Result versions",
    ):
        assert heading in html, heading
    report = result.report
    from web.templatetags.planner_format import sig, usd

    assert f"{sig(report['step']['step_s'])} s" in html
    assert usd(report["tco"]["total_usd"]) in html
    assert "Fits in memory." in html
    assert "model.preset" in html and "Source" in html  # the assumptions table
    assert '<span class="badge ok">current</span>' in html
    assert "First solve result." in html


def test_versions_show_what_changed_with_a_link_to_the_api_diff(browsers: Browsers, plan: Plan) -> None:
    _first, second = with_versions(plan, 2)
    html = browsers.bob.get(detail(plan)).content.decode()
    assert "Latest result: version 2" in html
    assert reverse("result-diff", args=[second.pk]) in html
    assert "Against v1" in html
    # Every headline figure of the fake report scales by 1.1 (MFU by 1/1.1).
    assert "TCO: $1.06 M → $1.17 M" in html and "(+10%)" in html
    assert "Inputs changed: <code>scale</code>" in html
    assert "First solve result." in html


@pytest.mark.parametrize("n", [1, 5])
def test_detail_query_count_does_not_grow_with_versions(
    browsers: Browsers, plan: Plan, django_assert_num_queries: Any, n: int
) -> None:
    with_versions(plan, n)
    Run.objects.create(plan=plan, team=plan.team, status="running")
    browsers.bob.get(detail(plan))
    with django_assert_num_queries(DETAIL_QUERIES):
        assert browsers.bob.get(detail(plan)).status_code == 200


def test_run_now_query_count(
    browsers: Browsers, plan: Plan, django_assert_num_queries: Any, no_broker: None
) -> None:
    browsers.carol.get(detail(plan))
    with django_assert_num_queries(7):
        assert browsers.carol.post(run_url(plan)).status_code == 302


def test_a_run_finishing_while_the_page_is_read_is_never_shown_finished_without_its_result(
    browsers: Browsers, no_broker: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker commits the result and the run's success between the page's reads of the plan and of the
    rest: the page either shows the result or keeps following the run, never a finished run and no result
    (the page would then stop following it and stay empty)."""
    from scenarios import execution
    from tests.api.inprocess import claim
    from web.views import plans as plan_views

    fields = {"form": "preset", "name": "Raced", **preset_fields()}
    assert browsers.carol.post(reverse("web:plan-create"), fields).status_code == 302
    plan = Plan.objects.get(name="Raced")
    assert browsers.carol.post(run_url(plan)).status_code == 302
    run = Run.objects.get(plan=plan)
    original = plan_views._team_plan

    def plan_then_worker_commits(*args: Any, **kwargs: Any) -> Plan:
        read = original(*args, **kwargs)
        outcome = execution.run_execute(run_id=run.pk, claim=claim())
        assert outcome.status == "succeeded"
        return read

    monkeypatch.setattr(plan_views, "_team_plan", plan_then_worker_commits)
    html = browsers.carol.get(detail(plan)).content.decode()
    monkeypatch.setattr(plan_views, "_team_plan", original)
    assert "plan_detail.js" in html or "Latest result: version 1" in html
    # and the next read, once the page reloads, shows the result
    html = browsers.carol.get(detail(plan)).content.decode()
    assert "Latest result: version 1" in html and "plan_detail.js" not in html
