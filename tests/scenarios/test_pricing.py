"""Price resolution: explicit document prices > team book > global book > catalog, with provenance."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import pricing, services
from tests.scenarios.factories import CLUSTER_H100, make_plan, make_team

pytestmark = pytest.mark.django_db


def publish(team, entries, name="book"):
    return services.price_book_publish(team=team, user=None, name=name, entries=entries, fan_out="none")


def test_catalog_prices_when_no_book() -> None:
    team = make_team()
    plan = make_plan(team=team)
    inputs = services.plan_inputs(plan=plan)
    accel = inputs.prices[pricing.PATH_ACCELERATOR_PRICE]
    assert accel["origin"] == "catalog"
    assert accel["value"] == 25_000.0
    assert inputs.document["cluster"]["accelerator"] == "h100-sxm"  # left for the solver's own catalog
    electricity = inputs.prices[pricing.PATH_ELECTRICITY_PRICE]
    assert electricity["origin"] == "catalog" and electricity["key"] == "electricity:quebec"
    assert inputs.prices[pricing.PATH_CLOUD_PRICE]["value"] is None


def test_global_book_then_team_override_key_by_key() -> None:
    team, other = make_team(), make_team()
    plan, other_plan = make_plan(team=team), make_plan(team=other)
    g = publish(
        None,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 20000, "source": "vendor quote"},
            {"kind": "electricity", "key": "quebec", "value": 0.04},
        ],
    )
    t = publish(team, [{"kind": "accelerator", "key": "h100-sxm", "value": 18000}])
    inputs = services.plan_inputs(plan=plan)
    assert inputs.document["cluster"]["accelerator"] == {"preset": "h100-sxm", "unit_price_usd": 18000.0}
    accel = inputs.prices[pricing.PATH_ACCELERATOR_PRICE]
    assert (accel["origin"], accel["price_book_id"], accel["price_book_version"]) == ("team_book", t.pk, 1)
    # The team book lists no electricity price: the global one applies.
    electricity = inputs.prices[pricing.PATH_ELECTRICITY_PRICE]
    assert (electricity["origin"], electricity["value"], electricity["price_book_id"]) == (
        "global_book",
        0.04,
        g.pk,
    )
    assert inputs.document["site"]["electricity_usd_per_kwh"] == 0.04
    # Another team sees only the global book.
    other_accel = services.plan_inputs(plan=other_plan).prices[pricing.PATH_ACCELERATOR_PRICE]
    assert (other_accel["origin"], other_accel["value"]) == ("global_book", 20000.0)
    snapshot = inputs.snapshot()
    assert snapshot["price_books"]["global"]["id"] == g.pk and snapshot["price_books"]["team"]["id"] == t.pk


def test_explicit_document_price_wins_over_books() -> None:
    team = make_team()
    cluster = {**CLUSTER_H100, "accelerator": {"preset": "h100-sxm", "unit_price_usd": 31000}}
    plan = make_plan(
        team=team, cluster_doc=cluster, site_doc={"region": "quebec", "electricity_usd_per_kwh": 0.09}
    )
    publish(
        None,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 20000},
            {"kind": "electricity", "key": "quebec", "value": 0.04},
        ],
    )
    inputs = services.plan_inputs(plan=plan)
    assert inputs.prices[pricing.PATH_ACCELERATOR_PRICE]["origin"] == "scenario"
    assert inputs.document["cluster"]["accelerator"]["unit_price_usd"] == 31000
    electricity = inputs.prices[pricing.PATH_ELECTRICITY_PRICE]
    assert (electricity["origin"], electricity["value"]) == ("scenario", 0.09)


def test_node_price_is_divided_over_its_accelerators_and_beats_the_accelerator_price() -> None:
    team = make_team()
    plan = make_plan(team=team, cluster_doc={"node": "dgx-h100", "gpus": 64})
    publish(
        None,
        [
            {"kind": "node", "key": "dgx-h100", "value": 400000},
            {"kind": "accelerator", "key": "h100-sxm", "value": 20000},
        ],
    )
    inputs = services.plan_inputs(plan=plan)
    used = inputs.prices[pricing.PATH_ACCELERATOR_PRICE]
    assert used["value"] == 50000.0 and used["key"] == "node:dgx-h100" and used["unit"] == "usd"
    assert inputs.document["cluster"]["accelerator"] == {"preset": "h100-sxm", "unit_price_usd": 50000.0}


def test_any_price_of_the_teams_book_beats_a_more_specific_price_of_the_global_book() -> None:
    """The team's book is the team's own deal: its H100 price prices the team's DGX H100 plans even where the
    global book lists the DGX H100 node (a node price is more specific), and its generic H100 cloud price
    beats the global book's AWS one. Within one book the more specific key still wins."""
    team = make_team()
    plan = make_plan(team=team, cluster_doc={"node": "dgx-h100", "gpus": 64}, cloud_provider="aws")
    publish(
        None,
        [
            {"kind": "node", "key": "dgx-h100", "value": 400000},
            {"kind": "cloud", "key": "aws:h100-sxm", "value": 3.9},
        ],
    )
    publish(
        team,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 18000},
            {"kind": "cloud", "key": "h100-sxm", "value": 2.1},
        ],
    )
    prices = services.plan_inputs(plan=plan).prices
    accelerator, cloud = prices[pricing.PATH_ACCELERATOR_PRICE], prices[pricing.PATH_CLOUD_PRICE]
    assert (accelerator["value"], accelerator["origin"], accelerator["key"]) == (
        18000.0,
        "team_book",
        "accelerator:h100-sxm",
    )
    assert (cloud["value"], cloud["origin"], cloud["key"]) == (2.1, "team_book", "cloud:h100-sxm")
    # The team's own node price beats its own accelerator price.
    publish(team, [{"kind": "node", "key": "dgx-h100", "value": 160000}])
    accelerator = services.plan_inputs(plan=plan).prices[pricing.PATH_ACCELERATOR_PRICE]
    assert (accelerator["value"], accelerator["key"]) == (20000.0, "node:dgx-h100")


