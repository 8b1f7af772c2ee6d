"""Sweep points are priced and derived the way a solve of the same document is.

A sweep sets each point's fields on the base scenario, then prices the point (``solvers.prices``), so a
point that changes the node, the accelerator or the region re-derives what follows from it: the
accelerator's peak and price, the region's electricity price and grid. A field the base states by value
keeps that value and the row says so (``pinned``). The property: a point's figures equal ``solve`` of the
same priced document with the point's best layout, to the last bit.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers import catalog, solve
from solvers.prices import PATH_ELECTRICITY_PRICE, PriceSheet, Pricing, Quote
from solvers.sweep import derived_fields, pinned_fields, plan_sweep, point_document, sweep_point
from tests.profiles import examples

SPACE = {"zero_stage": [1], "recompute": ["selective"], "grad_reduce_dtype": ["bf16"], "tp": [1, 2, 4, 8]}
BASE: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 64},
    "site": {"region": "quebec"},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "total_tokens": 1.0e11},
    "search": {"space": SPACE},
}
# (report section, key) of each figure a sweep row carries for its best layout.
FIGURES = {
    "step_s": ("step", "step_s"),
    "memory_bytes": ("memory", "total_bytes"),
    "usd_per_million_tokens": ("tco", "usd_per_million_tokens"),
    "total_usd": ("tco", "total_usd"),
    "total_kgco2e": ("carbon", "total_kgco2e"),
    "wall_clock_days": ("schedule", "wall_clock_days"),
    "facility_kwh": ("energy", "facility_kwh"),
    "water_l": ("carbon", "water_l"),
}


def quote(kind: str, key: str, value: float, *, origin: str = "team_book") -> Quote:
    return Quote(
        kind=kind,
        key=key,
        value=value,
        unit={"accelerator": "usd", "node": "usd", "cloud": "usd_per_gpu_hour"}.get(kind, "usd_per_kwh"),
        origin=origin,
        price_book_id=7,
        price_book_version=3,
        source="test quote",
        effective_date=None,
        price_book_name="test book",
    )


def sweep_of(base: dict[str, Any], field: str, values: list[Any]) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    doc["sweep"] = {"axes": [{"field": field, "values": values}]}
    return doc


def solve_point(base: dict[str, Any], point: dict[str, Any], layout: dict[str, Any], pricing: Pricing) -> Any:
    """``solve`` of the base with the point's fields set, priced, at the given layout."""
    scenario = {k: v for k, v in base.items() if k not in ("search", "sweep")}
    document, _ = pricing.apply(point_document(scenario, point))
    document["training"] = {**document["training"], "layout": layout}
    return solve(document)


def assert_row_equals_solve(base: dict[str, Any], row: dict[str, Any], pricing: Pricing) -> None:
    report = solve_point(base, row["point"], row["best"]["layout"], pricing)
    for name, (section, key) in FIGURES.items():
        assert row["best"]["metrics"][name] == report[section][key], (row["point"], name)


def test_a_node_sweep_rederives_the_accelerator_at_each_point() -> None:
    plan = plan_sweep(sweep_of(BASE, "cluster.node", ["dgx-a100-80gb", "dgx-h100", "dgx-b200"]))
    rows = [sweep_point(plan, i) for i in range(3)]
    steps = [row["best"]["metrics"]["step_s"] for row in rows]
    assert steps[0] > steps[1] > steps[2]  # A100 slower than H100 slower than B200
    for row in rows:
        assert "pinned" not in row
        assert_row_equals_solve(BASE, row, Pricing())


