"""The entry points (solvers.entry): a held Resolved solves again alike, and a price change over many held
plans gives the very bill of a full solve of the re-priced documents."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, resolve, solve, solve_resolved, validate_scenario
from solvers.entry import pick_layout, reprice_many
from solvers.layout import Layout


def _plan(
    preset: str, node: str, accelerator: str, gpus: int, tp: int, pp: int, *, price: float, kwh: float
) -> dict[str, Any]:
    return {
        "model": {"preset": preset},
        "cluster": {
            "node": node,
            "gpus": gpus,
            "accelerator": {"preset": accelerator, "unit_price_usd": price},
        },
        "site": {"region": "poland", "electricity_usd_per_kwh": kwh},
        "training": {"global_batch_seqs": 256, "layout": {"tp": tp, "pp": pp, "zero_stage": 1}},
        "economics": {"job_days": 30, "infra_multiplier": 1.5},
    }


PLANS = [
    _plan("llama3-8b", "dgx-h100", "h100-sxm", 64, 1, 1, price=25_000.0, kwh=0.08),
    _plan("llama3-70b", "dgx-h100", "h100-sxm", 256, 8, 2, price=30_000.0, kwh=0.12),
    _plan("gpt3-175b", "dgx-a100-80gb", "a100-sxm-80gb", 512, 8, 8, price=15_000.0, kwh=0.2),
]


def _repriced(doc: dict[str, Any], price: float, kwh: float, cloud: float | None) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["cluster"]["accelerator"]["unit_price_usd"] = price
    out["site"]["electricity_usd_per_kwh"] = kwh
    if cloud is not None:
        out["economics"]["cloud_usd_per_gpu_hour"] = cloud
    return out


@pytest.mark.parametrize("cloud", [None, 2.5])
def test_reprice_many_equals_solving_the_repriced_documents_exactly(cloud: float | None) -> None:
    held = [resolve(doc) for doc in PLANS]
    reports = [solve_resolved(r) for r in held]
    steps = [(rep["step"]["step_s"], rep["step"]["gpu_busy_fraction"]) for rep in reports]
    new = [
        {"accelerator_unit_price_usd": 20_000.0 + 1_000.0 * i, "electricity_usd_per_kwh": 0.1 + 0.01 * i}
        | ({} if cloud is None else {"cloud_usd_per_gpu_hour": cloud})
        for i in range(len(PLANS))
    ]
    bills = reprice_many(held, steps, new)
    for doc, price, bill in zip(PLANS, new, bills, strict=True):
        full = solve(
            _repriced(doc, price["accelerator_unit_price_usd"], price["electricity_usd_per_kwh"], cloud),
            ranges=False,  # reprice_many gives the figures of the section, not its range
        )
        assert bill == full["tco"]  # bit for bit: the same IEEE-754 operations, elementwise
        assert all(type(v) is float for k, v in bill.items() if k != "cloud_usd")
    assert (bills[0]["cloud_usd"] is None) == (cloud is None)


def test_reprice_many_wants_one_step_and_one_price_per_plan() -> None:
    held = [resolve(PLANS[0])]
    with pytest.raises(ValueError):
        reprice_many(held, [], [{}])
    assert reprice_many([], [], []) == []


def test_a_held_resolved_solves_again_alike_and_is_never_changed() -> None:
    held = resolve(PLANS[1])
    document, assumptions = copy.deepcopy(held.document), copy.deepcopy(held.assumptions)
    first = solve_resolved(held)
    first["scenario"]["model"]["layers"] = 1
    first["assumptions"][0]["value"] = "edited"
    first["assumptions"].clear()
    first["warnings"].append("edited")
    second = solve_resolved(held)
    assert second == solve(PLANS[1])
    assert held.document == document and held.assumptions == assumptions


def test_the_layout_of_one_solve_is_a_frozen_layout_of_python_scalars() -> None:
    layout, row, search = pick_layout(resolve(PLANS[1]))
    assert isinstance(layout, Layout) and search is None and row["step_s"] > 0
    assert all(type(getattr(layout, f.name)) in (int, bool) for f in dataclasses.fields(layout))
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.tp = 2  # type: ignore[misc]
    block = layout.block(row["microbatches"])
    assert block["tp"] == 8 and block["pp"] == 2 and block["schedule"] == "1f1b"


def test_solving_writes_nothing_onto_the_held_scenario() -> None:
    held = resolve(PLANS[2])
    parts = (held.model, held.cluster, held.training, held.layouts, held.cluster.accelerator)
    before = [dict(vars(part)) for part in parts]
    solve_resolved(held)
    reprice_many([held], [(1.0, 0.5)], [{"electricity_usd_per_kwh": 0.3}])
    assert [dict(vars(part)) for part in parts] == before  # no memo kept on a frozen object


_PRICE_PATHS = {
    "accelerator_unit_price_usd": "cluster.accelerator.unit_price_usd",
    "electricity_usd_per_kwh": "site.electricity_usd_per_kwh",
    "cloud_usd_per_gpu_hour": "economics.cloud_usd_per_gpu_hour",
}


@settings(max_examples=60, deadline=None)
@given(
    plan=st.sampled_from(range(len(PLANS))),
    unit_price=st.floats(1.0, 1e6),
    kwh=st.floats(0.001, 2.0),
    cloud=st.one_of(st.none(), st.floats(0.01, 100.0)),
)
def test_the_two_ways_to_reprice_a_held_plan_agree_to_the_last_bit(
    plan: int, unit_price: float, kwh: float, cloud: float | None
) -> None:
    """``Resolved.with_prices`` then ``solve_resolved`` (one plan) and ``reprice_many`` (many plans, one
    vectorised bill) give the same ``tco`` section, bit for bit, for any prices within the table's limits."""
    held = resolve(PLANS[plan])
    report = solve_resolved(held)
    step = (report["step"]["step_s"], report["step"]["gpu_busy_fraction"])
    prices = {"accelerator_unit_price_usd": unit_price, "electricity_usd_per_kwh": kwh}
    if cloud is not None:
        prices["cloud_usd_per_gpu_hour"] = cloud
    (bill,) = reprice_many([held], [step], [prices])
    repriced = solve_resolved(held.with_prices({_PRICE_PATHS[name]: value for name, value in prices.items()}))
    assert bill == repriced["tco"]
    assert [v.hex() for v in bill.values() if isinstance(v, float)] == [
        v.hex() for v in repriced["tco"].values() if isinstance(v, float)
    ]


