"""Search and sweep pages: start a job from the form, follow it, read its Pareto front and best layouts;
refusals with the request's field path (nothing stored); team scoping and roles; pinned query counts.

Jobs execute in this process through the worker's own code path (``execution.run_execute``); the
``no_broker`` fixture keeps anything from going to a broker."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import reverse

from scenarios.models import Result, Run
from tests.api.factories import plan_for
from tests.api.inprocess import execute_run
from tests.web.conftest import SPACE_FORM, Browsers


@pytest.fixture
def plan(world: Any) -> Any:
    return plan_for(team=world.alpha, user=world.alice.user, name="llama-8b")


def new_url(plan: Any, kind: str) -> str:
    return f"{reverse('web:job-new')}?plan={plan.pk}&kind={kind}"


def detail_url(run_id: int) -> str:
    return reverse("web:job-detail", args=[run_id])


def run_id_of(response: Any) -> int:
    assert response.status_code == 302, response.content.decode()[:3000]
    match = re.fullmatch(r"/jobs/(\d+)/", response["Location"])
    assert match, response["Location"]
    return int(match.group(1))


def execute(run_id: int) -> Run:
    run = execute_run(run_id)
    assert run.status == "succeeded", run.error
    return run


def script_data(response: Any, element_id: str) -> Any:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', response.content.decode(), re.S
    )
    assert match, f"no {element_id}"
    return json.loads(match.group(1))


def h1(response: Any) -> str:
    found = re.findall(r"<h1>(.*?)</h1>", response.content.decode(), re.S)
    assert len(found) == 1, found
    return found[0].strip()


# --- Search: form -> job page -> executed -> Pareto chart and best layouts --------------------------------


def test_a_search_started_from_the_form_shows_its_progress_then_its_front(
    browsers: Browsers, plan: Any, no_broker: None
) -> None:
    page = browsers.carol.get(new_url(plan, "search"))
    assert page.status_code == 200 and h1(page) == "Start a search"
    assert ">Start search</button>" in page.content.decode()
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()

    body = {"objective": "total_usd", "top": "3", **SPACE_FORM}
    run_id = run_id_of(browsers.carol.post(new_url(plan, "search"), body))
    run = Run.objects.get(pk=run_id)
    assert (run.kind, run.status, run.trigger, run.plan_id) == ("search", "queued", "user", plan.pk)
    assert run.params["search"] == {
        "objective": "total_usd",
        "top": 3,
        "space": {"tp": [1, 2, 4], "pp": [1, 2], "cp": [1], "microbatch_seqs": [1, 2]},
    }

    waiting = browsers.carol.get(detail_url(run_id))
    html = waiting.content.decode()
    assert waiting.status_code == 200 and h1(waiting) == "Search of llama-8b"
    assert '<label for="job-progress">Progress</label>' in html and "<progress" in html
    assert 'role="status"' in html and f"of {run.points_total:,} layouts" in html
    assert script_data(waiting, "job-data") == {
        "url": f"/api/v1/runs/{run_id}/",
        "status": "queued",
        "unit": "layouts",
    }
    assert "pareto-data" not in html and "jobs.js" in html
    # The page's script polls the API with the browser session.
    assert browsers.carol.get(f"/api/v1/runs/{run_id}/").json()["points_total"] == run.points_total

    run = execute(run_id)
    result = Result.objects.get(runs=run)
    assert result.total_kgco2e is not None
    done = browsers.carol.get(detail_url(run_id))
    html = done.content.decode()
    assert done.status_code == 200 and "<progress" not in html
    assert "<h2>Pareto front</h2>" in html and "<caption>Best layouts</caption>" in html
    assert 'id="pareto-chart" role="img" aria-label="Scatter of step time (s) against TCO (USD)' in html
    assert "chart-4.6.1.umd.min.js" in html and "jobs.js" in html
    chart = script_data(done, "pareto-data")
    assert chart["x_label"] == "TCO (USD)" and chart["y_label"] == "Step time (s)"
    points = chart["points"]
    assert len(points) == len(done.context["table"]) >= 2
    assert all(isinstance(p["x"], float) and isinstance(p["y"], float) and p["carbon_t"] > 0 for p in points)
    assert any(p["pareto"] for p in points)
    best = result.report["best"]
    assert points[0]["x"] == pytest.approx(result.total_usd) and points[0]["y"] == pytest.approx(
        result.step_s
    )
    # The table's first row is the best layout, printed with a few significant digits.
    first = done.context["table"][0]
    assert first["rank"] == 1 and first["layout"][0] == best["layout"]["tp"]
    from web.templatetags.planner_format import pct, sig, usd

    for text in (
        f"{sig(result.step_s)} s",
        pct(result.mfu),
        usd(result.total_usd),
        sig(result.total_kgco2e / 1000),
    ):
        assert text in html, text
    visible = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert str(result.total_usd) not in visible and str(result.step_s) not in visible  # never the raw float
    assert f'href="/api/v1/results/{result.pk}/"' in html and f'href="/plans/{plan.pk}/"' in html


def test_the_search_form_has_the_apis_defaults(browsers: Browsers, plan: Any) -> None:
    html = browsers.alice.get(new_url(plan, "search")).content.decode()
    assert '<option value="step_s" selected>' in html
    assert 'name="top" value="5"' in html
    for metric in ("step_s", "usd_per_million_tokens", "total_kgco2e"):
        assert re.search(rf'<input type="checkbox" name="pareto" value="{metric}"[^>]*checked', html), metric
    for label in (
        "Objective",
        "Alternatives listed",
        "Tensor parallel (tp) values",
        "Microbatch (sequences) values",
    ):
        assert f">{label}</label>" in html, label


# --- Sweep -----------------------------------------------------------------------------------------------


def test_a_sweep_over_gpu_counts_has_a_row_per_point(browsers: Browsers, plan: Any, no_broker: None) -> None:
    page = browsers.carol.get(new_url(plan, "sweep"))
    html = page.content.decode()
    assert page.status_code == 200 and h1(page) == "Start a sweep" and ">Start sweep</button>" in html
    assert "<legend>Axis 1</legend>" in html and "<legend>Axis 3</legend>" in html
    assert '<datalist id="sweep-fields">' in html

    body = {"axis_1_field": "cluster.gpus", "axis_1_values": "64,128", "objective": "step_s", **SPACE_FORM}
    run_id = run_id_of(browsers.carol.post(new_url(plan, "sweep"), body))
    run = Run.objects.get(pk=run_id)
    assert (run.kind, run.points_total) == ("sweep", 2)
    assert run.params["sweep"]["axes"] == [{"field": "cluster.gpus", "values": [64, 128]}]
    waiting = browsers.carol.get(detail_url(run_id))
    assert h1(waiting) == "Sweep of llama-8b" and "of 2 points" in waiting.content.decode()

    execute(run_id)
    done = browsers.carol.get(detail_url(run_id))
    html = done.content.decode()
    table = done.context["table"]
    assert sorted(row["point_values"] for row in table) == [[64], [128]]
    steps = [row["step_s"] for row in table]
    assert steps == sorted(steps) and all(s > 0 for s in steps)  # sorted by the objective
    assert "<caption>Best layouts</caption>" in html and '<th scope="col">cluster.gpus</th>' in html
    assert "<td>64</td>" in html and "<td>128</td>" in html
    chart = script_data(done, "pareto-data")
    assert chart["y_label"] == "Time to train (days)" and len(chart["points"]) == 2
    assert {p["label"] for p in chart["points"]} == {"cluster.gpus = 64", "cluster.gpus = 128"}


# --- Refused: 400 naming the request path, nothing stored -------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "body", "path", "words"),
    [
        (
            "sweep",
            {"axis_1_field": "cluster.gpuz", "axis_1_values": "64"},
            "axes[0].values[0]",
            "unknown field",
        ),
        ("sweep", {"axis_1_field": "cluster.gpus", "axis_1_values": ""}, "axes[0].values", "non-empty"),
        (
            "sweep",
            {"axis_1_field": "cluster.gpus", "axis_1_values": "64, lots"},
            "axes[0].values[1]",
            "integer",
        ),
        ("sweep", {}, "axes", ""),
        (
            "sweep",
            {
                "axis_1_field": "cluster.gpus",
                "axis_1_values": "64",
                "mode": "zip",
                "axis_2_field": "site.region",
                "axis_2_values": "quebec, virginia",
            },
            "mode",
            "",
        ),
        ("search", {"objective": "fastest"}, "objective", "must be one of"),
        ("search", {"top": "many"}, "top", "integer"),
        ("search", {"space_tp": "one"}, "space.tp[0]", ""),
        ("search", {"pareto": ["step_s"]}, "pareto", "2 or 3"),
    ],
)
def test_bad_input_is_400_with_the_path_and_nothing_is_stored(
    browsers: Browsers, plan: Any, no_broker: None, kind: str, body: dict[str, Any], path: str, words: str
) -> None:
    form = {"objective": "step_s", **body}
    response = browsers.carol.post(new_url(plan, kind), form)
    html = response.content.decode()
    assert response.status_code == 400, html[:2000]
    assert f"{path}: " in html and words in html, html
    assert 'role="alert"' in html and "was not started" in html
    assert h1(response) == ("Start a search" if kind == "search" else "Start a sweep")
    assert Run.objects.count() == 0 and Result.objects.count() == 0


def test_an_archived_plan_is_refused_naming_the_plan(browsers: Browsers, plan: Any, no_broker: None) -> None:
    from scenarios import services

    services.plan_archive(plan=plan, user=browsers.world.alice.user)
    response = browsers.carol.post(new_url(plan, "search"), {"objective": "step_s"})
    assert response.status_code == 400 and "the plan is archived" in response.content.decode()
    assert Run.objects.count() == 0


# --- Scoping and roles -------------------------------------------------------------------------------------


def test_a_viewer_can_follow_but_not_start(browsers: Browsers, plan: Any, no_broker: None) -> None:
    assert browsers.bob.get(new_url(plan, "search")).status_code == 403
    assert browsers.bob.post(new_url(plan, "search"), {"objective": "step_s"}).status_code == 403
    body = {"axis_1_field": "cluster.gpus", "axis_1_values": "64,128"}
    assert browsers.bob.post(new_url(plan, "sweep"), body).status_code == 403
    assert Run.objects.count() == 0
    run_id = run_id_of(browsers.carol.post(new_url(plan, "search"), {"objective": "step_s", **SPACE_FORM}))
    listing = browsers.bob.get(reverse("web:jobs")).content.decode()
    assert f'href="/jobs/{run_id}/"' in listing
    assert reverse("web:job-new") not in listing and ">Set up</button>" not in listing
    followed = browsers.bob.get(detail_url(run_id))
    assert followed.status_code == 200 and reverse("web:job-new") not in followed.content.decode()
    assert reverse("web:job-new") in browsers.carol.get(detail_url(run_id)).content.decode()
    editor = browsers.carol.get(reverse("web:jobs")).content.decode()
    assert f'action="{reverse("web:job-new")}"' in editor and ">Set up</button>" in editor


def test_another_teams_job_and_plan_are_not_found(browsers: Browsers, plan: Any, no_broker: None) -> None:
    run_id = run_id_of(browsers.carol.post(new_url(plan, "search"), {"objective": "step_s", **SPACE_FORM}))
    for client in (browsers.mallory, browsers.nobody):
        assert client.get(detail_url(run_id)).status_code == 404
        assert client.get(new_url(plan, "search")).status_code == 404
        assert client.post(new_url(plan, "sweep"), {"axis_1_field": "cluster.gpus"}).status_code == 404
        assert f"/jobs/{run_id}/" not in client.get(reverse("web:jobs")).content.decode()
    assert browsers.anonymous.get(detail_url(run_id)).status_code == 302
    assert browsers.carol.get(f"{reverse('web:job-new')}?plan={plan.pk}&kind=solve").status_code == 404
    assert browsers.carol.get(f"{reverse('web:job-new')}?plan=x&kind=search").status_code == 404
    assert browsers.carol.get(detail_url(run_id + 1000)).status_code == 404
    assert Run.objects.count() == 1


def test_a_failed_job_shows_its_error(browsers: Browsers, plan: Any, no_broker: None) -> None:
    run_id = run_id_of(browsers.carol.post(new_url(plan, "search"), {"objective": "step_s", **SPACE_FORM}))
    Run.objects.filter(pk=run_id).update(status="failed", error="the worker was lost three times")
    html = browsers.carol.get(detail_url(run_id)).content.decode()
    assert "<h2>Failed</h2>" in html and "the worker was lost three times" in html
    assert "<progress" not in html and "job-data" not in html


# --- Query counts ----------------------------------------------------------------------------------------


def _queued_jobs(plan: Any, count: int) -> None:
    for index in range(count):
        Run.objects.create(
            plan=plan, team_id=plan.team_id, kind="search" if index % 2 else "sweep", points_total=10 + index
        )


@pytest.mark.parametrize("jobs", [2, 10])
def test_the_list_query_count_does_not_grow_with_jobs(
    browsers: Browsers, plan: Any, jobs: int, django_assert_num_queries: Any
) -> None:
    _queued_jobs(plan, jobs)
    with django_assert_num_queries(5):  # session, user, memberships, runs, plans to start from
        response = browsers.carol.get(reverse("web:jobs"))
    assert response.status_code == 200 and len(response.context["rows"]) == jobs
    assert h1(response) == "Searches and sweeps"
    with django_assert_num_queries(4):  # a viewer is offered no plans to start from
        assert len(browsers.bob.get(reverse("web:jobs")).context["rows"]) == jobs


def test_the_detail_query_count_is_pinned(
    browsers: Browsers, plan: Any, no_broker: None, django_assert_num_queries: Any
) -> None:
    run_id = run_id_of(browsers.carol.post(new_url(plan, "search"), {"objective": "step_s", **SPACE_FORM}))
    with django_assert_num_queries(4):  # session, user, memberships, the run with its plan and result
        assert browsers.carol.get(detail_url(run_id)).status_code == 200
    execute(run_id)
    with django_assert_num_queries(4):
        assert browsers.carol.get(detail_url(run_id)).status_code == 200


@pytest.mark.parametrize("kind", ["search", "sweep"])
def test_the_start_form_query_count_is_pinned(
    browsers: Browsers, plan: Any, kind: str, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(4) as captured:
        response = browsers.carol.get(new_url(plan, kind))
    assert response.status_code == 200, [q["sql"] for q in captured.captured_queries]
    assert h1(response) == f"Start a {kind}"
