"""Compare, results and their lists at their edges: which results are current, what a diff compares with by
default, strict booleans, repeated and over-long parameters, orderings and stable paging."""

from __future__ import annotations

import pytest

from scenarios import services
from scenarios.models import Plan, Result
from tests.api import factories as f
from tests.api.conftest import World, no_broker  # noqa: F401  (fixture)
from tests.api.inprocess import solve_plan

pytestmark = pytest.mark.django_db


def _ids(world: World, query: str) -> list[int]:
    response = world.alice.client.get(f"/api/v1/results/?{query}")
    assert response.status_code == 200, response.content[:300]
    return sorted(row["id"] for row in response.json()["results"])


def _economics(plan: Plan, years: int) -> Plan:
    return services.plan_update(
        plan=Plan.objects.get(pk=plan.pk), user=None, economics={"amortization_years": years}
    )


def _solved_a_b_a(world: World) -> tuple[Plan, Result, Result]:
    """Inputs A -> v1, inputs B -> v2, inputs back to A: the run finds v1 again and v1 is the plan's current
    result again (``latest_result``), though v2 is the newest version."""
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="flip")
    first = solve_plan(plan)
    second = solve_plan(_economics(plan, 4))
    assert second.pk != first.pk and second.version > first.version
    assert solve_plan(_economics(plan, 3)).pk == first.pk
    assert Plan.objects.get(pk=plan.pk).latest_result_id == first.pk
    return plan, first, second


def test_current_filter_finds_a_current_result_that_is_not_the_newest_version(
    world: World,
    no_broker: None,  # noqa: F811
) -> None:
    _, first, second = _solved_a_b_a(world)
    assert world.alice.client.get(f"/api/v1/results/{first.pk}/").json()["current"] is True
    assert world.alice.client.get(f"/api/v1/results/{second.pk}/").json()["current"] is False
    # the list filter must agree with each result's own ``current``
    assert _ids(world, "current=true") == [first.pk]
    assert _ids(world, "current=false") == [second.pk]


def test_current_filter_keeps_each_of_two_current_searches_of_one_plan(
    world: World,
    no_broker: None,  # noqa: F811
) -> None:
    # The same root cause without any revert: two searches of one plan over different spaces are both
    # current (a search's identity includes its options), but ?current= only checks the newest of each kind.
    from scenarios import execution, search_jobs
    from tests.api.inprocess import claim

    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="searched")

    def search(tps: list[int]) -> Result:
        space = {"tp": tps, "cp": [1], "pp": [1], "microbatch_seqs": [1]}
        run = search_jobs.search_request(plan=plan, user=None, space=space, top=1)
        outcome = execution.run_execute(run_id=run.pk, claim=claim())
        assert outcome.status == "succeeded" and outcome.result_id is not None
        return Result.objects.get(pk=outcome.result_id)

    narrow, wide = search([1, 2]), search([1, 2, 4])
    for result in (narrow, wide):
        assert world.alice.client.get(f"/api/v1/results/{result.pk}/").json()["current"] is True
    assert _ids(world, "current=true") == sorted([narrow.pk, wide.pk])
    assert _ids(world, "current=false") == []


def test_diff_defaults_to_the_results_own_previous_result(
    world: World,
    no_broker: None,  # noqa: F811
) -> None:
    # After A -> v1, B -> v2, A -> v1 again, inputs C give v3, stored with previous = v1 and its delta
    # against v1 (the plan's current result when v3 was made). The diff without ?against= must be that
    # same comparison, not one against v2.
    plan, first, _ = _solved_a_b_a(world)
    third = solve_plan(_economics(plan, 5))
    detail = world.alice.client.get(f"/api/v1/results/{third.pk}/").json()
    assert detail["previous"] == first.pk
    assert detail["delta"]["previous_version"] == first.version
    diff = world.alice.client.get(f"/api/v1/results/{third.pk}/diff/")
    assert diff.status_code == 200, diff.content[:300]
    assert diff.json()["before"]["id"] == first.pk


@pytest.mark.parametrize("query", ["current=ture", "current=1", "latest=1", "latest=yes"])
def test_a_malformed_boolean_filter_is_a_400_not_the_unfiltered_list(world: World, query: str) -> None:
    # api/filters.py: "a typo never silently returns the unfiltered list".
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="p")
    first = f.insert_result(plan=plan)
    f.insert_result(plan=plan, scale=2.0, previous=first)
    response = world.alice.client.get(f"/api/v1/results/?{query}")
    assert response.status_code == 400, (response.status_code, response.json().get("count"))
    assert [e["path"] for e in response.json()["errors"]] == [query.split("=")[0]]