def test_a_region_sweep_bills_each_region_at_its_own_price() -> None:
    sheet = PriceSheet(quotes={("electricity", "virginia"): quote("electricity", "virginia", 0.2)})
    plan = plan_sweep(sweep_of(BASE, "site.region", ["quebec", "virginia", "iceland"]))
    rows = [sweep_point(plan, i, pricing=Pricing(sheet=sheet)) for i in range(3)]
    prices = [row["prices"][PATH_ELECTRICITY_PRICE] for row in rows]
    assert [p["value"] for p in prices] == [
        catalog.REGIONS["quebec"]["electricity_usd_per_kwh"],
        0.2,
        catalog.REGIONS["iceland"]["electricity_usd_per_kwh"],
    ]
    assert [p["origin"] for p in prices] == ["catalog", "team_book", "catalog"]
    for row in rows:
        assert_row_equals_solve(BASE, row, Pricing(sheet=sheet))


def test_a_field_the_scenario_states_is_kept_and_the_row_says_so() -> None:
    base = copy.deepcopy(BASE)
    base["cluster"]["accelerator"] = "h100-sxm"
    base["site"]["electricity_usd_per_kwh"] = 0.3
    plan = plan_sweep(sweep_of(base, "cluster.node", ["dgx-b200"]))
    row = sweep_point(plan, 0)
    assert [p["field"] for p in row["pinned"]] == ["cluster.accelerator"]
    assert row["pinned"][0]["value"] == "h100-sxm"
    assert row["pinned"][0]["swept"] == "cluster.node"
    region = sweep_point(plan_sweep(sweep_of(base, "site.region", ["iceland"])), 0)
    assert [p["field"] for p in region["pinned"]] == ["site.electricity_usd_per_kwh"]


def test_derived_fields_follow_the_catalog_through_nested_presets() -> None:
    node = derived_fields("cluster.node")
    assert {
        "cluster.accelerator",
        "cluster.accelerator.unit_price_usd",
        "economics.cloud_usd_per_gpu_hour",
    } <= set(node)
    assert "site.electricity_usd_per_kwh" in derived_fields("site.region")
    assert derived_fields("cluster.gpus") == ()
    # A field the point itself sets is not pinned.
    assert (
        pinned_fields(
            {"cluster": {"accelerator": "h100-sxm"}}, {"cluster.node": "x", "cluster.accelerator": "b200"}
        )
        == []
    )


AXES = st.sampled_from(
    [
        ("cluster.node", ["dgx-a100-80gb", "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-platform"]),
        ("cluster.accelerator", ["a100-sxm-80gb", "h100-sxm", "b200"]),
        ("site.region", ["quebec", "virginia", "poland", "iceland", "singapore"]),
        ("cluster.gpus", [32, 64, 128]),
        ("economics.amortization_years", [2.0, 3.0, 5.0]),
    ]
)


@st.composite
def sheets(draw: Any) -> PriceSheet:
    quotes: dict[tuple[str, str], Quote] = {}
    for kind, keys, lo, hi in (
        ("accelerator", sorted(catalog.ACCELERATORS), 5_000.0, 60_000.0),
        ("node", sorted(catalog.NODES), 100_000.0, 600_000.0),
        ("electricity", sorted(catalog.REGIONS), 0.01, 0.5),
        ("cloud", sorted(catalog.ACCELERATORS), 0.5, 12.0),
    ):
        for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
            value = draw(st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False))
            quotes[(kind, key)] = quote(kind, key, value)
    return PriceSheet(quotes=quotes)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axis=AXES, data=st.data(), sheet=sheets())
def test_every_sweep_point_equals_solve_of_the_same_document(axis: Any, data: Any, sheet: PriceSheet) -> None:
    field, values = axis
    value = data.draw(st.sampled_from(values))
    plan = plan_sweep(sweep_of(BASE, field, [value]))
    pricing = Pricing(sheet=sheet, site_name="hq", cloud_provider="")
    row = sweep_point(plan, 0, pricing=pricing)
    if "error" in row:  # e.g. a GPU count no layout of the space divides: solve refuses it too
        return
    assert_row_equals_solve(BASE, row, pricing)


