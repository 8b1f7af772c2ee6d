"""A sweep range gives the values its start and step (or factor) name: never a value past ``stop``, and the
same doubles a client writes for them, so that a point's figures are those of a solve of that value."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import solve
from solvers.sweep import plan_sweep, range_values, sweep_point

BASE: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 64},
    "site": {"region": "quebec"},
    "training": {"seq_len": 8192, "global_batch_tokens": 4194304, "total_tokens": 1.0e12},
}
SPACE = {"tp": [1, 2], "pp": [1], "cp": [1], "microbatch_seqs": [1]}


@pytest.mark.parametrize(("start", "stop", "step"), [(0.09, 1.0, 0.07), (0.1, 0.3, 0.1)])
def test_an_arithmetic_range_never_goes_past_its_stop(start: float, stop: float, step: float) -> None:
    """0.09 to 1.0 by 0.07 ends at 1.0000000000000002: a sweep of a fraction (an overlap, at most 1) over
    it is refused with 'must be <= 1, got 1 (value 14 of the range)'."""
    values = range_values({"start": start, "stop": stop, "step": step}, path="sweep.axes[0].range")
    assert max(values) <= stop, values


def test_a_geometric_range_never_goes_past_its_stop() -> None:
    values = range_values({"start": 1.0, "stop": 1.21, "factor": 1.1}, path="sweep.axes[0].range")
    assert max(values) <= 1.21, values


def test_a_decimal_step_gives_the_decimal_values() -> None:
    assert range_values({"start": 0.7, "stop": 1.0, "step": 0.1}, path="r") == (0.7, 0.8, 0.9, 1.0)
    assert range_values({"start": 1.1, "stop": 1.5, "step": 0.1}, path="r") == (1.1, 1.2, 1.3, 1.4, 1.5)


def test_a_range_point_equals_a_solve_of_the_value_it_names() -> None:
    """A PUE swept from 1.1 to 1.5 by 0.1: the second point is PUE 1.2, and its figures are those of a
    solve of the plan at PUE 1.2, to the last bit (not of PUE 1.2000000000000002)."""
    document = {
        **copy.deepcopy(BASE),
        "search": {"space": SPACE},
        "sweep": {"axes": [{"field": "site.pue", "range": {"start": 1.1, "stop": 1.5, "step": 0.1}}]},
    }
    plan = plan_sweep(document)
    row = sweep_point(plan, 1)
    assert "best" in row, row
    scenario = copy.deepcopy(BASE)
    scenario["site"]["pue"] = 1.2
    scenario["training"]["layout"] = row["best"]["layout"]
    report = solve(scenario)
    assert row["best"]["metrics"]["facility_kwh"] == report["energy"]["facility_kwh"], row["point"]


@pytest.mark.parametrize(
    "raw",
    [
        {"start": 200000000000, "stop": 999999999999, "step": 200000000000},
        {"start": 1, "stop": 1023.9999999, "factor": 2},
    ],
    ids=["integer-step", "integer-factor"],
)
def test_an_integer_range_never_goes_past_its_stop(raw: dict[str, Any]) -> None:
    """Total tokens from 0.2T by 0.2T up to 999,999,999,999 are 0.2T to 0.8T: the stop tolerance makes the
    range end at 1,000,000,000,000, past the stop written, as it does for 1 to 1023.9999999 by a factor 2
    (1024). A range of doubles is held to its stop; one of integers must be too."""
    values = range_values(raw, path="sweep.axes[0].range")
    assert max(values) <= raw["stop"], values
