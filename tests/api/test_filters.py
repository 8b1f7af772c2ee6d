"""Filters on every list, and the refusals: an unknown query parameter or ordering is a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import World, no_broker  # noqa: F401  (fixture)
from tests.api.factories import insert_result, plan_for

pytestmark = pytest.mark.django_db


def names(response: Any) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    return sorted(row["name"] for row in response.json()["results"])


def create_scenario(world: World, kind: str, name: str, document: dict[str, Any]) -> None:
    from scenarios import services

    services.scenario_create(kind=kind, team=world.alpha, name=name, document=document, user=world.alice.user)


def test_clusters_by_accelerator_node_and_gpu_count(world: World) -> None:
    create_scenario(world, "cluster", "h100x64", {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8})
    create_scenario(world, "cluster", "a100x512", {"accelerator": "a100-sxm-80gb", "gpus": 512})
    create_scenario(world, "cluster", "dgx", {"node": "dgx-a100-40gb", "gpus": 128})
    create_scenario(
        world, "cluster", "ours", {"accelerator": {"preset": "h100-sxm", "name": "our H100s"}, "gpus": 16}
    )
    client = world.alice.client
    assert names(client.get("/api/v1/clusters/?accelerator=h100-sxm")) == ["h100x64", "ours"]
    assert names(client.get("/api/v1/clusters/?accelerator=A100-SXM-40GB")) == ["dgx"]
    assert names(client.get("/api/v1/clusters/?node=dgx-a100-40gb")) == ["dgx"]
    assert names(client.get("/api/v1/clusters/?gpus=512")) == ["a100x512"]
    assert names(client.get("/api/v1/clusters/?gpus_min=100")) == ["a100x512", "dgx"]
    assert names(client.get("/api/v1/clusters/?gpus_max=128&gpus_min=64")) == ["dgx", "h100x64"]
    assert names(client.get("/api/v1/clusters/?gpus_per_node=8")) == ["h100x64"]


def test_sites_by_region_and_models_by_preset(world: World) -> None:
    create_scenario(world, "site", "qc", {"region": "quebec"})
    create_scenario(world, "site", "custom", {"grid_gco2_per_kwh": 100})
    create_scenario(world, "model", "l8", {"preset": "llama3-8b"})
    create_scenario(world, "model", "l70", {"preset": "llama3-70b"})
    client = world.alice.client
    assert names(client.get("/api/v1/sites/?region=Quebec")) == ["qc"]
    assert names(client.get("/api/v1/models/?preset=llama3-70b")) == ["l70"]


def test_results_by_plan_kind_solver_version_and_current(world: World, no_broker: None) -> None:  # noqa: F811
    from tests.api.inprocess import solve_plan

    first = plan_for(team=world.alpha, user=world.alice.user, name="first")
    second = plan_for(team=world.alpha, user=world.alice.user, name="second")
    stale = insert_result(plan=first)  # solver "test": never current
    fresh = solve_plan(second)
    client = world.alice.client

    def ids(query: str) -> list[int]:
        response = client.get(f"/api/v1/results/?{query}")
        assert response.status_code == 200, response.content[:300]
        return sorted(row["id"] for row in response.json()["results"])

    assert ids(f"plan={first.pk}") == [stale.pk]
    assert ids("solver_version=test") == [stale.pk]
    assert ids("kind=solve") == sorted([stale.pk, fresh.pk])
    assert ids("kind=search") == []
    assert ids("current=true") == [fresh.pk]
    assert ids("current=false") == [stale.pk]
    assert client.get("/api/v1/results/?kind=nope").status_code == 400


def test_plans_teams_members_tokens_runs_filters(world: World) -> None:
    plan_for(team=world.alpha, user=world.alice.user, name="solved")
    plan_for(team=world.alpha, user=world.alice.user, name="unsolved")
    from scenarios.models import Plan

    insert_result(plan=Plan.objects.get(name="solved"))
    client = world.alice.client
    assert names(client.get("/api/v1/plans/?has_result=true")) == ["solved"]
    assert names(client.get("/api/v1/plans/?has_result=false")) == ["unsolved"]
    assert names(client.get("/api/v1/teams/?name=alp")) == ["Alpha"]
    members = client.get(f"/api/v1/teams/{world.alpha.pk}/members/?role=editor").json()["results"]
    assert [m["username"] for m in members] == ["carol"]
    assert names(client.get("/api/v1/tokens/?active=true")) == ["alice test token"]
    assert names(client.get("/api/v1/tokens/?active=false")) == []
    assert client.get("/api/v1/runs/?status=queued").status_code == 200


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/v1/plans/?nmae=x", "nmae"),
        ("/api/v1/clusters/?accelerator=h100-sxm&gpu=8", "gpu"),
        ("/api/v1/results/?plan_id=1", "plan_id"),
        ("/api/v1/tokens/?foo=1", "foo"),
        ("/api/v1/teams/?limit=3", "limit"),
        ("/api/v1/events/?page=2", "page"),
        ("/api/v1/compare/?plans=1&plan=2", "plan"),
        ("/api/v1/catalog/?kind=x", "kind"),
    ],
)
def test_unknown_query_parameter_is_400_naming_it(world: World, path: str, param: str) -> None:
    response = world.alice.client.get(path)
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert [error["path"] for error in errors] == [param]
    assert "unknown query parameter" in errors[0]["message"]


def test_unknown_ordering_is_400_naming_it(world: World) -> None:
    client = world.alice.client
    response = client.get("/api/v1/plans/?ordering=-name,secret")
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["path"] == "ordering"
    assert "secret" in error["message"] and "created_at" in error["message"]
    assert client.get("/api/v1/events/?ordering=id").status_code == 400


def test_known_parameters_still_work(world: World) -> None:
    client = world.alice.client
    for path in (
        "/api/v1/plans/?ordering=-name&page=1&page_size=5&format=json&name=x&archived=false",
        "/api/v1/results/?format=csv",
        "/api/v1/events/?page_size=5&kind=run.failed",
        f"/api/v1/teams/{world.alpha.pk}/members/?page_size=2&ordering=role",
    ):
        assert client.get(path).status_code == 200, path
