"""Publishing price books: patch and replace, removals, key and value checks, what a version changed and
how many plans it re-runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from scenarios import execution, fanout, price_books, pricing, services
from scenarios.models import PriceBook, Result, Run
from tests.scenarios.factories import CLUSTER_A100, make_plan, make_team

pytestmark = pytest.mark.django_db

H100_OVERRIDE = {"kind": "accelerator", "key": "h100-sxm", "value": 18000, "source": "team deal"}
QUEBEC_OVERRIDE = {"kind": "electricity", "key": "quebec", "value": 0.031}
CLOUD_ONLY = {"kind": "cloud", "key": "h100-sxm", "value": 2.9}


def publish(team: Any, entries: list[dict[str, Any]], **kwargs: Any) -> PriceBook:
    return services.price_book_publish(
        team=team, user=None, name=kwargs.pop("name", "book"), entries=entries, fan_out="none", **kwargs
    )


def entries_of(book: PriceBook) -> dict[tuple[str, str], float]:
    return {(e.kind, e.key): e.value for e in book.entries.all()}


def errors_of(excinfo: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return excinfo.value.message_dict


def test_a_patch_keeps_the_earlier_overrides_and_a_re_run_uses_them(claim, sent) -> None:
    team = make_team()
    plan = make_plan(team=team)
    v1 = publish(team, [H100_OVERRIDE, QUEBEC_OVERRIDE], name="H100 deal and power contract")
    v2 = publish(team, [CLOUD_ONLY], name="cloud prices")  # no mode: a patch
    prices = services.plan_inputs(plan=plan).prices
    assert prices[pricing.PATH_ACCELERATOR_PRICE]["value"] == 18000.0
    assert prices[pricing.PATH_ELECTRICITY_PRICE]["value"] == 0.031
    assert prices[pricing.PATH_CLOUD_PRICE]["value"] == 2.9
    # The new version holds the whole book, so every reader of the newest book sees all three prices.
    assert entries_of(v2) == {
        ("accelerator", "h100-sxm"): 18000.0,
        ("electricity", "quebec"): 0.031,
        ("cloud", "h100-sxm"): 2.9,
    }
    assert (v2.mode, v2.based_on_id, v1.mode, v1.based_on_id) == ("patch", v1.pk, "patch", None)
    assert v2.entries.get(key="h100-sxm", kind="accelerator").source == "team deal"
    # The re-run the publication causes solves with v1's overrides and v2's cloud price.
    assert fanout.price_book_fan_out(price_book_id=v2.pk).runs_created == 1
    run = Run.objects.get(plan=plan)
    execution.run_execute(run_id=run.pk, claim=claim)
    result = Result.objects.get(plan=plan)
    used = result.input_snapshot["prices"]
    assert used[pricing.PATH_ACCELERATOR_PRICE]["value"] == 18000.0
    assert used[pricing.PATH_ACCELERATOR_PRICE]["price_book_id"] == v2.pk
    assert used[pricing.PATH_ELECTRICITY_PRICE]["value"] == 0.031


def test_replace_drops_the_keys_it_does_not_list_and_says_so() -> None:
    team = make_team()
    plan = make_plan(team=team)
    publish(team, [H100_OVERRIDE, QUEBEC_OVERRIDE])
    v2 = publish(team, [CLOUD_ONLY], mode="replace")
    assert (v2.mode, v2.based_on_id) == ("replace", None)
    assert entries_of(v2) == {("cloud", "h100-sxm"): 2.9}
    prices = services.plan_inputs(plan=plan).prices
    assert prices[pricing.PATH_ACCELERATOR_PRICE]["origin"] == "catalog"
    changes = services.price_book_changes(book=v2)
    assert changes.removed == [
        {"kind": "accelerator", "key": "h100-sxm", "value": 18000.0},
        {"kind": "electricity", "key": "quebec", "value": 0.031},
    ]
    assert changes.added == [{"kind": "cloud", "key": "h100-sxm", "value": 2.9}]
    assert (changes.changed, changes.unchanged) == ([], 0)


def test_remove_deletes_a_present_key_and_refuses_a_missing_one() -> None:
    team = make_team()
    publish(team, [H100_OVERRIDE, QUEBEC_OVERRIDE])
    with pytest.raises(ValidationError) as err:
        publish(team, [CLOUD_ONLY, {"kind": "electricity", "key": "texas", "remove": True}])
    assert list(errors_of(err)) == ["entries[1].key"]
    assert "not in v1" in errors_of(err)["entries[1].key"][0]
    assert PriceBook.objects.filter(team=team).count() == 1
    v2 = publish(team, [{"kind": "electricity", "key": "quebec", "remove": True}])
    assert entries_of(v2) == {("accelerator", "h100-sxm"): 18000.0}
    assert services.price_book_changes(book=v2).removed == [
        {"kind": "electricity", "key": "quebec", "value": 0.031}
    ]


@pytest.mark.parametrize(
    ("mode", "entry", "path", "message"),
    [
        (
            "replace",
            {"kind": "electricity", "key": "quebec", "remove": True},
            "entries[0].remove",
            "only a patch",
        ),
        (
            "patch",
            {"kind": "electricity", "key": "quebec", "remove": True, "value": 1},
            "entries[0].value",
            "only kind",
        ),
        (
            "patch",
            {"kind": "electricity", "key": "quebec", "remove": "yes"},
            "entries[0].remove",
            "true or false",
        ),
    ],
)
def test_removal_rules(mode: str, entry: dict[str, Any], path: str, message: str) -> None:
    team = make_team()
    publish(team, [QUEBEC_OVERRIDE])
    with pytest.raises(ValidationError) as err:
        publish(team, [entry], mode=mode)
    assert list(errors_of(err)) == [path]
    assert message in errors_of(err)[path][0]


def test_a_first_patch_has_nothing_to_remove_and_is_based_on_nothing() -> None:
    team = make_team()
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "cloud", "key": "h100-sxm", "remove": True}])
    assert "no version yet" in errors_of(err)["entries[0].key"][0]
    assert publish(team, [CLOUD_ONLY]).based_on_id is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"kind": "electricity", "key": "quebeck", "value": 0.05},
            "unknown region 'quebeck'; did you mean 'quebec'?",
        ),
        (
            {"kind": "accelerator", "key": "h100", "value": 20000},
            "unknown accelerator 'h100'; did you mean 'h100-sxm'?",
        ),
        ({"kind": "accelerator", "key": "H100-SXM", "value": 20000}, "did you mean 'h100-sxm'?"),
        (
            {"kind": "node", "key": "dgx-h10", "value": 300000},
            "unknown node 'dgx-h10'; did you mean 'dgx-h100'?",
        ),
        (
            {"kind": "cloud", "key": "aws:h100", "value": 3},
            "unknown accelerator 'h100'; did you mean 'aws:h100-sxm'?",
        ),
        ({"kind": "cloud", "key": "AWS:h100-sxm", "value": 3}, "provider 'AWS' must be a lowercase slug"),
        (
            {"kind": "electricity", "key": "atlantis", "value": 0.05},
            "unknown region 'atlantis'; known: california,",
        ),
    ],
)
def test_unknown_keys_are_refused_with_the_closest_known_key(entry: dict[str, Any], message: str) -> None:
    team = make_team()
    with pytest.raises(ValidationError) as err:
        publish(team, [CLOUD_ONLY, entry])
    assert list(errors_of(err)) == ["entries[1].key"]
    assert message in errors_of(err)["entries[1].key"][0]
    assert not PriceBook.objects.exists()


def test_site_keys_name_a_live_site_of_the_team_and_never_appear_in_a_global_book() -> None:
    team, other = make_team(), make_team()
    plan = make_plan(team=team)
    site = plan.site.name
    foreign = make_plan(team=other).site.name
    with pytest.raises(ValidationError) as err:
        publish(None, [{"kind": "electricity", "key": f"site:{site}", "value": 0.02}])
    assert "a global book cannot name a team's site" in errors_of(err)["entries[0].key"][0]
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "electricity", "key": f"site:{foreign}", "value": 0.02}])
    assert errors_of(err)["entries[0].key"][0].startswith(f"unknown site {foreign!r}")
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "electricity", "key": f"site:{site}x", "value": 0.02}])
    assert f"did you mean 'site:{site}'?" in errors_of(err)["entries[0].key"][0]
    book = publish(team, [{"kind": "electricity", "key": f"site:{site}", "value": 0.02}])
    assert services.plan_inputs(plan=plan).prices[pricing.PATH_ELECTRICITY_PRICE]["value"] == 0.02
    services.scenario_archive(scenario=plan.site, user=None)
    with pytest.raises(ValidationError):
        publish(team, [{"kind": "electricity", "key": f"site:{site}", "value": 0.01}])
    # A patch carries the archived site's price over and can still remove it.
    assert entries_of(publish(team, [{"kind": "electricity", "key": f"site:{site}", "remove": True}])) == {}
    assert book.version == 1


def test_prices_outside_the_solvers_limits_are_refused_with_the_limit() -> None:
    from solvers.prices import price_limits

    team = make_team()
    assert price_limits("electricity") == (0.0, 10.0)
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "electricity", "key": "quebec", "value": 11}])
    message = errors_of(err)["entries[0].value"][0]
    assert "0 to 10 usd_per_kwh" in message and "site.electricity_usd_per_kwh" in message
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "cloud", "key": "h100-sxm", "value": 10_001}])
    assert "0 to 10,000 usd_per_gpu_hour" in errors_of(err)["entries[0].value"][0]
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "accelerator", "key": "h100-sxm", "value": -1}])
    assert "entries[0].value" in errors_of(err)
    book = publish(team, [{"kind": "electricity", "key": "quebec", "value": 10}])
    assert entries_of(book) == {("electricity", "quebec"): 10.0}


def test_a_node_price_is_checked_against_that_nodes_accelerators() -> None:
    """A node price reaches the solver divided by the node's gpus_per_node: 1e11 USD for an 8-GPU DGX H100
    is 1.25e10 USD per accelerator, above the solver's 1e8, so it is refused at the publish (not at every
    run of a dgx-h100 plan), with the entry path and the node's own limit."""
    from solvers import catalog
    from solvers.prices import price_limits

    team = make_team()
    assert catalog.NODES["dgx-h100"]["gpus_per_node"] == 8
    assert price_limits("accelerator")[1] == 100_000_000
    with pytest.raises(ValidationError) as err:
        publish(team, [H100_OVERRIDE, {"kind": "node", "key": "dgx-h100", "value": 1e11}])
    assert list(errors_of(err)) == ["entries[1].value"]
    message = errors_of(err)["entries[1].value"][0]
    assert message.startswith("must be from 0 to 800,000,000 usd for the node 'dgx-h100'"), message
    assert "8 accelerators" in message and "cluster.accelerator.unit_price_usd" in message
    assert "0 to 100,000,000 usd per accelerator" in message
    assert not PriceBook.objects.filter(team=team).exists()
    # The node's own bound (8 x 1e8) is accepted; a larger node has a larger bound.
    book = publish(team, [{"kind": "node", "key": "dgx-h100", "value": 8e8}])
    assert entries_of(book) == {("node", "dgx-h100"): 8e8}
    with pytest.raises(ValidationError) as err:
        publish(team, [{"kind": "node", "key": "dgx-h100", "value": 8e8 + 100}])
    assert "entries[0].value" in errors_of(err)
    assert catalog.NODES["gb200-nvl72"]["gpus_per_node"] == 72
    publish(team, [{"kind": "node", "key": "gb200-nvl72", "value": 7.2e9}])