@pytest.mark.parametrize("param", ["created_after", "created_before"])
def test_an_unstorable_instant_is_a_400_naming_the_query_parameter(world: World, param: str) -> None:
    response = world.alice.client.get(f"/api/v1/results/?{param}=0001-01-01T00:00:00%2B01:00")
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == [param]


def test_a_repeated_plans_parameter_is_not_silently_cut_to_its_last_value(world: World) -> None:
    # ?plans=1&plans=2 (how many clients send a list) compared plan 2 alone, with a 200.
    a = f.plan_for(team=world.alpha, user=world.alice.user, name="a")
    b = f.plan_for(team=world.alpha, user=world.alice.user, name="b")
    f.insert_result(plan=a)
    f.insert_result(plan=b, scale=2.0)
    response = world.alice.client.get(f"/api/v1/compare/?plans={a.pk}&plans={b.pk}")
    if response.status_code == 200:
        assert [item["plan"] for item in response.json()["items"]] == [a.pk, b.pk]
    else:
        assert response.status_code == 400
        assert "plans" in [e["path"] for e in response.json()["errors"]]


@pytest.mark.parametrize(
    ("template", "param"),
    [
        ("/api/v1/compare/?plans={big}", "plans"),
        ("/api/v1/compare/?results={big}", "results"),
        ("/api/v1/compare/?plans={a},{b}&baseline={big}", "baseline"),
        ("/api/v1/results/{r}/diff/?against={big}", "against"),
    ],
)
def test_an_id_too_long_to_convert_is_a_400_naming_the_parameter(
    world: World, template: str, param: str
) -> None:
    # is_id_text passes 0-9 digits, then int() raises ValueError past 4,300 digits: a 500.
    a = f.plan_for(team=world.alpha, user=world.alice.user, name="a")
    b = f.plan_for(team=world.alpha, user=world.alice.user, name="b")
    first = f.insert_result(plan=a)
    f.insert_result(plan=b)
    second = f.insert_result(plan=a, scale=2.0, previous=first)
    client = world.alice.client
    client.raise_request_exception = False
    response = client.get(template.format(big="9" * 4301, a=a.pk, b=b.pk, r=second.pk))
    assert response.status_code == 400, response.status_code
    assert param in [e["path"] for e in response.json()["errors"]]


def test_a_malformed_ordering_is_a_400_not_silently_dropped(world: World) -> None:
    # StrictOrderingFilter strips every leading "-" before checking the name, and DRF then drops "--mfu"
    # (not its ordering pattern) without a word: the list comes back in the default order with a 200.
    response = world.alice.client.get("/api/v1/results/?ordering=--mfu")
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["ordering"]


@pytest.mark.parametrize("ordering", ["mfu", "-step_s", "created_at"])
def test_paging_through_an_ordered_list_sees_every_result_once(world: World, ordering: str) -> None:
    # Results of one plan re-priced keep the same step_s and mfu, and a fan-out stores its results with one
    # created_at; ?ordering= replaces the default ("-created_at", "-id") with no tie-breaker, so pages of
    # equal keys overlap in PostgreSQL (LIMIT/OFFSET over an unstable sort) and some results are never seen.
    import hashlib

    from django.utils import timezone

    from scenarios.adapters import plan_revisions

    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="repriced")
    revisions, now = plan_revisions(plan=plan), timezone.now()
    Result.objects.bulk_create(
        Result(
            plan=plan,
            team=world.alpha,
            version=v,
            input_snapshot={},
            prices={},
            solver_version="test",
            input_hash=hashlib.sha256(str(v).encode()).hexdigest(),
            report=f.fake_report(1.0),
            cluster_revision=revisions.cluster,
            model_revision=revisions.model,
            site_revision=revisions.site,
            step_s=1.15,
            mfu=0.4,
            total_usd=1e6 + v,
            created_at=now,
        )
        for v in range(1, 301)
    )
    seen: list[int] = []
    for page in range(1, 7):
        response = world.alice.client.get(f"/api/v1/results/?ordering={ordering}&page_size=50&page={page}")
        assert response.status_code == 200
        seen += [row["id"] for row in response.json()["results"]]
    assert len(seen) == 300
    assert len(set(seen)) == 300