def test_resolve_without_the_step_leaves_it_to_solve_resolved() -> None:
    """``resolve(..., step=False)`` (a caller that only validates) runs no engine step; solving it gives the
    report ``solve`` gives, and a layout that breaks an engine rule fails there with the same error."""
    for doc in PLANS:
        light = resolve(doc, step=False)
        assert light.layout is not None and light.step is None and light.layout_rule is None
        assert light.document == resolve(doc).document and light.input_hash == resolve(doc).input_hash
        assert solve_resolved(light) == solve(doc)
    broken = copy.deepcopy(PLANS[0])
    broken["training"]["global_batch_seqs"] = 100  # not a multiple of dp (64) x microbatch (1)
    light = resolve(broken, step=False)
    assert light.step is None and light.layout_rule is None
    with pytest.raises(ScenarioError) as held:
        solve_resolved(light)
    with pytest.raises(ScenarioError) as fresh:
        solve(broken)
    assert held.value.as_dict() == fresh.value.as_dict()


def test_validate_scenario_refuses_what_a_solve_refuses_and_holds_the_step_otherwise() -> None:
    """``validate_scenario`` (what a caller that stores a plan runs) raises the very error ``solve`` raises for
    a layout that breaks an engine rule, which ``resolve`` only records; a valid document's ``Resolved``
    holds its step and solves to the report ``solve`` gives."""
    for doc in PLANS:
        held = validate_scenario(doc)
        assert held.step is not None and held.layout_rule is None
        assert solve_resolved(held) == solve(doc)
    broken = copy.deepcopy(PLANS[1])
    broken["training"]["layout"]["tp"] = 3  # llama3-70b has 64 heads, which 3 does not divide
    broken["cluster"]["gpus"] = 192  # tp x pp = 6 divides 192 GPUs: the heads rule is the one broken
    recorded = resolve(broken)
    assert recorded.step is None and recorded.layout_rule is not None
    with pytest.raises(ScenarioError) as checked:
        validate_scenario(broken)
    with pytest.raises(ScenarioError) as solved:
        solve(broken)
    assert checked.value.as_dict() == solved.value.as_dict()
    assert checked.value.first.path == "training.layout.tp"
    too_small = {"model": {"preset": "llama3-405b"}, "cluster": {"node": "dgx-h100", "gpus": 8}}
    too_small["training"] = {"layout": "auto"}  # no layout of 405B parameters fits on one node
    resolve(too_small)  # the document itself is fine
    with pytest.raises(ScenarioError) as checked:
        validate_scenario(too_small)
    with pytest.raises(ScenarioError) as solved:
        solve(too_small)
    assert checked.value.as_dict() == solved.value.as_dict()
    assert "fits in memory" in checked.value.first.message