def test_a_cloud_key_with_an_empty_provider_is_refused() -> None:
    team = make_team()
    with pytest.raises(ValidationError) as err:
        publish(team, [CLOUD_ONLY, {"kind": "cloud", "key": ":h100-sxm", "value": 2.5}])
    assert list(errors_of(err)) == ["entries[1].key"]
    message = errors_of(err)["entries[1].key"][0]
    assert message.startswith("the provider before ':' is empty"), message
    assert "'h100-sxm' alone" in message
    with pytest.raises(ValidationError) as err:
        publish(None, [{"kind": "cloud", "key": " :h100-sxm ", "value": 2.5}])
    assert "the provider before ':' is empty" in errors_of(err)["entries[0].key"][0]
    assert not PriceBook.objects.exists()
    book = publish(team, [{"kind": "cloud", "key": "aws:h100-sxm", "value": 2.5}, CLOUD_ONLY])
    assert set(entries_of(book)) == {("cloud", "aws:h100-sxm"), ("cloud", "h100-sxm")}


def test_changes_and_plans_to_rerun_use_the_fan_outs_rule() -> None:
    team = make_team()
    moved = make_plan(team=team)  # H100
    make_plan(team=team, cluster_doc=CLUSTER_A100)  # no price of A100 changes
    publish(
        team,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 20000},
            {"kind": "accelerator", "key": "mi300x", "value": 15000},
            {"kind": "cloud", "key": "aws:h100-sxm", "value": 3.0},
        ],
    )
    v2 = publish(
        team,
        [
            {"kind": "accelerator", "key": "h100-sxm", "value": 19000},
            {"kind": "accelerator", "key": "b200", "value": 40000},
            {"kind": "cloud", "key": "aws:h100-sxm", "remove": True},
        ],
    )
    summary = services.price_book_summary(book=v2)
    assert summary.as_dict() == {
        "changes": {
            "added": [{"kind": "accelerator", "key": "b200", "value": 40000.0}],
            "changed": [{"kind": "accelerator", "key": "h100-sxm", "before": 20000.0, "after": 19000.0}],
            "removed": [{"kind": "cloud", "key": "aws:h100-sxm", "value": 3.0}],
            "unchanged": 1,
        },
        "plans_to_rerun": 1,
    }
    moved_ids = [plan.pk for plan, sheet in fanout.plans_with_price_changes(book=v2) if sheet is not None]
    assert moved_ids == [moved.pk]
    # A version that changes nothing any plan uses re-runs nothing.
    v3 = publish(team, [{"kind": "accelerator", "key": "b200", "value": 41000}])
    assert services.price_book_summary(book=v3).plans_to_rerun == 0


