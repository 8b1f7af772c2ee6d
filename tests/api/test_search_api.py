"""POST /plans/{id}/search/ and /plans/{id}/sweep/: 202 with the run URL, progress through /runs/{id}/,
400 with field paths and nothing queued for bad or oversized requests, team scoping and roles."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scenarios.models import Result, Run
from tests.api.factories import plan_for
from tests.conftest import wait_for, wait_until_ready

SPACE: dict[str, Any] = {"tp": [1, 2, 4], "cp": [1], "pp": [1, 2], "microbatch_seqs": [1, 2]}
AXES: list[dict[str, Any]] = [
    {"field": "cluster.gpus", "values": [32, 64]},
    {"field": "site.region", "values": ["quebec", "virginia"]},
    {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 25, "stop": 75, "step": 25}},
]
POINTS = 12


def _url(plan: Any, job: str) -> str:
    return f"/api/v1/plans/{plan.pk}/{job}/"


def _paths(response: Any) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


@pytest.fixture
def plan(world: Any) -> Any:
    return plan_for(team=world.alpha, user=world.alice.user, name="p8b")


# --- Accepted ----------------------------------------------------------------------------------------


def test_search_is_accepted_with_the_run_url_and_sent_on_commit(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(
            _url(plan, "search"), {"objective": "total_usd", "top": 3, "space": SPACE}, format="json"
        )
    assert response.status_code == 202, response.json()
    body = response.json()
    run = Run.objects.get(pk=body["run"])
    assert (body["kind"], body["status"], run.kind, run.trigger) == ("search", "queued", "search", "api")
    assert body["points_total"] == run.points_total > 0
    assert body["url"].endswith(f"/api/v1/runs/{run.pk}/") and response["Location"] == body["url"]
    assert run.params == {"search": {"objective": "total_usd", "top": 3, "space": SPACE}}
    assert len(callbacks) == 1


def test_a_search_may_rank_layouts_outside_the_validated_envelope(world: Any, plan: Any) -> None:
    response = world.carol.client.post(
        _url(plan, "search"), {"space": SPACE, "within_validated": False}, format="json"
    )
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["run"])
    assert run.params == {"search": {"within_validated": False, "space": SPACE}}
    response = world.carol.client.post(
        _url(plan, "sweep"), {"axes": AXES, "space": SPACE, "within_validated": False}, format="json"
    )
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["run"])
    assert run.params["search"] == {"space": SPACE, "within_validated": False}
    response = world.carol.client.post(
        _url(plan, "sweep"), {"axes": AXES, "within_validated": "false"}, format="json"
    )
    assert response.status_code == 400 and "within_validated" in _paths(response), response.json()


def test_sweep_is_accepted_with_its_point_count(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.alice.client.post(
            _url(plan, "sweep"), {"axes": AXES, "objective": "step_s", "space": SPACE}, format="json"
        )
    assert response.status_code == 202, response.json()
    assert response.json()["points_total"] == POINTS and response.json()["kind"] == "sweep"
    detail = world.bob.client.get(response.json()["url"]).json()  # a viewer follows the run
    assert (detail["kind"], detail["points_done"], detail["points_total"]) == ("sweep", 0, POINTS)
    assert len(callbacks) == 1


# --- Refused: 400 with the field path, nothing queued -----------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"objektive": "step_s"}, "objektive"),
        ({"objective": "fastest"}, "objective"),
        ({"pareto": ["step_s", "happiness"]}, "pareto[1]"),
        ({"top": 101}, "top"),
        ({"space": [1, 2]}, "space"),
        ({"space": {"tp": [0]}}, "space.tp[0]"),
        ({"within_validated": "yes"}, "within_validated"),
        ({"within_validated": 1}, "within_validated"),
    ],
)
def test_bad_search_requests_are_400_with_the_field_path(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any, body: dict[str, Any], path: str
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(_url(plan, "search"), body, format="json")
    assert response.status_code == 400 and path in _paths(response), response.json()
    assert Run.objects.count() == 0 and callbacks == []


def test_an_oversized_search_space_is_400_naming_space(
    world: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from scenarios import services

    user = world.alice.user
    cluster = services.scenario_create(
        kind="cluster",
        team=world.alpha,
        name="h800",
        document={"accelerator": "h800-sxm", "gpus": 2048, "gpus_per_node": 8},
        user=user,
    )
    model = services.scenario_create(
        kind="model", team=world.alpha, name="dsv3", document={"preset": "deepseek-v3"}, user=user
    )
    site = services.scenario_create(
        kind="site", team=world.alpha, name="qc", document={"region": "quebec"}, user=user
    )
    plan = services.plan_create(
        team=world.alpha,
        user=user,
        name="dsv3",
        cluster=cluster,
        model=model,
        site=site,
        training={
            "seq_len": 4096,
            "global_batch_tokens": 15360 * 4096,
            "precision": "bf16",
            "layout": {"tp": 1, "pp": 16, "cp": 1, "microbatch_seqs": 1},
        },
    )
    huge = {"space": {"microbatch_seqs": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]}}
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.alice.client.post(_url(plan, "search"), huge, format="json")
    assert response.status_code == 400 and _paths(response) == ["space"], response.json()
    assert "limit of 2,000,000 per search" in response.json()["errors"][0]["message"]
    assert Run.objects.count() == 0 and callbacks == []


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "axes"),
        (
            {
                "axes": [
                    {
                        "field": "cluster.scale_out.bandwidth_gb_s",
                        "range": {"start": 10, "stop": 100, "step": 1},
                    },
                    {
                        "field": "cluster.scale_up.bandwidth_gb_s",
                        "range": {"start": 400, "stop": 900, "step": 50},
                    },
                ]
            },
            "axes",
        ),  # 91 x 11 = 1,001 points: over the limit of 1,000
        ({"axes": [{"field": "training.layout.tp", "values": [1, 2]}]}, "axes[0].field"),
        (
            {"axes": [{"field": "cluster.gpus", "range": {"start": 8, "stop": 4, "step": 8}}]},
            "axes[0].range.step",
        ),
        ({"axes": AXES, "mode": "zip"}, "mode"),
        ({"axes": AXES, "pareto": ["step_s", "nope"]}, "pareto[1]"),
        ({"axes": AXES, "colour": "red"}, "colour"),
    ],
)
def test_bad_sweep_requests_are_400_with_the_field_path(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any, body: dict[str, Any], path: str
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(_url(plan, "sweep"), body, format="json")
    assert response.status_code == 400 and path in _paths(response), response.json()
    assert Run.objects.count() == 0 and callbacks == []


def test_the_point_limit_is_named_in_the_message(world: Any, plan: Any) -> None:
    axes = [
        {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 10, "stop": 100, "step": 1}},
        {"field": "cluster.scale_up.bandwidth_gb_s", "range": {"start": 400, "stop": 900, "step": 50}},
    ]
    response = world.carol.client.post(_url(plan, "sweep"), {"axes": axes}, format="json")
    assert "1,001 points" in response.json()["errors"][0]["message"]
    assert "limit of 1,000 points per sweep" in response.json()["errors"][0]["message"]


# --- Scoping and roles -------------------------------------------------------------------------------


@pytest.mark.parametrize("job", ["search", "sweep"])
def test_only_editors_of_the_plans_team_may_queue(world: Any, plan: Any, job: str) -> None:
    body = {"space": SPACE} if job == "search" else {"axes": AXES, "space": SPACE}
    assert world.bob.client.post(_url(plan, job), body, format="json").status_code == 403  # viewer
    assert world.mallory.client.post(_url(plan, job), body, format="json").status_code == 404  # other team
    assert world.nobody.client.post(_url(plan, job), body, format="json").status_code == 404
    assert world.anonymous.post(_url(plan, job), body, format="json").status_code == 401
    assert (
        world.carol.client.post(f"/api/v1/plans/{plan.pk + 1000}/{job}/", body, format="json").status_code
        == 404
    )
    assert world.carol.client.get(_url(plan, job)).status_code == 405
    assert Run.objects.count() == 0


def test_an_archived_plan_cannot_be_searched(world: Any, plan: Any) -> None:
    from scenarios import services

    services.plan_archive(plan=plan, user=world.alice.user)
    response = world.carol.client.post(_url(plan, "search"), {}, format="json")
    assert response.status_code == 400 and _paths(response) == ["plan"]
    assert Run.objects.count() == 0


# --- Through real workers: progress visible through the runs endpoint --------------------------------


def _follow(client: Any, url: str, *, timeout_s: float) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def finished() -> bool:
        body = client.get(url).json()
        seen.append(body)
        return body["status"] in ("succeeded", "failed")

    assert wait_for(finished, timeout_s=timeout_s, interval_s=0.02)
    return seen


def test_a_search_runs_and_its_result_is_stored(
    world: Any, plan: Any, celery_worker: Any, transactional_db: Any
) -> None:
    response = world.carol.client.post(_url(plan, "search"), {"space": SPACE}, format="json")
    assert response.status_code == 202
    seen = _follow(world.carol.client, response.json()["url"], timeout_s=60)
    final = seen[-1]
    assert final["status"] == "succeeded", (final, celery_worker.log()[-3000:])
    assert 0 < final["points_done"] == final["points_total"]
    result = world.bob.client.get(f"/api/v1/results/{final['result']}/")
    assert result.status_code == 200
    assert Result.objects.get(pk=final["result"]).kind == "search"


def test_a_sweep_on_two_workers_reports_progress_through_the_api(
    world: Any, plan: Any, worker_factory: Any, transactional_db: Any, settings: Any
) -> None:
    settings.SWEEP_CHUNK_POINTS = 1
    wait_until_ready(worker_factory(concurrency=1, wait=False), worker_factory(concurrency=1, wait=False))
    body = {"axes": copy.deepcopy(AXES), "objective": "usd_per_million_tokens", "space": SPACE}
    response = world.carol.client.post(_url(plan, "sweep"), body, format="json")
    assert response.status_code == 202
    seen = _follow(world.carol.client, response.json()["url"], timeout_s=120)
    assert seen[-1]["status"] == "succeeded", seen[-1]
    done = [s["points_done"] for s in seen]
    assert done == sorted(done) and done[-1] == POINTS
    assert {s["points_total"] for s in seen} == {POINTS}
    result = Result.objects.get(pk=seen[-1]["result"])
    assert result.kind == "sweep" and len(result.report["rows"]) == POINTS
    assert result.report["best"]["metrics"]["usd_per_million_tokens"] == result.usd_per_million_tokens
