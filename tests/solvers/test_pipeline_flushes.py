"""The scenario field ``training.pipeline_flush_microbatches``: a framework that runs each gradient-accumulation
step as its own pipeline schedule (torch.distributed.pipelining's ``schedule.step`` in a loop) fills and drains
the pipeline once per flush, so the step pays the bubble once per flush of that many microbatches."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, resolve, solve
from solvers.published import load_example

# Llama 3 405B on 16,384 H100 (Llama 3 §3.3.2): pp 16, interleaved, 16 microbatches a step per replica.
EXAMPLE = "llama3-405b-8192.yaml"


def _report(flush: int | None, **layout: Any) -> Any:
    doc = copy.deepcopy(load_example(EXAMPLE))
    doc["training"]["layout"].update(layout)
    if flush is not None:
        doc["training"]["pipeline_flush_microbatches"] = flush
    return solve(doc, ranges=False)


def _step(flush: int | None, **layout: Any) -> dict[str, Any]:
    return _report(flush, **layout)["step"]


M = int(_report(None)["layout"]["microbatches"])


def test_the_default_is_one_flush_and_a_flush_of_every_microbatch_changes_nothing() -> None:
    one = _step(None)
    assert M > 1
    assert _step(M) == one
    assert _step(10 * M) == one


@settings(max_examples=15, deadline=None)
@given(flush=st.integers(1, 64))
def test_the_bubble_is_paid_once_per_flush(flush: int) -> None:
    """``bubble = ceil(m / f) x`` one flush's bubble, which depends on f only through it being a flush: the
    compute and every exchange stay as they are (1F1B, whose rules hold for a flush of any size; an interleaved
    flush must hold a multiple of pp, below)."""
    plain = {"schedule": "1f1b", "virtual_stages": 1}
    one = _step(None, **plain)
    many = _step(flush, **plain)
    flushes = math.ceil(M / flush)
    assert many["bubble_s"] == pytest.approx(flushes * one["bubble_s"], rel=1e-12)
    assert many["compute_s"] == one["compute_s"]
    assert many["exposed_comm_s"] == one["exposed_comm_s"]
    assert many["step_s"] >= one["step_s"]


@pytest.mark.parametrize("flush", [16, 32])
def test_an_interleaved_flush_of_a_multiple_of_pp_pays_its_bubble_once_per_flush(flush: int) -> None:
    one = _step(None)
    many = _step(flush)
    assert many["bubble_s"] == pytest.approx(math.ceil(M / flush) * one["bubble_s"], rel=1e-12)


def test_without_a_pipeline_the_flushes_change_nothing() -> None:
    flat = {"pp": 1, "virtual_stages": 1, "schedule": "1f1b", "zero_stage": 3}
    assert _step(1, **flat) == _step(None, **flat)


def test_a_flush_bounds_the_microbatches_in_flight() -> None:
    """GPipe holds every microbatch of a flush before its first backward: a flush of 2 holds 2."""
    gpipe = _report(None, schedule="gpipe", virtual_stages=1)["memory"]
    flushed = _report(2, schedule="gpipe", virtual_stages=1)["memory"]
    assert flushed["activations_bytes"] == pytest.approx(gpipe["activations_bytes"] * 2 / M, rel=1e-12)


def test_the_field_is_checked_and_only_a_flushed_run_carries_it() -> None:
    doc = load_example(EXAMPLE)
    assert "pipeline_flush_microbatches" not in resolve(doc).document["training"]
    doc["training"]["pipeline_flush_microbatches"] = 0
    with pytest.raises(ScenarioError) as err:
        resolve(doc)
    assert "training.pipeline_flush_microbatches" in str(err.value)
    doc["training"]["pipeline_flush_microbatches"] = 4
    assert resolve(doc).document["training"]["pipeline_flush_microbatches"] == 4