def test_a_global_patch_counts_only_the_plans_of_teams_that_do_not_override(sent) -> None:
    team, shielded = make_team(), make_team()
    make_plan(team=team)
    make_plan(team=shielded)
    publish(None, [{"kind": "accelerator", "key": "h100-sxm", "value": 25000}])
    publish(shielded, [{"kind": "accelerator", "key": "h100-sxm", "value": 24000}])
    cut = publish(None, [{"kind": "electricity", "key": "quebec", "value": 0.06}])
    assert entries_of(cut) == {("accelerator", "h100-sxm"): 25000.0, ("electricity", "quebec"): 0.06}
    counted = services.price_book_summary(book=cut).plans_to_rerun
    assert counted == 2 == fanout.price_book_fan_out(price_book_id=cut.pk).plans_changed
    cut2 = publish(None, [{"kind": "accelerator", "key": "h100-sxm", "value": 20000}])
    assert services.price_book_summary(book=cut2).plans_to_rerun == 1


def test_a_patch_is_bounded_by_the_size_of_the_resulting_book(monkeypatch: pytest.MonkeyPatch) -> None:
    team = make_team()
    publish(team, [H100_OVERRIDE, QUEBEC_OVERRIDE])
    monkeypatch.setattr(price_books, "MAX_PRICE_ENTRIES", 2)
    with pytest.raises(ValidationError) as err:
        publish(team, [CLOUD_ONLY])
    assert "would hold 3 prices; at most 2" in errors_of(err)["entries"][0]
