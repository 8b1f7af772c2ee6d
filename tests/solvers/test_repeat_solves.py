"""Solving twice gives the same answer: nothing of one call reaches the next.

The solver keeps nothing between calls (reuse is the caller's: hold a ``Resolved``). These tests solve one
document, then change the report, or solve a document that only looks alike, and check the next answer.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import solve
from solvers.errors import ScenarioError
from solvers.ledger import compute_ledger
from tests.solvers.test_ledger import make_inputs

DOC: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "gpus": 512},
    "site": {"region": "quebec"},
    "training": {"global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
    "economics": {"job_days": 30},
}


def _cold_solve(doc: dict[str, Any]) -> Any:
    return solve(copy.deepcopy(doc))


def test_a_second_report_equals_the_first() -> None:
    cold = _cold_solve(DOC)
    warm = solve(copy.deepcopy(DOC))
    again = solve(copy.deepcopy(DOC))
    assert warm == cold == again


def test_editing_a_report_leaves_the_next_one_alone() -> None:
    cold = _cold_solve(DOC)
    first = solve(DOC)
    first["scenario"]["training"]["layout"]["tp"] = 1
    first["scenario"]["cluster"]["reliability"]["other_mttf_h"].append(5.0)
    first["scenario"]["model"]["layers"] = 3
    for entry in first["assumptions"]:  # plain dicts: the report's own
        if isinstance(entry["value"], list):
            entry["value"].append(5.0)
        entry["value"] = "edited"
    first["assumptions"].pop()
    first["reliability"]["lost_h"]["rework"] = -1.0
    first["warnings"].append("edited")
    second = solve(DOC)
    assert second == cold


def test_a_document_differing_only_in_types_is_read_for_its_types() -> None:
    solve(DOC)
    as_true = copy.deepcopy(DOC)
    as_true["training"]["layout"]["pp"] = True  # equal to 1 in python, not a layout value
    with pytest.raises(ScenarioError) as info:
        solve(as_true)
    assert [e.path for e in info.value.errors] == ["training.layout.pp"]


def test_numpy_and_subclassed_values_give_plain_assumptions() -> None:
    import enum

    import numpy as np

    result = compute_ledger(make_inputs(idle_fraction=np.float64(0.3), checkpoint_writers=np.int64(4)))
    values = {a["key"]: a["value"] for a in result.assumptions}
    assert type(values["energy.power_model"]) is float and type(values["checkpoint.writers"]) is int

    class Region(enum.StrEnum):
        QUEBEC = "quebec"

    doc = copy.deepcopy(DOC)
    doc["site"]["region"] = Region.QUEBEC
    report = solve(doc)
    plain = solve(copy.deepcopy(DOC))
    assert report["step"] == plain["step"] and report["tco"] == plain["tco"]
    assert report["scenario"]["site"] == plain["scenario"]["site"]
    assert all(
        type(a["value"]) in (str, int, float, bool, type(None), list, dict) for a in report["assumptions"]
    )


def test_negative_zero_is_kept_apart_from_zero() -> None:
    zero = copy.deepcopy(DOC)
    zero["cluster"]["reliability"] = {"restart_s": 0.0}
    negative = copy.deepcopy(DOC)
    negative["cluster"]["reliability"] = {"restart_s": -0.0}
    cold = _cold_solve(negative)
    solve(zero)
    warm = solve(copy.deepcopy(negative))
    assert str(warm) == str(cold)  # str() tells -0.0 from 0.0, == does not
