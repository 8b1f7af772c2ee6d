"""What the solver keeps between calls never changes an answer.

A scenario document is resolved once (``schema._RESOLVED_CACHE``). Each test compares a warm answer with a
cold one, or a hit with input that only looks alike.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import schema, solve
from solvers.errors import ScenarioError
from solvers.ledger import compute_ledger
from solvers.plain import plain_key
from tests.solvers.test_ledger import make_inputs

DOC: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "gpus": 512},
    "site": {"region": "quebec"},
    "training": {"global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
    "economics": {"job_days": 30},
}


def _cold_solve(doc: dict[str, Any]) -> Any:
    schema._RESOLVED_CACHE.clear()
    schema._PART_CACHE.clear()
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
    for entry in first["assumptions"]:  # plain dicts: the report's own
        if isinstance(entry["value"], list):
            entry["value"].append(5.0)
        entry["value"] = "edited"
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


def test_only_plain_json_documents_are_cached() -> None:
    from collections import OrderedDict

    assert plain_key(DOC) is not None
    assert plain_key({**DOC, "site": OrderedDict(region="quebec")}) is None

    class Region(str):
        pass

    assert plain_key({**DOC, "site": {"region": Region("quebec")}}) is None


def test_a_document_that_cannot_be_a_key_solves_alike_and_is_not_kept() -> None:
    from collections import OrderedDict

    cold = _cold_solve(DOC)
    kept = len(schema._RESOLVED_CACHE)
    ordered = {**copy.deepcopy(DOC), "site": OrderedDict(region="quebec")}
    for _ in range(2):
        assert solve(ordered) == cold
    assert len(schema._RESOLVED_CACHE) == kept
    assert type(solve(ordered)["assumptions"][0]) is type(cold["assumptions"][0])


def test_shared_resolution_hands_out_copies_and_keeps_its_own() -> None:
    shared = schema.resolve_shared(copy.deepcopy(DOC))
    assert shared is not None and schema.resolve_shared(copy.deepcopy(DOC)) is shared
    document, assumptions = shared.document(), shared.assumptions()
    assert document == shared.resolved.document and document is not shared.resolved.document
    document["model"]["layers"] = 1
    listed = next(a for a in assumptions if isinstance(a["value"], list))
    listed["value"].append(7.0)
    assert shared.document()["model"]["layers"] != 1
    assert 7.0 not in next(a for a in shared.assumptions() if a["key"] == listed["key"])["value"]
