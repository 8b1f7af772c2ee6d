"""Documented limits and request hygiene: body size, depth, NUL characters, compare length, page size,
per-token throttling, CSRF for browser sessions, the JSON 404 for unknown paths."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.http import HttpRequest
from rest_framework.test import APIClient

from api import limits
from api.throttling import PerTokenScopedThrottle
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttles(fresh_throttle_counts: None) -> None:
    """Each test here starts with no throttle counts (``tests/conftest.py``)."""


def post_raw(client: APIClient, url: str, raw: str | bytes) -> Any:
    return client.post(url, data=raw, content_type="application/json")


def paths(response: Any) -> list[str]:
    return [e["path"] for e in response.json()["errors"]]


def test_oversized_body_is_400_on_body(world: World) -> None:
    raw = json.dumps({"name": "x", "description": "a" * (limits.MAX_BODY_BYTES + 10), "document": {}})
    response = post_raw(world.alice.client, "/api/v1/clusters/", raw)
    assert response.status_code == 400 and paths(response) == ["body"]


def test_deep_nesting_is_400_not_a_recursion_error(world: World) -> None:
    raw = '{"name": "x", "document": ' + "[" * 5000 + "]" * 5000 + "}"
    response = post_raw(world.alice.client, "/api/v1/clusters/", raw)
    assert response.status_code == 400


def test_nul_character_is_400_with_its_path(world: World) -> None:
    raw = json.dumps({"name": "bad\u0000name", "document": f.CLUSTER_DOC})
    response = post_raw(world.alice.client, "/api/v1/clusters/", raw)
    assert response.status_code == 400 and paths(response) == ["name"]


def test_integers_beyond_2_53_are_refused(world: World) -> None:
    raw = json.dumps({"name": "x", "document": {**f.CLUSTER_DOC, "gpus": 2**60}})
    response = post_raw(world.alice.client, "/api/v1/clusters/", raw)
    assert response.status_code == 400 and paths(response) == ["document.gpus"]


def test_solver_limits_are_named_in_the_400(world: World) -> None:
    from solvers.inputs.rows import MAX_GPUS

    doc = {**f.CLUSTER_DOC, "gpus": MAX_GPUS * 2}
    response = world.alice.client.post("/api/v1/clusters/", {"name": "big", "document": doc}, format="json")
    assert response.status_code == 400
    assert "cluster.gpus" in paths(response)


def test_layout_that_does_not_divide_the_cluster_is_400_and_stores_nothing(world: World) -> None:
    from scenarios.models import Plan

    cluster, model, site = f.scenario_trio(team=world.alpha, user=world.alice.user)
    training = {**f.TRAINING, "layout": {**f.TRAINING["layout"], "tp": 3}}
    body = {"name": "p", "cluster": cluster.pk, "model": model.pk, "site": site.pk, "training": training}
    response = world.alice.client.post("/api/v1/plans/", body, format="json")
    assert response.status_code == 400
    assert any(p.startswith("training.layout") for p in paths(response)), response.json()
    assert not Plan.objects.exists()


@pytest.mark.parametrize(
    ("model_doc", "status"), [({"preset": "llama3-8b"}, 200), ({"preset": "mixtral-8x7b"}, 400)]
)
def test_per_op_recompute_on_a_model_it_does_not_describe_is_a_400_naming_the_field(
    world: World, model_doc: dict[str, Any], status: int
) -> None:
    training = {**f.TRAINING, "layout": {**f.TRAINING["layout"], "recompute": "per_op"}}
    scenario = {"model": model_doc, "cluster": f.CLUSTER_DOC, "site": f.SITE_DOC, "training": training}
    response = world.alice.client.post("/api/v1/solve/", scenario, format="json")
    assert response.status_code == status, response.json()
    if status == 400:
        assert "training.layout.recompute" in paths(response), response.json()


def test_compare_list_length_is_limited(world: World) -> None:
    ids = ",".join(str(i) for i in range(1, limits.MAX_COMPARE_ITEMS + 2))
    response = world.alice.client.get(f"/api/v1/compare/?plans={ids}")
    assert response.status_code == 400 and paths(response) == ["plans"]


@pytest.mark.parametrize(
    "query",
    # "%C2%B2" is "²", a digit to str.isdigit that int() refuses
    ["plans=", "plans=1,x", "plans=1,1", "plans=1&results=2", "plans=-1", "plans=%C2%B2,1", "results=%C2%B2"],
)
def test_bad_compare_queries_are_400(world: World, query: str) -> None:
    response = world.alice.client.get(f"/api/v1/compare/?{query}")
    assert response.status_code == 400


def test_page_size_is_clamped_to_the_limit(world: World) -> None:
    from scenarios.models import ClusterScenario

    ClusterScenario.objects.bulk_create(
        ClusterScenario(team=world.alpha, name=f"c{i}") for i in range(limits.MAX_PAGE_SIZE + 5)
    )
    body = world.alice.client.get("/api/v1/clusters/?page_size=100000").json()
    assert body["count"] == limits.MAX_PAGE_SIZE + 5
    assert len(body["results"]) == limits.MAX_PAGE_SIZE


def test_throttling_counts_per_token(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "2/min", "run": "2/min", "compare": "2/min"}
    )
    body = {"schema_version": 1, "model": {"preset": "llama3-8b"}}
    statuses = [world.alice.client.post("/api/v1/solve/", body, format="json").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    # Another token of the same user has a budget of its own.
    created = world.alice.client.get("/api/v1/teams/")  # not throttled
    assert created.status_code == 200
    secret = world.alice.client.post("/api/v1/tokens/", {"name": "second"}, format="json").json()["token"]
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert other.post("/api/v1/solve/", body, format="json").status_code == 200
    throttled = world.alice.client.post("/api/v1/solve/", body, format="json")
    assert throttled.status_code == 429 and "Retry-After" in throttled


def test_browser_session_needs_csrf_for_writes(world: World) -> None:
    client = APIClient(enforce_csrf_checks=True)
    # django-axes checks every password log-in against its lockout, which needs the request.
    assert client.login(request=HttpRequest(), username="carol", password="carol-password-1234")
    assert client.get("/api/v1/clusters/").status_code == 200
    body = {"name": "c", "document": f.CLUSTER_DOC}
    assert client.post("/api/v1/clusters/", body, format="json").status_code == 403
    client.get("/admin/login/")  # any page that sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.post("/api/v1/clusters/", body, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201, response.content


def test_unknown_api_paths_answer_json_404(world: World) -> None:
    for path in ("/api/v1/nothing-here/", "/api/v1/plans/abc/", "/api/v1/clusters/1/revisions/x/"):
        response = world.alice.client.get(path)
        assert response.status_code == 404 and response.json()["detail"] == "Not found."


def test_schema_and_docs_are_served(world: World) -> None:
    schema = world.alice.client.get("/api/v1/schema/?format=json")
    assert schema.status_code == 200
    paths_ = schema.json()["paths"]
    assert "/api/v1/compare/" in paths_ and "/api/v1/plans/{id}/run/" in paths_
    assert "tokenAuth" in schema.json()["components"]["securitySchemes"]
    assert world.alice.client.get("/api/v1/docs/").status_code == 200


@pytest.mark.parametrize(
    "instant", ["0531-02-12T04:32:27.614178-18:38", "2026-01-01T00:00:00+23:59", "0001-01-01T00:00:00+05:00"]
)
def test_date_filters_with_extreme_offsets_are_answered_not_500(world: World, instant: str) -> None:
    from urllib.parse import quote

    response = world.alice.client.get(f"/api/v1/results/?created_after={quote(instant)}")
    assert response.status_code in {200, 400}
    response = world.alice.client.get("/api/v1/teams/")
    assert response.status_code == 200


def test_creating_and_changing_plans_share_the_solve_budget(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan is checked as a solve would check it (a search for ``layout: auto``), so its writes are throttled
    as ``/solve/`` is; reading plans is not."""
    monkeypatch.setattr(PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "2/min", "run": "2/min"})
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="budget")
    client = world.alice.client
    url = f"/api/v1/plans/{plan.pk}/"
    statuses = [client.patch(url, {"description": str(i)}, format="json").status_code for i in range(2)]
    statuses.append(client.post("/api/v1/solve/", {"schema_version": 1}, format="json").status_code)
    assert statuses == [200, 200, 429]
    assert client.get(url).status_code == 200 and client.get("/api/v1/plans/").status_code == 200


def test_changing_a_scenario_shares_the_solve_budget(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new revision checks every plan that follows the scenario, a solve's check each, so a scenario change is
    throttled as ``/solve/`` is; creating and reading scenarios are not."""
    monkeypatch.setattr(PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "2/min", "run": "2/min"})
    client = world.alice.client
    cluster, _model, _site = f.scenario_trio(team=world.alpha, user=world.alice.user)
    url = f"/api/v1/clusters/{cluster.pk}/"
    statuses = [
        client.patch(url, {"document": {**f.CLUSTER_DOC, "gpus": gpus}}, format="json").status_code
        for gpus in (128, 256)
    ]
    statuses.append(client.patch(url, {"description": "over budget"}, format="json").status_code)
    assert statuses == [200, 200, 429]
    created = client.post("/api/v1/sites/", {"name": "free", "document": f.SITE_DOC}, format="json")
    assert created.status_code == 201 and client.get(url).status_code == 200