def test_a_region_sweep_bills_the_sites_own_price_only_where_the_site_is() -> None:
    """The point at the site's own region (quebec) is the plan's own document, billed at the site's price as
    its solve is; a point that moves the site (germany) is billed at that region's price."""
    sheet = PriceSheet(quotes={("electricity", "site:hq"): quote("electricity", "site:hq", 0.5)})
    pricing = Pricing(sheet=sheet, site_name="hq")
    assert pricing.apply(BASE)[1][PATH_ELECTRICITY_PRICE]["value"] == 0.5  # where the site is
    plan = plan_sweep(sweep_of(BASE, "site.region", ["quebec", "germany"]))
    rows = [sweep_point(plan, i, pricing=pricing) for i in range(2)]
    assert [row["prices"][PATH_ELECTRICITY_PRICE]["value"] for row in rows] == [
        0.5,
        catalog.REGIONS["germany"]["electricity_usd_per_kwh"],
    ]
    assert_row_equals_solve(BASE, rows[0], pricing)


def test_a_node_price_prices_only_that_nodes_own_accelerator() -> None:
    sheet = PriceSheet(quotes={("node", "dgx-h100"): quote("node", "dgx-h100", 240_000.0)})
    pricing = Pricing(sheet=sheet)
    own = pricing.apply({"cluster": {"node": "dgx-h100", "gpus": 64}})[1][
        "cluster.accelerator.unit_price_usd"
    ]
    assert (own["value"], own["origin"]) == (30_000.0, "team_book")
    other = pricing.apply({"cluster": {"node": "dgx-h100", "accelerator": "b200", "gpus": 64}})[1]
    price = other["cluster.accelerator.unit_price_usd"]
    assert (price["value"], price["origin"]) == (catalog.ACCELERATORS["b200"]["unit_price_usd"], "catalog")


def test_a_node_price_is_divided_by_the_catalog_nodes_count_whatever_the_cluster_states() -> None:
    """The quote is for the catalog's 8-GPU DGX H100: divided by its 8, the count the book checked it with
    (8 x the accelerator's limit). A cluster naming the node with one GPU per node used to take the whole node
    price per accelerator (8e8 USD, which the solver refuses: every run of the plan failed)."""
    sheet = PriceSheet(quotes={("node", "dgx-h100"): quote("node", "dgx-h100", 8e8)})
    pricing = Pricing(sheet=sheet)
    assert catalog.NODES["dgx-h100"]["gpus_per_node"] == 8
    for stated in (8, 4, 1):
        cluster = {"node": "dgx-h100", "gpus": 64, "gpus_per_node": stated}
        document, used = pricing.apply({"model": {"preset": "llama3-8b"}, "cluster": cluster})
        assert used["cluster.accelerator.unit_price_usd"]["value"] == 1e8
        assert solve(document, ranges=False)["tco"]["total_usd"] > 0


def test_a_resolved_document_is_priced_as_its_scenario() -> None:
    """A stored plan's resolved document names its accelerator preset (``cluster.accelerator.preset``), so a price
    book's cloud quote for that accelerator prices it as it prices the scenario it came from; the accelerator's
    unit price, which the resolved document states, stays the scenario's."""
    from solvers import resolve
    from solvers.prices import PATH_CLOUD_PRICE, apply_prices

    sheet = PriceSheet(quotes={("cloud", "h100-sxm"): quote("cloud", "h100-sxm", 2.5)})
    scenario = {k: v for k, v in BASE.items() if k != "search"}
    scenario["training"] = {**scenario["training"], "layout": {"tp": 8}}
    priced, used = apply_prices(document=scenario, sheet=sheet)
    assert used[PATH_CLOUD_PRICE]["value"] == 2.5
    stored = resolve(copy.deepcopy(scenario)).document
    assert stored["cluster"]["accelerator"]["preset"] == "h100-sxm"
    again, used_again = apply_prices(document=stored, sheet=sheet)
    assert used_again[PATH_CLOUD_PRICE]["value"] == 2.5
    assert solve(again)["tco"] == solve(priced)["tco"]
