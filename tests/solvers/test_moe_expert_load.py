"""The busiest expert rank's load at ep = 1.

With ``ep = 1`` every GPU holds all the experts, so the "busiest expert rank" is the only rank and it computes
exactly ``tokens x top_k`` routed copies per step whatever the router's skew (docs/CONVENTIONS.md "Expert
load": "the busiest expert rank takes 1 + skew times the mean tokens"). Imbalance between experts moves tokens
between GEMMs on the same GPU; it cannot add expert FLOPs. So at ep = 1 a learned (skewed) router and the
forced-balance benchmark router must price the same step, and a capacity factor above 1 cannot make a GPU compute
more than the mean.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import solve
from solvers.published import load_example


def _mixtral(**training: Any) -> dict[str, Any]:
    doc = copy.deepcopy(load_example("mixtral-8x7b-256xh200.yaml"))
    doc["training"]["layout"]["ep"] = 1
    doc["training"].update(training)
    return doc


def test_ep1_learned_router_costs_no_more_expert_compute_than_a_balanced_one() -> None:
    learned = solve(_mixtral())["step"]
    balanced = solve(_mixtral(moe_force_balance=True))["step"]
    # not 4.215 s against 3.264 s (expert FLOPs x 1.5, the fitted skew, on a GPU holding every expert)
    assert learned["compute_s"] == pytest.approx(balanced["compute_s"], rel=1e-6)
    assert learned["step_s"] == pytest.approx(balanced["step_s"], rel=1e-6)


def test_ep1_capacity_above_one_does_not_add_expert_compute() -> None:
    dropped = solve(_mixtral(moe_capacity_factor=1.25))["step"]
    balanced = solve(_mixtral(moe_force_balance=True))["step"]
    # dropping tokens can only remove work from the one rank that holds all the experts
    assert dropped["compute_s"] <= balanced["compute_s"] * (1 + 1e-9)
