"""What the solver keeps between calls never changes an answer.

A scenario document is resolved on every call (nothing of it is kept: ``solvers.inputs``), a ledger's
assumptions are formatted once per input set
(``ledger._NOTES_CACHE``) as read-only entries, and a layout that passed the engine's rules with the same
specs is not checked again. Each test compares a warm answer with a cold one, or a hit with input that only
looks alike.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from solvers import engine, ledger, solve
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.ledger import compute_ledger
from tests.solvers.test_ledger import make_inputs

DOC: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "gpus": 512},
    "site": {"region": "quebec"},
    "training": {"global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
    "economics": {"job_days": 30},
}


def _cold_solve(doc: dict[str, Any]) -> dict[str, Any]:
    ledger._NOTES_CACHE.clear()
    return solve(copy.deepcopy(doc))


def test_a_warm_report_equals_a_cold_one() -> None:
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
    for entry in first["assumptions"]:
        if type(entry) is dict:  # the scenario's entries are the report's own; the ledger's are read-only
            entry["value"] = "edited"
        else:
            with pytest.raises(TypeError, match="read-only"):
                entry["value"] = "edited"
        if isinstance(entry["value"], list):  # a list value is the report's own
            entry["value"].append(5.0)
    first["assumptions"].pop()
    first["reliability"]["lost_h"]["rework"] = -1.0
    first["warnings"].append("edited")
    second = solve(DOC)
    assert second == cold


def test_a_document_differing_only_in_types_is_not_a_hit() -> None:
    solve(DOC)
    as_true = copy.deepcopy(DOC)
    as_true["training"]["layout"]["pp"] = True  # equal to 1 in python, not a layout value
    with pytest.raises(ScenarioError) as info:
        solve(as_true)
    assert [e.path for e in info.value.errors] == ["training.layout.pp"]


def test_a_rule_passed_for_one_cluster_is_checked_again_for_another() -> None:
    resolved = resolve(copy.deepcopy(DOC))
    row, reason = engine.evaluate_one(
        model=resolved.model, cluster=resolved.cluster, training=resolved.training, layouts=resolved.layouts
    )
    assert row is not None and reason is None
    smaller = dataclasses.replace(resolved.cluster, gpus=256)  # tp*pp*dp no longer equals gpus
    row, reason = engine.evaluate_one(
        model=resolved.model, cluster=smaller, training=resolved.training, layouts=resolved.layouts
    )
    assert row is None and reason is not None and "must equal gpus" in reason


def test_ledger_notes_hit_still_checks_the_step_values() -> None:
    compute_ledger(make_inputs())
    with pytest.raises(ScenarioError) as info:
        compute_ledger(make_inputs(step_s=-1.0))
    assert [e.path for e in info.value.errors] == ["step.step_s"]
    with pytest.raises(ScenarioError) as info:
        compute_ledger(make_inputs(gpu_busy_fraction=float("nan")))
    assert [e.path for e in info.value.errors] == ["step.gpu_busy_fraction"]


def test_ledger_inputs_equal_in_value_but_not_in_type_are_validated_again() -> None:
    compute_ledger(make_inputs(gpus_per_node=1, gpus=1))
    with pytest.raises(ScenarioError) as info:
        compute_ledger(make_inputs(gpus_per_node=True, gpus=1))
    assert "cluster.gpus_per_node" in [e.path for e in info.value.errors]


def test_ledger_assumptions_are_fresh_for_every_result() -> None:
    first = compute_ledger(make_inputs())
    with pytest.raises(TypeError):
        first.assumptions[0]["value"] = "edited"
    with pytest.raises(TypeError):
        first.assumptions[0].update(value="edited")
    editable = first.assumptions[0].copy()
    editable["value"] = "edited"  # a copy is an ordinary dict
    first.assumptions.clear()
    second = compute_ledger(make_inputs())
    ledger._NOTES_CACHE.clear()
    cold = compute_ledger(make_inputs())
    assert second.assumptions == cold.assumptions and second.assumptions[0]["value"] != "edited"


def test_a_writable_batch_changed_in_place_is_checked_again() -> None:
    resolved = resolve(copy.deepcopy(DOC))
    writable = dataclasses.replace(
        resolved.layouts,
        **{f.name: getattr(resolved.layouts, f.name).copy() for f in dataclasses.fields(resolved.layouts)},
    )
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    row, _ = engine.evaluate_one(layouts=writable, **specs)
    assert row is not None
    writable.tp[0] = 3  # 3 x 1 x 1 does not divide 512 GPUs
    row, reason = engine.evaluate_one(layouts=writable, **specs)
    assert row is None and reason is not None and "must divide gpus" in reason


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


def test_negative_zero_is_not_a_hit_for_zero() -> None:
    zero = copy.deepcopy(DOC)
    zero["cluster"]["reliability"] = {"restart_s": 0.0}
    negative = copy.deepcopy(DOC)
    negative["cluster"]["reliability"] = {"restart_s": -0.0}
    cold = _cold_solve(negative)
    solve(zero)
    warm = solve(copy.deepcopy(negative))
    assert str(warm) == str(cold)  # str() tells -0.0 from 0.0, == does not


def test_ledger_with_kept_notes_equals_the_ledger_without() -> None:
    inputs = make_inputs()
    notes = ledger.ledger_notes(inputs)
    with_notes = compute_ledger(inputs, notes=notes)
    without = compute_ledger(make_inputs())
    assert with_notes == without
    with pytest.raises(ScenarioError) as info:
        compute_ledger(make_inputs(step_s=float("inf")), notes=notes)
    assert [e.path for e in info.value.errors] == ["step.step_s"]
    with pytest.raises(ScenarioError):
        ledger.ledger_notes(make_inputs(gpus=0))


def test_one_ledger_input_serves_every_step_of_its_scenario() -> None:
    inputs = make_inputs()
    notes = ledger.ledger_notes(inputs)
    for step_s, busy in ((5.0, 0.5), (12.0, 0.9)):
        direct = compute_ledger(make_inputs(step_s=step_s, gpu_busy_fraction=busy))
        kept = compute_ledger(inputs, notes=notes, step=(step_s, busy, inputs.tokens_per_step))
        assert kept == direct
    with pytest.raises(ScenarioError) as info:
        compute_ledger(inputs, notes=notes, step=(5.0, 1.5, inputs.tokens_per_step))
    assert [e.path for e in info.value.errors] == ["step.gpu_busy_fraction"]
    with pytest.raises(ValueError):
        compute_ledger(inputs, step=(5.0, 0.5, inputs.tokens_per_step))
