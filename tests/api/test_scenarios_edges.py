"""Scenarios and plans at their edges.

* A PATCH of a plan saves only the fields it sets, so a result a worker stored during its (slow) solve
  check, an archive or a rename is kept: ``latest_result`` used to go back.
* Archived scenarios and plans are reached by id (detail, revisions, archive, run, delete); the list's
  live-only default hid them from every route.
* A PATCH may send back a plan's own cluster (as read by GET) after that cluster was archived.
* Renaming a site carries its team price to the new name (team prices are keyed by the site's name): the
  plans' solved inputs do not change.
* A dashboard upload holding an integer of over 4,300 digits is a 400 (Python's int conversion limit).
* A plan created on a scenario while that scenario is being deleted makes the DELETE a 409, not a 500; a
  scenario deleted while a plan on it is being saved makes the plan's POST or PATCH a 400 naming that part.
"""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.models import ClusterScenario, Plan
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def env(world: World) -> dict[str, Any]:
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user)
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="target", trio=trio)
    return {"world": world, "trio": trio, "plan": plan}


def test_a_plan_patch_does_not_overwrite_a_result_stored_while_it_was_checked(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PATCH reads the plan, checks the new training (a solve's check, up to seconds for layout: auto),
    then ``plan.save()`` writes every column it read. A worker that stored a result during the check (its
    ``UPDATE scenarios_plan SET latest_result_id``, under the plan's row lock) is undone: the plan points
    back at its older result (here: none), so lists, ``has_result`` and the price fan-out read the wrong one.
    The same stale save un-archives a plan archived meanwhile and undoes a concurrent rename."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    original = services.validate_plan_document
    stored: dict[str, Any] = {}

    def check_while_a_worker_stores_a_result(checked: Plan, **kwargs: Any) -> None:
        if not stored:  # a concurrent worker, on its own copy of the row
            stored["result"] = f.insert_result(plan=Plan.objects.get(pk=checked.pk))
        original(checked, **kwargs)

    monkeypatch.setattr(services, "validate_plan_document", check_while_a_worker_stores_a_result)
    response = world.alice.client.patch(
        f"/api/v1/plans/{plan.pk}/", {"training": {**f.TRAINING, "total_tokens": 2.0e12}}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert stored, "the check ran"
    row = Plan.objects.get(pk=plan.pk)
    assert row.training["total_tokens"] == 2.0e12
    assert row.latest_result_id == stored["result"].pk, "the PATCH overwrote the result the worker stored"


def test_archived_scenarios_and_plans_can_still_be_reached_by_id(env: dict[str, Any]) -> None:
    """Archiving hides a row from lists; a plan that follows an archived cluster keeps working and its GET
    names the cluster's id, and results name its revisions. Yet the list filter (``archived`` defaults to
    live only) is applied to every detail route too, and ``?archived=true`` is refused there as an unknown
    parameter: the cluster, its revisions, the archived plan are all 404, so ``POST /plans/{id}/run/`` of an
    archived plan never reaches the view's own 400 "the plan is archived" (the dashboard shows the plan and
    says so), and archiving again is a 404 instead of the service's no-op."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    cluster = env["trio"][0]
    client = world.alice.client
    services.scenario_archive(scenario=cluster, user=world.alice.user)
    assert client.get(f"/api/v1/plans/{plan.pk}/").json()["cluster"] == cluster.pk
    assert client.get(f"/api/v1/clusters/{cluster.pk}/").status_code == 200
    assert client.get(f"/api/v1/clusters/{cluster.pk}/revisions/1/").status_code == 200
    assert client.post(f"/api/v1/clusters/{cluster.pk}/archive/").status_code == 200

    services.plan_archive(plan=plan, user=world.alice.user)
    assert client.get(f"/api/v1/plans/{plan.pk}/").status_code == 200
    run = client.post(f"/api/v1/plans/{plan.pk}/run/")
    assert run.status_code == 400, run.content[:300]
    assert "archived" in run.json()["errors"][0]["message"]


def test_a_plan_patch_may_send_back_its_own_archived_cluster(env: dict[str, Any]) -> None:
    """A plan keeps working on a cluster archived after it was made, and ``plan_values`` allows keeping it
    ("a newly chosen scenario is not archived"). The serializer's field only knows live clusters, so a client
    that PATCHes the plan with the fields it read (``cluster`` unchanged) gets a 400 saying that the cluster
    'does not exist', and cannot change its description."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    cluster = env["trio"][0]
    services.scenario_archive(scenario=cluster, user=world.alice.user)
    url = f"/api/v1/plans/{plan.pk}/"
    read = world.alice.client.get(url).json()
    response = world.alice.client.patch(
        url, {"cluster": read["cluster"], "description": "same cluster"}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    plan.refresh_from_db()
    assert plan.description == "same cluster" and plan.cluster_id == cluster.pk


def test_renaming_a_site_does_not_silently_change_its_plans_prices(env: dict[str, Any]) -> None:
    """Team electricity prices for a site are keyed ``site:<name>``, and a plan is priced by its site's
    *name* (``scenarios/inputs.py``: ``site_name=plan.site.name``). A PATCH that only renames the site makes no
    revision, checks nothing and answers ``following_plans: null``, yet every plan of that site loses the
    team's price (it falls back to the region's) and the book is left holding a key no live site has, which
    a publish of that book would itself refuse. A rename must not change what a plan solves (or must be
    refused while the book names the site)."""
    from scenarios import services

    world = env["world"]
    site = env["trio"][2]
    plan = env["plan"]
    services.price_book_publish(
        team=world.alpha,
        user=world.alice.user,
        name="alpha prices",
        entries=[{"kind": "electricity", "key": f"site:{site.name}", "value": 0.0123}],
        fan_out="none",
    )
    before = services.plan_inputs(plan=Plan.objects.get(pk=plan.pk)).document
    assert before["site"]["electricity_usd_per_kwh"] == 0.0123
    response = world.alice.client.patch(f"/api/v1/sites/{site.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code in (200, 400), response.content[:300]  # kept, or refused naming the name
    after = services.plan_inputs(plan=Plan.objects.get(pk=plan.pk)).document
    assert after == before, (
        f"a rename changed the plan's solved inputs: electricity {before['site']['electricity_usd_per_kwh']} "
        f"-> {after['site'].get('electricity_usd_per_kwh')}"
    )


def test_an_uploaded_file_with_an_integer_of_over_4300_digits_is_refused_not_a_500(world: World) -> None:
    """The dashboard's upload reads JSON, then YAML (``solvers/document_text.py``: ``parse_text``). Python
    refuses to convert an integer literal of more than 4,300 digits with a ``ValueError``: ``json.loads``'s is
    swallowed (it is read as 'not JSON'), YAML's escapes both parsers' handlers and the form, so a 5 kB file
    is a 500 instead of a 400 naming the value (the API's own parser refuses the same number with its path)."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client
    from django.urls import reverse

    client = Client(raise_request_exception=False)
    client.force_login(world.carol.user)
    content = ("cluster:\n  accelerator: h100-sxm\n  gpus: " + "1" * 5000 + "\n").encode()
    response = client.post(
        reverse("web:plan-create"),
        {"form": "upload", "upload-name": "big", "upload-file": SimpleUploadedFile("big.yaml", content)},
    )
    assert response.status_code == 400, response.status_code
    assert not Plan.objects.filter(name="big").exists()


def test_a_plan_made_while_its_cluster_is_deleted_gives_a_409_not_a_500(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``scenario_delete`` counts the plans and results that use the scenario, then deletes it, with no lock
    between the two: a plan created on it in between (a concurrent POST /plans/) makes the delete's cascade
    hit the plan's PROTECT foreign key, and the ``ProtectedError`` escapes as a 500 instead of the 409 "used
    by a plan: archive it"."""
    from scenarios import models as scenario_models
    from scenarios import services

    world = env["world"]
    _cluster, model, site = env["trio"]
    spare = services.scenario_create(
        kind="cluster", team=world.alpha, name="spare", document=f.CLUSTER_DOC, user=world.alice.user
    )
    real_result = scenario_models.Result

    class ConcurrentPlanCreate:
        class objects:  # stands in for the manager
            @staticmethod
            def filter(**kwargs: Any) -> Any:
                # after the plans were counted, before the delete: another request creates a plan on it
                if not Plan.objects.filter(cluster_id=spare.pk).exists():
                    services.plan_create(
                        team=world.alpha,
                        user=world.alice.user,
                        name="raced",
                        cluster=spare,
                        model=model,
                        site=site,
                        training=f.TRAINING,
                    )
                return real_result.objects.filter(**kwargs)

    monkeypatch.setattr(services, "Result", ConcurrentPlanCreate)
    client = world.alice.client
    client.raise_request_exception = False
    response = client.delete(f"/api/v1/clusters/{spare.pk}/")
    assert response.status_code == 409, response.status_code
    # the answer is true: a plan was made meanwhile, and it keeps its cluster
    kept = ClusterScenario.objects.filter(pk=spare.pk).exists()
    assert kept == (response.status_code == 409) == Plan.objects.filter(cluster_id=spare.pk).exists()


@pytest.mark.parametrize("method", ["post", "patch"])
def test_a_plan_saved_on_a_cluster_deleted_meanwhile_names_the_cluster_not_the_name(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """The plan's check (a solve, up to seconds) runs between reading its cluster and saving it; a DELETE of
    that cluster in between (unused then, so allowed) makes the save's foreign key fail. The answer is a 400
    naming ``cluster`` (the scenario the plan asked for is gone), not "name already used", and nothing is
    stored."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    _cluster, model, site = env["trio"]
    doomed = services.scenario_create(
        kind="cluster", team=world.alpha, name="doomed", document=f.CLUSTER_DOC, user=world.alice.user
    )
    original = services.validate_plan_document

    def check_while_the_cluster_is_deleted(checked: Plan, **kwargs: Any) -> None:
        original(checked, **kwargs)
        if ClusterScenario.objects.filter(pk=doomed.pk).exists():  # a concurrent DELETE /clusters/<id>/
            services.scenario_delete(scenario=ClusterScenario.objects.get(pk=doomed.pk))

    monkeypatch.setattr(services, "validate_plan_document", check_while_the_cluster_is_deleted)
    client = world.alice.client
    if method == "post":
        body = {
            "name": "late",
            "cluster": doomed.pk,
            "model": model.pk,
            "site": site.pk,
            "training": f.TRAINING,
        }
        response = client.post("/api/v1/plans/", body, format="json")
    else:
        response = client.patch(f"/api/v1/plans/{plan.pk}/", {"cluster": doomed.pk}, format="json")
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == ["cluster"] and "deleted" in errors[0]["message"], errors
    assert not ClusterScenario.objects.filter(pk=doomed.pk).exists()
    assert not Plan.objects.filter(name="late").exists()
    assert Plan.objects.get(pk=plan.pk).cluster_id == _cluster.pk
