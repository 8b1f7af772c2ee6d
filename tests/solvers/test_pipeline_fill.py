"""The pipeline's fill and drain cross the other stages at their own time (``effects.pipeline_stages``' ``fill``)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.effects import pipeline_stages
from solvers.entry import solve
from solvers.report_types import StepBlock
from tests.solvers.test_pipeline_split import DOC


def _flow_line_makespan(stage_s: list[float], microbatches: int) -> float:
    """Finish time of the last microbatch through stages that each take ``stage_s[i]`` per microbatch and
    start a microbatch once it has left the stage before and the stage has finished the one before."""
    done = [0.0] * len(stage_s)
    for _ in range(microbatches):
        ready = 0.0
        for i, t in enumerate(stage_s):
            ready = max(ready, done[i]) + t
            done[i] = ready
    return done[-1]


@settings(max_examples=200, deadline=None)
@given(
    stage_s=st.lists(st.floats(0.1, 10.0), min_size=2, max_size=12),
    microbatches=st.integers(1, 40),
)
def test_a_flow_line_takes_the_sum_of_its_stages_plus_the_busiest_for_every_further_microbatch(
    stage_s: list[float], microbatches: int
) -> None:
    """The identity the ratio rests on: ``sum_i t_i + (m - 1) max_i t_i``, not ``(m + p - 1) max_i t_i``."""
    expected = sum(stage_s) + (microbatches - 1) * max(stage_s)
    assert _flow_line_makespan(stage_s, microbatches) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    layers=st.integers(1, 200),
    pp=st.integers(2, 64),
    share=st.floats(0.0, 0.5),
    ratio=st.floats(1.0, 2.0),
    even=st.booleans(),
)
def test_the_fill_ratio_prices_the_other_stages_and_never_exceeds_one(
    layers: int, pp: int, share: float, ratio: float, even: bool
) -> None:
    """``(p - 1) x busiest x r`` is the other stages' work (``W - B``), so ``0 <= r <= 1``; and the busiest
    stage's factor is the one a single-layout call gives."""
    stages = pipeline_stages(
        layers=layers, pp=np.array([pp]), output_layer_share=share, output_rate_ratio=ratio, even_split=even
    )
    fill = float(np.asarray(stages.fill)[0])
    assert 0.0 <= fill <= 1.0
    one = pipeline_stages(
        layers=layers, pp=pp, output_layer_share=share, output_rate_ratio=ratio, even_split=even
    )
    assert float(one.fill) == fill
    assert float(one.ends) == float(np.asarray(stages.ends)[0])


def test_equal_stages_keep_the_classic_bubble() -> None:
    """No output layer and p dividing L: every stage is equal and r = 1 exactly."""
    assert pipeline_stages(layers=96, pp=4, output_layer_share=0.0).fill == 1.0
    assert pipeline_stages(layers=32, pp=1, output_layer_share=0.07).fill == 1.0


def test_korthikanti_1t_worked_example() -> None:
    """L = 128, p = 64, even split, e = 0.164 (share 0.00128): r = 126 / (63 x 2.164) = 0.924."""
    share = 0.164 / (128 + 0.164)
    assert pipeline_stages(
        layers=128, pp=64, output_layer_share=share, even_split=True
    ).fill == pytest.approx(126.0 / (63 * 2.164), rel=1e-9)


def test_an_even_split_prices_the_fill_at_the_lighter_stages() -> None:
    """Nemotron-4 340B on 128 GB200, p = 4 interleaved (v = 12), 8 microbatches, even split: the last stage
    holds 24 + 1.29 layer equivalents and the others 24, so the bubble is ``(p - 1) / v`` microbatch times of
    the busiest stage times 24 / 25.29; balanced (every stage 24.32) it is the classic one."""
    doc = copy.deepcopy(DOC)
    doc["training"]["pipeline_split"] = "even"
    even = solve(doc, ranges=False)["step"]
    balanced = solve(DOC, ranges=False)["step"]

    def bubble_in_microbatches(step: StepBlock) -> float:
        return float(step["bubble_s"]) / (float(step["compute_s"]) / 8) * 12 / 3

    assert bubble_in_microbatches(balanced) == pytest.approx(1.0, rel=1e-12)
    assert bubble_in_microbatches(even) == pytest.approx(24.0 / 25.29, rel=2e-3)
