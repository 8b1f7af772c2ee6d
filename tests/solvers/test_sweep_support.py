"""Each sweep point's best layout carries how close it lies to validated runs, as a search's layouts do
(CONTRACT.md "Support"): the same block a search of that point's document gives its best layout."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers.search.document import search_document
from solvers.search.envelope import Envelope, load_envelope
from solvers.sweep import plan_sweep, point_document, sweep_document, sweep_point

BASE: dict[str, Any] = {
    "model": {"preset": "llama3-405b"},
    "cluster": {"node": "dgx-h100", "gpus": 16384, "scale_out": "roce-400g"},
    "training": {"seq_len": 8192, "global_batch_tokens": 16777216, "precision": "bf16"},
    "search": {"space": {"tp": [4, 8], "pp": [16], "cp": [1, 2, 4]}},
    "sweep": {"axes": [{"field": "cluster.gpus", "values": [8192, 16384]}]},
}


def _sweep(within_validated: bool) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    doc["search"]["within_validated"] = within_validated
    return sweep_document(doc)


@pytest.mark.parametrize("within_validated", [True, False])
def test_a_points_best_carries_the_support_a_search_of_that_point_gives(within_validated: bool) -> None:
    out = _sweep(within_validated)
    assert len(out["rows"]) == 2
    for row in out["rows"]:
        assert "error" not in row, row.get("error")
        point = point_document({k: v for k, v in BASE.items() if k != "sweep"}, row["point"])
        point["search"]["within_validated"] = within_validated
        searched = search_document(point, top=0)
        # the report's layout also names the step's microbatch count, which a sweep row gives in its metrics
        assert row["best"]["layout"] == {
            k: v for k, v in searched["best"]["layout"].items() if k != "microbatches"
        }
        assert row["best"]["support"] == searched["best"]["support"]
        assert row["within_validated"] is searched["within_validated"] is within_validated


def test_a_best_outside_the_envelope_says_why() -> None:
    """Ranked over every layout, Llama 3 405B's best at 16,384 H100 takes cp 4, 2,048 tokens a CP rank, below
    the validated dense runs (docs/CONVENTIONS.md, "What it does not say"); inside, the best is within."""
    outside = _sweep(False)["rows"][1]
    assert outside["point"] == {"cluster.gpus": 16384}
    assert outside["best"]["layout"]["cp"] == 4
    assert outside["best"]["support"]["within_validated"] is False
    assert any("context-parallel rank" in reason for reason in outside["best"]["support"]["reasons"])
    inside = _sweep(True)["rows"][1]
    assert inside["best"]["support"]["within_validated"] is True
    assert inside["best"]["support"]["reasons"] == []


def test_a_point_is_judged_against_the_envelope_it_is_given() -> None:
    """A caller that solves many points loads the validated runs once and passes them: the point's search
    and its best layout's support read that envelope, not the catalog's file."""
    full = load_envelope()
    published = next(run for run in full.runs if run.id == "llama3-2024-405b-16384gpu-8k")
    only = Envelope(runs=(published,), digest="one run")
    doc = copy.deepcopy(BASE)
    plan = plan_sweep(doc)
    row = sweep_point(plan, 1, envelope=only)
    assert row["within_validated"] is True
    assert row["best"]["support"]["nearest_validated"] == published.id
    # inside an envelope of Meta's run alone, the best keeps its parallelism: tp 8, cp 1, pp 16
    assert (row["best"]["layout"]["tp"], row["best"]["layout"]["cp"]) == (8, 1)
    assert sweep_point(plan, 1)["best"]["layout"] != row["best"]["layout"]
