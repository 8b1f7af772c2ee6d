"""``training.zero3_exchange``: ZeRO-3's data-parallel exchange once per step (v1) or in every microbatch."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, resolve, solve
from solvers.exchanges import Exchange, every_microbatch

FSDP: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "gpus": 32},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 1024,
        "layout": {"tp": 1, "pp": 1, "cp": 1, "microbatch_seqs": 2, "zero_stage": 3, "recompute": "full"},
    },
}


def _step(doc: dict[str, Any], **training: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["training"].update(training)
    step: dict[str, Any] = dict(solve(doc, ranges=False)["step"])
    return step


def test_the_default_is_once_per_step_and_is_noted() -> None:
    r = resolve(FSDP)
    assert r.training.zero3_exchange == "once_per_step"
    notes = {a["key"]: a for a in r.assumptions}
    assert notes["training.zero3_exchange"]["value"] == "once_per_step"
    assert notes["training.zero3_exchange"]["source"].startswith("convention (CONTRACT.md v1)")
    assert _step(FSDP) == _step(FSDP, zero3_exchange="once_per_step")


def test_an_unknown_value_is_refused_with_its_path() -> None:
    with pytest.raises(ScenarioError) as err:
        resolve({**FSDP, "training": {**FSDP["training"], "zero3_exchange": "sometimes"}})
    assert [e.path for e in err.value.errors] == ["training.zero3_exchange"]
    assert "once_per_step" in err.value.errors[0].message


def test_every_microbatch_multiplies_the_exchange_by_the_microbatches() -> None:
    once = _step(FSDP)
    every = _step(FSDP, zero3_exchange="every_microbatch")
    m = 1024 // (32 * 2)  # 16 microbatches per data-parallel rank
    assert every["comm_s"]["dp"] == pytest.approx(m * once["comm_s"]["dp"])
    # no overlap stated: all of it exposed, the step longer by the difference
    assert every["step_s"] - once["step_s"] == pytest.approx(every["comm_s"]["dp"] - once["comm_s"]["dp"])


def test_each_microbatch_hides_its_exchange_behind_its_own_compute() -> None:
    doc = copy.deepcopy(FSDP)
    doc["training"]["efficiency"] = {"overlap": {"dp": 0.9}}
    once, every = _step(doc), _step(doc, zero3_exchange="every_microbatch")
    # 16 x 1.97 s against 16 microbatches of 8.6 s: 90% hidden in both, 16 times over
    assert once["exposed_comm_s"]["dp"] == pytest.approx(0.1 * once["comm_s"]["dp"])
    assert every["exposed_comm_s"]["dp"] == pytest.approx(0.1 * every["comm_s"]["dp"])
    # the hidden exchange still takes SMs: compute grows by about 0.15 of the extra hidden time (times the
    # straggler factor)
    hidden = every["comm_s"]["dp"] - every["exposed_comm_s"]["dp"]
    hidden_once = once["comm_s"]["dp"] - once["exposed_comm_s"]["dp"]
    assert every["compute_s"] - once["compute_s"] == pytest.approx(0.15 * (hidden - hidden_once), rel=0.05)


def test_it_changes_nothing_without_zero3_or_with_one_microbatch() -> None:
    zero1 = copy.deepcopy(FSDP)
    zero1["training"]["layout"] = {**zero1["training"]["layout"], "zero_stage": 1}
    assert _step(zero1, zero3_exchange="every_microbatch") == _step(zero1)
    one = copy.deepcopy(FSDP)
    one["training"]["global_batch_seqs"] = 64  # 32 ranks x 2 sequences: one microbatch
    assert _step(one, zero3_exchange="every_microbatch") == _step(one)


def test_the_exchange_multiplied_keeps_its_burst() -> None:
    dp = Exchange(bytes_per_gpu=10.0, time_s=2.0, nic_bytes=4.0, burst_bytes=1.0)
    assert every_microbatch(dp, 3.0) == Exchange(
        bytes_per_gpu=30.0, time_s=6.0, nic_bytes=12.0, burst_bytes=1.0
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 32), st.sampled_from([1, 2, 4]), st.sampled_from([0.0, 0.5, 0.9, 1.0]), st.booleans())
def test_every_microbatch_is_never_faster_and_moves_only_the_exchange(
    microbatches: int, microbatch: int, overlap: float, reshard: bool
) -> None:
    doc = copy.deepcopy(FSDP)
    doc["training"]["global_batch_seqs"] = 32 * microbatch * microbatches
    doc["training"]["layout"] = {
        **doc["training"]["layout"],
        "microbatch_seqs": microbatch,
        "fsdp_reshard_after_forward": reshard,
    }
    doc["training"]["efficiency"] = {"overlap": {"dp": overlap}}
    once, every = _step(doc), _step(doc, zero3_exchange="every_microbatch")
    assert every["step_s"] >= once["step_s"]
    assert every["comm_s"]["dp"] == pytest.approx(microbatches * once["comm_s"]["dp"], rel=1e-12)
    assert every["comm_s"]["tp"] == once["comm_s"]["tp"] and every["bubble_s"] == once["bubble_s"]


def test_memory_is_the_same_under_both_values() -> None:
    once = solve(FSDP, ranges=False)
    doc = copy.deepcopy(FSDP)
    doc["training"]["zero3_exchange"] = "every_microbatch"
    every = solve(doc, ranges=False)
    assert every["memory"] == once["memory"]


def test_a_mixture_of_experts_exchange_moves_too() -> None:
    moe = {
        "model": {"preset": "mixtral-8x7b"},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "training": {
            "seq_len": 4096,
            "global_batch_seqs": 512,
            "layout": {"tp": 1, "pp": 1, "ep": 8, "microbatch_seqs": 1, "zero_stage": 3, "recompute": "full"},
        },
    }
    once, every = _step(moe), _step(moe, zero3_exchange="every_microbatch")
    assert every["comm_s"]["dp"] == pytest.approx(8 * once["comm_s"]["dp"], rel=1e-12)  # 512 / (64 x 1)
    assert every["comm_s"]["ep"] == once["comm_s"]["ep"]


def test_the_default_under_zero3_with_several_microbatches_is_a_warning() -> None:
    """Left to its default, the convention that favours the plan is said out loud; stated, or moot, it is not."""
    report = solve(FSDP, ranges=False)
    [warning] = [w for w in report["warnings"] if w.startswith("training.zero3_exchange:")]
    assert "ZeRO-3 over 16 microbatches" in warning and "every_microbatch" in warning
    for stated in ("once_per_step", "every_microbatch"):
        doc = copy.deepcopy(FSDP)
        doc["training"]["zero3_exchange"] = stated
        assert not any(w.startswith("training.zero3_exchange:") for w in solve(doc, ranges=False)["warnings"])
    one = copy.deepcopy(FSDP)
    one["training"]["global_batch_seqs"] = 64  # one microbatch a step
    zero1 = copy.deepcopy(FSDP)
    zero1["training"]["layout"] = {**zero1["training"]["layout"], "zero_stage": 1}
    for doc in (one, zero1):
        assert not any(w.startswith("training.zero3_exchange:") for w in solve(doc, ranges=False)["warnings"])


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 32), st.sampled_from([1, 2, 4]), st.sampled_from([0.0, 0.9]), st.booleans(), st.booleans()
)
def test_gathers_every_microbatch_lie_between_the_two_others(
    microbatches: int, microbatch: int, overlap: float, reshard: bool, fp32: bool
) -> None:
    """FSDP2 without gradient sync until the last microbatch: the gathers every microbatch, the reduce-scatter
    once. Its exchange is the step's once plus ``m - 1`` times the gathers alone, so it lies between
    ``once_per_step`` and ``every_microbatch`` and equals the first with one microbatch."""
    doc = copy.deepcopy(FSDP)
    doc["training"]["global_batch_seqs"] = 32 * microbatch * microbatches
    doc["training"]["layout"] = {
        **doc["training"]["layout"],
        "microbatch_seqs": microbatch,
        "fsdp_reshard_after_forward": reshard,
        "grad_reduce_dtype": "fp32" if fp32 else "bf16",
    }
    doc["training"]["efficiency"] = {"overlap": {"dp": overlap}}
    once = solve(doc, ranges=False)
    gathers = _step(doc, zero3_exchange="gather_every_microbatch")
    every = _step(doc, zero3_exchange="every_microbatch")
    assert once["step"]["comm_s"]["dp"] <= gathers["comm_s"]["dp"] <= every["comm_s"]["dp"] * (1 + 1e-12)
    assert once["step"]["step_s"] <= gathers["step_s"] <= every["step_s"] * (1 + 1e-12)
    if microbatches == 1:
        assert gathers == dict(once["step"])
    # bytes a parameter: weights w = 2, gathers 2w resharded (else w), reduce-scatter g = 4 or 2
    w, g = 2.0, 4.0 if fp32 else 2.0
    gather = 2 * w if reshard else w
    dp_bytes = once["traffic"]["bytes_per_gpu"]["dp"]
    solved = copy.deepcopy(doc)
    solved["training"]["zero3_exchange"] = "gather_every_microbatch"
    moved = solve(solved, ranges=False)["traffic"]["bytes_per_gpu"]["dp"]
    assert moved == pytest.approx(dp_bytes * (microbatches * gather + g) / (gather + g), rel=1e-12)


def test_gathers_every_microbatch_change_nothing_below_zero3() -> None:
    zero1 = copy.deepcopy(FSDP)
    zero1["training"]["layout"] = {**zero1["training"]["layout"], "zero_stage": 1}
    assert _step(zero1, zero3_exchange="gather_every_microbatch") == _step(zero1)
