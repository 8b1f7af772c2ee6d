"""Idempotency-Key on POSTs that create or run (a retry gets the first answer), and ETag + conditional GET
(304) on results and compare."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.models import ClusterScenario, Run
from tests.api.conftest import World, no_broker  # noqa: F401  (fixture)
from tests.api.factories import CLUSTER_DOC, insert_result, plan_for

pytestmark = pytest.mark.django_db


def post(world: World, path: str, body: Any = None, key: str | None = None, persona: str = "alice") -> Any:
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return getattr(world, persona).client.post(path, body, format="json", **headers)


def test_a_retried_run_returns_the_same_run(world: World, no_broker: None) -> None:  # noqa: F811
    plan = plan_for(team=world.alpha, user=world.alice.user, name="p")
    first = post(world, f"/api/v1/plans/{plan.pk}/run/", key="run-1")
    again = post(world, f"/api/v1/plans/{plan.pk}/run/", key="run-1")
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again["Location"] == first["Location"]
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Run.objects.filter(plan=plan).count() == 1
    # Another key, or none, is another run.
    assert post(world, f"/api/v1/plans/{plan.pk}/run/", key="run-2").json()["run"] != first.json()["run"]
    post(world, f"/api/v1/plans/{plan.pk}/run/")
    assert Run.objects.filter(plan=plan).count() == 3


def test_a_retried_create_creates_once(world: World) -> None:
    body = {"name": "c", "document": CLUSTER_DOC}
    first = post(world, "/api/v1/clusters/", body, key="create-c")
    again = post(world, "/api/v1/clusters/", body, key="create-c")
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert ClusterScenario.objects.filter(name="c").count() == 1


def test_the_same_key_with_another_body_is_422_naming_the_header(world: World) -> None:
    assert (
        post(world, "/api/v1/clusters/", {"name": "a", "document": CLUSTER_DOC}, key="k").status_code == 201
    )
    response = post(world, "/api/v1/clusters/", {"name": "b", "document": CLUSTER_DOC}, key="k")
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "Idempotency-Key"
    assert not ClusterScenario.objects.filter(name="b").exists()
    # The same key on another path is another request too.
    assert (
        post(world, "/api/v1/sites/", {"name": "a", "document": {"region": "quebec"}}, key="k").status_code
        == 422
    )


def test_keys_are_per_user_and_refused_answers_are_replayed(world: World) -> None:
    body = {"name": "shared", "document": CLUSTER_DOC}
    assert post(world, "/api/v1/clusters/", body, key="same").status_code == 201
    assert post(world, "/api/v1/clusters/", body, key="same", persona="mallory").status_code == 201
    bad = {"name": "bad", "document": {"gpus": -1}}
    first = post(world, "/api/v1/clusters/", bad, key="bad")
    assert first.status_code == 400
    again = post(world, "/api/v1/clusters/", bad, key="bad")
    assert (again.status_code, again.json()) == (400, first.json())


def test_a_malformed_key_is_400_naming_the_header(world: World) -> None:
    response = post(world, "/api/v1/clusters/", {"name": "c", "document": CLUSTER_DOC}, key="x" * 300)
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "Idempotency-Key"


def test_a_result_answers_304_to_its_etag(world: World) -> None:
    plan = plan_for(team=world.alpha, user=world.alice.user, name="p")
    result = insert_result(plan=plan)
    client = world.alice.client
    for path in (f"/api/v1/results/{result.pk}/", f"/api/v1/results/?plan={plan.pk}"):
        first = client.get(path)
        etag = first["ETag"]
        assert first.status_code == 200 and etag
        assert "Accept" in first["Vary"] and "Authorization" in first["Vary"]
        cached = client.get(path, HTTP_IF_NONE_MATCH=etag)
        assert cached.status_code == 304 and cached.content == b""
        assert client.get(path, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200
    # CSV is another representation, with its own ETag.
    csv = client.get(f"/api/v1/results/{result.pk}/?format=csv")
    assert csv["ETag"] != client.get(f"/api/v1/results/{result.pk}/")["ETag"]


def test_compare_answers_304_until_a_new_result_changes_it(world: World) -> None:
    first_plan = plan_for(team=world.alpha, user=world.alice.user, name="a")
    second_plan = plan_for(team=world.alpha, user=world.alice.user, name="b")
    insert_result(plan=first_plan)
    previous = insert_result(plan=second_plan)
    client = world.alice.client
    path = f"/api/v1/compare/?plans={first_plan.pk},{second_plan.pk}"
    etag = client.get(path)["ETag"]
    assert client.get(path, HTTP_IF_NONE_MATCH=etag).status_code == 304
    insert_result(plan=second_plan, scale=2.0, previous=previous)
    changed = client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
