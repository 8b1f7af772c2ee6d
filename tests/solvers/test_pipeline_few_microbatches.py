"""Pipeline schedules at their edges: few microbatches per schedule call (m < p, or a flush shorter than the
schedule's own minimum). Every bound below is a critical path: whatever the schedule, one microbatch's forward
must cross every stage (every model chunk) before its backward can cross them back, so a schedule call of
``m`` microbatches takes at least that chain, and its bubble is at least the chain less the ``m`` microbatches'
own work on one stage.

With ``F = B = W`` (no recompute) and ``t_mb = F + B + W``:

* zero bubble (ZB-H1; B depends only on the next stage's B, Qi et al. 2024 §2): the last microbatch leaves the
  first stage after ``m F``, crosses ``p - 1`` more forwards, ``p`` input-gradient passes and one W on the
  first stage: makespan >= ``(m + p - 1) F + p B + W``, bubble >= ``(p-1) F + (p-m) B - (m-1) W``; at m = 1
  that is ``(p-1)(F+B)``, twice the ``(p-1)(F+B-W)`` of the table (which holds for m >= p).
* interleaved, one flush of ``f < p`` microbatches: the chain crosses all ``p v`` chunks forward and back,
  ``p t_mb`` in all, so the bubble is >= ``(p - f) t_mb``, not ``(p-1) t_mb / v`` (at f = 1 interleaving buys
  nothing at all: every schedule's bubble is the chain less one microbatch).
* DualPipe, one flush of 2 microbatches (one per direction): the chain is ``p (F + B) + W`` and each rank works
  ``2 t_mb``: bubble >= ``(2p + 1 - 6) F`` = 27 F at p = 16, against the table's ``(p - 2) F`` = 14 F.
  deepseek-ai/DualPipe's ``step`` asserts ``num_chunks >= num_ranks * 2`` for every call.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import ScenarioError, solve
from solvers.published import load_example
from tests.solvers.test_pipeline import _bubble

# Llama 3 405B on 8,192 H100: pp 16, interleaved v 8, 32 microbatches a step per replica, no recompute.
EXAMPLE = "llama3-405b-8192.yaml"
P = 16


def _solve(flush: int | None = None, training: dict[str, Any] | None = None, **layout: Any) -> Any:
    doc = copy.deepcopy(load_example(EXAMPLE))
    doc["training"]["layout"].update(layout)
    if flush is not None:
        doc["training"]["pipeline_flush_microbatches"] = flush
    if training:
        doc["training"].update(training)
    return solve(doc, ranges=False)


def _bubble_per_compute(report: Any) -> float:
    step = report["step"]
    return step["bubble_s"] / step["compute_s"]


@pytest.mark.parametrize("m", [1, 2, 4])
def test_zero_bubble_with_fewer_microbatches_than_stages_keeps_the_critical_path(m: int) -> None:
    """p = 16, F = B = W = 1: bubble >= (p-1) F + (p-m) B - (m-1) W (30, 28, 24 for m = 1, 2, 4); the
    ZB-H1 formula gives 15 whatever m is."""
    f = b = w = 1.0
    floor = (P - 1) * f + (P - m) * b - (m - 1) * w
    assert _bubble("zero_bubble", P, m, t_mb=f + b + w) >= floor - 1e-9


def test_zero_bubble_at_one_microbatch_through_solve() -> None:
    """m = 1 (64 sequences = dp): any schedule is the chain of one microbatch. 1F1B's bubble is the other
    stages' F + B + W, zero bubble's at least their F + B: two thirds of it (no recompute in this run)."""
    small = {"global_batch_tokens": 64 * 8192}
    zb = _solve(training=small, schedule="zero_bubble", virtual_stages=1)
    one = _solve(training=small, schedule="1f1b", virtual_stages=1)
    assert zb["layout"]["microbatches"] == 1
    assert zb["step"]["compute_s"] == pytest.approx(one["step"]["compute_s"])
    assert zb["step"]["bubble_s"] >= 0.6 * one["step"]["bubble_s"]


@pytest.mark.parametrize("flush", [1, 8])
def test_interleaved_flush_shorter_than_the_pipeline_is_refused_or_priced_by_its_chain(flush: int) -> None:
    """A flush of f < p microbatches under interleaving: refused (Megatron-Core and torch 2.4's interleaved
    1F1B want a multiple of p per schedule call), or a bubble >= (p - f) t_mb per flush, i.e. at least
    (p - f)/(p - 1) of 1F1B's per flush (same fill). Engine: 1/v = 1/8 of 1F1B's."""
    try:
        interleaved = _solve(flush=flush)
    except ScenarioError as error:
        assert "microbatch" in str(error) or "flush" in str(error)
        return
    plain = _solve(flush=flush, schedule="1f1b", virtual_stages=1)
    floor = (P - flush) / (P - 1)
    assert _bubble_per_compute(interleaved) >= 0.95 * floor * _bubble_per_compute(plain)


def test_dualpipe_flush_of_two_microbatches_is_refused_or_priced_by_its_chain() -> None:
    """Flushes of 2 microbatches under DualPipe at p = 16: refused (each flush is a DualPipe.step, which needs
    >= 2p chunks), or a bubble >= 27 F per flush = 0.6 of 1F1B's 45 F. Engine: 14 F (0.31)."""
    try:
        dual = _solve(flush=2, schedule="dualpipe", virtual_stages=1)
    except ScenarioError as error:
        assert "microbatch" in str(error) or "flush" in str(error)
        return
    plain = _solve(flush=2, schedule="1f1b", virtual_stages=1)
    assert _bubble_per_compute(dual) >= 0.55 * _bubble_per_compute(plain)


def test_dualpipe_rule_applies_to_each_flush() -> None:
    """m = 32 = 2p passes the step-level rule, but flushes of 16 microbatches run DualPipe.step with
    num_chunks 16 < 2 x 16 ranks, which deepseek-ai/DualPipe asserts against."""
    assert _solve(schedule="dualpipe", virtual_stages=1)["layout"]["microbatches"] == 32
    with pytest.raises(ScenarioError, match="dualpipe"):
        _solve(flush=16, schedule="dualpipe", virtual_stages=1)