def test_site_specific_electricity_and_provider_cloud_prices() -> None:
    team = make_team()
    plan = make_plan(team=team, cloud_provider="aws")
    publish(
        None,
        [
            {"kind": "electricity", "key": "quebec", "value": 0.04},
            {"kind": "cloud", "key": "h100-sxm", "value": 2.5},
            {"kind": "cloud", "key": "aws:h100-sxm", "value": 3.9},
        ],
    )
    # A site is a team's: its price belongs in the team's book (a global book cannot name it).
    publish(team, [{"kind": "electricity", "key": f"site:{plan.site.name}", "value": 0.03}])
    inputs = services.plan_inputs(plan=plan)
    assert inputs.prices[pricing.PATH_ELECTRICITY_PRICE]["value"] == 0.03
    assert inputs.prices[pricing.PATH_CLOUD_PRICE]["value"] == 3.9
    assert inputs.document["economics"]["cloud_usd_per_gpu_hour"] == 3.9


def test_priced_document_solves_with_the_book_price() -> None:
    from solvers import solve

    team = make_team()
    plan = make_plan(team=team)
    before = solve(services.plan_document(plan=plan))["tco"]["capex_usd"]
    publish(None, [{"kind": "accelerator", "key": "h100-sxm", "value": 12500}])
    after = solve(services.plan_document(plan=plan))["tco"]["capex_usd"]
    assert after < before


def test_price_book_validation_names_the_entry_and_rule() -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as err:
        publish(
            None,
            [
                {"kind": "accelerator", "key": "h100-sxm", "value": 1},
                {"kind": "gpu", "key": "x", "value": 1},
                {"kind": "electricity", "key": "quebec", "value": -1},
                {"kind": "accelerator", "key": "h100-sxm", "value": 2},
                {"kind": "cloud", "key": "h100-sxm", "value": 2, "unit": "usd"},
            ],
        )
    errors = err.value.message_dict
    assert set(errors) == {"entries[1].kind", "entries[2].value", "entries[3].key", "entries[4].unit"}
    assert "duplicate" in errors["entries[3].key"][0]


def test_versions_count_per_scope() -> None:
    team = make_team()
    books = [publish(None, [{"kind": "accelerator", "key": "h100-sxm", "value": v}]) for v in (1, 2)]
    team_book = publish(team, [{"kind": "accelerator", "key": "h100-sxm", "value": 3}])
    assert [b.version for b in books] == [1, 2] and team_book.version == 1


@pytest.mark.parametrize(
    ("cluster", "site", "economics", "path"),
    [
        (
            {**CLUSTER_H100, "accelerator": {"preset": "h100-sxm", "unit_price_usd": [1]}},
            None,
            None,
            "cluster.accelerator.unit_price_usd",
        ),
        ({**CLUSTER_H100, "accelerator": 7}, None, None, "cluster.accelerator"),
        (
            None,
            {"region": "quebec", "electricity_usd_per_kwh": "cheap"},
            None,
            "site.electricity_usd_per_kwh",
        ),
        (None, None, {"cloud_usd_per_gpu_hour": [2.0]}, "economics.cloud_usd_per_gpu_hour"),
    ],
)
def test_bad_explicit_prices_reach_the_solver_validation_untouched(cluster, site, economics, path) -> None:
    from solvers import ScenarioError

    team = make_team()
    plan = make_plan(team=team)
    publish(
        None,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 20000},
            {"kind": "electricity", "key": "quebec", "value": 0.04},
            {"kind": "cloud", "key": "h100-sxm", "value": 2.0},
        ],
    )
    if cluster is not None:
        services.scenario_update(scenario=plan.cluster, user=None, document=CLUSTER_H100)
        with pytest.raises(ScenarioError) as err:
            services.scenario_update(scenario=plan.cluster, user=None, document=cluster)
    elif site is not None:
        with pytest.raises(ScenarioError) as err:
            services.scenario_update(scenario=plan.site, user=None, document=site)
    else:
        with pytest.raises(ScenarioError) as err:
            services.plan_update(plan=plan, user=None, economics=economics)
    assert any(e.path.startswith(path) for e in err.value.errors), err.value.errors
    # Pricing itself never raises on them: it leaves the value for the solver to refuse.
    document: dict[str, Any] = {
        "schema_version": 1,
        "cluster": cluster or CLUSTER_H100,
        "site": site or {},
        "economics": economics or {},
    }
    priced, _ = pricing.apply_prices(document=document, sheet=pricing.sheet_for_team(team_id=team.pk))
    assert priced["cluster"]["accelerator"] == document["cluster"]["accelerator"] or cluster is None
