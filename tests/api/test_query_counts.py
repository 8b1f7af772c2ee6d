"""Lists and compare cost the same number of queries whatever their length (1 vs 200 rows, 2 vs 10 plans)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def count_queries(client: Any, url: str, *, rows: int | None = None) -> int:
    client.get(url)  # the first request of a token stamps its last use; later ones do not write
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    if rows is not None:
        assert response.json()["count"] == rows
    return len(ctx.captured_queries)


def bulk_rows(world: World, n: int) -> None:
    """n rows of every listed kind for team alpha, written in bulk (a few queries, not thousands)."""
    from scenarios import models as m

    team, user = world.alpha, world.alice.user
    trio = f.scenario_trio(team=team, user=user, suffix="-base")
    base = f.plan_for(team=team, user=user, name="base", trio=trio)
    scenario_models: tuple[type[Any], ...] = (m.ClusterScenario, m.ModelScenario, m.SiteScenario)
    for model in scenario_models:
        model.objects.bulk_create(model(team=team, name=f"bulk-{i}") for i in range(n - 1))
    m.Plan.objects.bulk_create(
        m.Plan(team=team, name=f"bulk-{i}", cluster=trio[0], model=trio[1], site=trio[2], training=f.TRAINING)
        for i in range(n - 1)
    )
    m.Run.objects.bulk_create(m.Run(plan=base, team=team) for _ in range(n))
    book = m.PriceBook.objects.create(team=team, version=1, name="v1")
    m.PriceBook.objects.bulk_create(m.PriceBook(team=team, version=v, name=f"v{v}") for v in range(2, n + 1))
    m.PriceEntry.objects.create(
        price_book=book, kind="electricity", key="quebec", value=0.05, unit="usd_per_kwh"
    )
    from scenarios.adapters import plan_revisions

    revs = plan_revisions(plan=base)
    report = f.fake_report(1.0)
    m.Result.objects.bulk_create(
        m.Result(
            plan=base,
            team=team,
            version=v,
            input_snapshot={},
            prices={},
            solver_version="test",
            input_hash=hashlib.sha256(str(v).encode()).hexdigest(),
            price_book=book,
            report=report,
            cluster_revision=revs.cluster,
            model_revision=revs.model,
            site_revision=revs.site,
        )
        for v in range(1, n + 1)
    )


LISTS = [
    "/api/v1/clusters/",
    "/api/v1/models/",
    "/api/v1/sites/",
    "/api/v1/plans/",
    "/api/v1/runs/",
    "/api/v1/results/",
    "/api/v1/price-books/",
]

# Pinned: authentication (token + user), the caller's roles, the page count, the page.
EXPECTED_LIST_QUERIES = 4
# Results also say whether each is current (scenarios.currency): the results' provenance, their plans, the
# newest price books, their entries, the options of search and sweep jobs, and (these results being stale)
# the three parts' revision documents they used.
EXPECTED_QUERIES_BY_LIST = {"/api/v1/results/": EXPECTED_LIST_QUERIES + 7}


@pytest.mark.parametrize("url", LISTS)
def test_list_query_count_is_pinned_and_independent_of_length(world: World, url: str) -> None:
    bulk_rows(world, 1)
    one = count_queries(world.alice.client, f"{url}?page_size=500", rows=1)
    assert one == EXPECTED_QUERIES_BY_LIST.get(url, EXPECTED_LIST_QUERIES)


@pytest.mark.parametrize("url", LISTS)
def test_list_of_200_costs_what_a_list_of_1_costs(world: World, url: str) -> None:
    bulk_rows(world, 200)
    expected = EXPECTED_QUERIES_BY_LIST.get(url, EXPECTED_LIST_QUERIES)
    assert count_queries(world.alice.client, f"{url}?page_size=500", rows=200) == expected


def test_revisions_and_members_lists_are_constant(world: World) -> None:
    from scenarios import models as m
    from scenarios.models import Membership

    cluster = f.scenario_trio(team=world.alpha, user=world.alice.user)[0]
    few = count_queries(world.alice.client, f"/api/v1/clusters/{cluster.pk}/revisions/")
    m.ClusterRevision.objects.bulk_create(
        m.ClusterRevision(scenario=cluster, number=i, document=f.CLUSTER_DOC) for i in range(2, 201)
    )
    assert (
        count_queries(world.alice.client, f"/api/v1/clusters/{cluster.pk}/revisions/?page_size=500", rows=200)
        == few
    )
    members = count_queries(world.alice.client, f"/api/v1/teams/{world.alpha.pk}/members/")
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.bulk_create(get_user_model()(username=f"u{i}") for i in range(200))
    Membership.objects.bulk_create(Membership(team=world.alpha, user=u, role="viewer") for u in users)
    assert (
        count_queries(world.alice.client, f"/api/v1/teams/{world.alpha.pk}/members/?page_size=500") == members
    )


def plans_with_results(world: World, n: int) -> list[int]:
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix=f"-{n}")
    ids = []
    for i in range(n):
        plan = f.plan_for(team=world.alpha, user=world.alice.user, name=f"cmp-{n}-{i}", trio=trio)
        f.insert_result(plan=plan, scale=1.0 + i)
        ids.append(plan.pk)
    return ids


# Pinned: authentication (token + user), the caller's roles, the plans with their latest results, and
# whether those results are current (their provenance, their plans, the newest price books and their
# entries, the options of jobs, and the revision documents of stale results: see EXPECTED_QUERIES_BY_LIST).
EXPECTED_COMPARE_QUERIES = 9


def test_compare_of_2_and_10_plans_costs_the_same_queries(world: World) -> None:
    two = plans_with_results(world, 2)
    ten = plans_with_results(world, 10)
    q2 = count_queries(world.alice.client, f"/api/v1/compare/?plans={','.join(map(str, two))}")
    q10 = count_queries(world.alice.client, f"/api/v1/compare/?plans={','.join(map(str, ten))}")
    assert q2 == q10 == EXPECTED_COMPARE_QUERIES
    q10_csv = count_queries(
        world.alice.client, f"/api/v1/compare/?plans={','.join(map(str, ten))}&format=csv"
    )
    assert q10_csv == EXPECTED_COMPARE_QUERIES


def test_compare_of_pinned_results_is_constant(world: World) -> None:
    from scenarios.models import Plan

    two = [Plan.objects.get(pk=p).latest_result_id for p in plans_with_results(world, 2)]
    ten = [Plan.objects.get(pk=p).latest_result_id for p in plans_with_results(world, 10)]
    q2 = count_queries(world.alice.client, f"/api/v1/compare/?results={','.join(map(str, two))}")
    q10 = count_queries(world.alice.client, f"/api/v1/compare/?results={','.join(map(str, ten))}")
    assert q2 == q10 == EXPECTED_COMPARE_QUERIES
