"""A report whose layout the solver chose outside the validated runs says so among its warnings, with the
search's reasons (issue: a layout outside the envelope carries a warning with the reason; the plan page and the
compare CSV read ``warnings``, not ``search.support``)."""

from __future__ import annotations

from typing import Any

import pytest

from solvers import solve
from solvers.search.document import search_document

OUTSIDE = "layout: the chosen layout lies outside the validated runs"


def _auto(node: str) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": node, "gpus": 64},
        "training": {"seq_len": 8192, "global_batch_tokens": 8192 * 256, "layout": "auto"},
    }


def test_an_auto_layout_with_nothing_validated_warns_with_the_reasons() -> None:
    """No dense run on MI300X (CDNA3) is validated: the auto solve ranks every layout and its warnings say so."""
    report = solve(_auto("mi300x-platform"), ranges=False)
    support = report["search"]["support"]
    assert support["within_validated"] is False and support["reasons"]
    [warning] = [w for w in report["warnings"] if w.startswith(OUTSIDE)]
    assert all(reason in warning for reason in support["reasons"])
    assert "search.support" in warning


def test_an_auto_layout_inside_the_validated_runs_has_no_such_warning() -> None:
    report = solve(_auto("dgx-h100"), ranges=False)
    assert report["search"]["support"]["within_validated"] is True
    assert not [w for w in report["warnings"] if w.startswith(OUTSIDE)]


def test_a_given_layout_is_not_judged() -> None:
    """A layout the scenario states is the user's, not the solver's choice: no envelope warning."""
    doc = _auto("mi300x-platform")
    doc["training"]["layout"] = {"tp": 1, "pp": 1, "zero_stage": 1}
    report = solve(doc, ranges=False)
    assert "search" not in report or report.get("search") is None
    assert not [w for w in report["warnings"] if w.startswith(OUTSIDE)]


@pytest.mark.parametrize("within_validated", [True, False])
def test_a_searchs_best_report_warns_as_its_support_says(within_validated: bool) -> None:
    doc = {
        **_auto("dgx-h100"),
        "search": {"within_validated": within_validated, "space": {"cp": [1, 2, 4, 8]}},
    }
    doc["training"] = {**doc["training"], "global_batch_tokens": 8192 * 64}
    best = search_document(doc, top=0)["best"]
    warned = [w for w in best["warnings"] if w.startswith(OUTSIDE)]
    assert bool(warned) is (best["support"]["within_validated"] is False)
