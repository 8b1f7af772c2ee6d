"""The shared experts computed beside the routed tokens' all-to-alls (``training.moe_shared_expert_overlap``,
Megatron-Core's ``moe_shared_expert_overlap``): what they hide of the expert-parallel exchange, and what they
leave alone; docs/CONVENTIONS.md "Shared experts beside the all-to-alls"."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, compute, exchanges, resolve, solve
from solvers.published import load_example

# Qwen2-57B-A14B as the Parallel Folding paper ran it (corpus/liu-2025-moe-parallel-folding.yaml), 128 H100.
QWEN2: dict[str, Any] = {
    "name": "Qwen2-57B-A14B, 128 H100, TP2 PP4 EP4",
    "model": {
        "name": "Qwen2-57B-A14B",
        "layers": 28,
        "hidden": 3584,
        "ffn_hidden": 18944,
        "heads": 28,
        "kv_heads": 4,
        "vocab": 151936,
        "gated_mlp": True,
        "moe": {"experts": 64, "top_k": 8, "expert_ffn_hidden": 2560, "shared_experts": 8, "moe_layers": 28},
    },
    "cluster": {"node": "dgx-h100", "gpus": 128},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 1024,
        "precision": "bf16",
        "moe_capacity_factor": 1.0,
        "layout": {
            "tp": 2,
            "pp": 4,
            "cp": 1,
            "ep": 4,
            "expert_tp": 1,
            "microbatch_seqs": 1,
            "sequence_parallel": True,
            "zero_stage": 1,
            "schedule": "interleaved",
            "virtual_stages": 7,
        },
        "efficiency": {"overlap": {"dp": 0.9, "pp": 0.9}},
    },
}


def _with(doc: dict[str, Any], *, model_moe: dict[str, Any] | None = None, **training: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["training"].update(training)
    if model_moe:
        out["model"]["moe"].update(model_moe)
    return out


def _step(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(solve(doc, ranges=False)["step"])


def test_the_default_is_in_series_and_the_document_says_so() -> None:
    resolved = resolve(QWEN2)
    assert resolved.training.moe_shared_expert_overlap is False
    assert resolved.document["training"]["moe_shared_expert_overlap"] is False
    assert _step(QWEN2) == _step(_with(QWEN2, moe_shared_expert_overlap=False))


def test_qwen2_hides_its_whole_exchange_behind_its_shared_expert() -> None:
    """One 20,480-wide shared expert (8 of 2,560) against EP 4: its math outlasts the exchange, so none of the
    exchange is left; the step is shorter by that exchange less the SMs the hidden exchange takes."""
    series = _step(QWEN2)
    beside = _step(_with(QWEN2, moe_shared_expert_overlap=True))
    assert series["exposed_comm_s"]["ep"] == series["comm_s"]["ep"] > 0.3
    assert beside["comm_s"]["ep"] == series["comm_s"]["ep"]
    assert beside["exposed_comm_s"]["ep"] == 0.0
    saved = series["step_s"] - beside["step_s"]
    assert 0.8 * series["comm_s"]["ep"] < saved < series["comm_s"]["ep"]
    for dim in ("tp", "cp", "pp"):
        assert beside["exposed_comm_s"][dim] == series["exposed_comm_s"][dim]


def test_a_small_shared_expert_hides_no_more_than_its_math() -> None:
    """Shrink the shared experts until their math is shorter than the exchange: what is hidden is that math,
    so it grows with the shared width, and the rest of the exchange stays exposed."""
    hidden = []
    for shared in (1, 2):
        doc = _with(QWEN2, model_moe={"shared_experts": shared, "expert_ffn_hidden": 256})
        doc["training"]["layout"].update(
            {"tp": 1, "ep": 16, "pp": 1, "schedule": "1f1b", "virtual_stages": 1}
        )
        series, beside = _step(doc), _step(_with(doc, moe_shared_expert_overlap=True))
        assert beside["exposed_comm_s"]["ep"] > 0.0
        hidden.append(series["exposed_comm_s"]["ep"] - beside["exposed_comm_s"]["ep"])
    assert 0.0 < hidden[0] < hidden[1]
    assert hidden[1] == pytest.approx(2.0 * hidden[0], rel=1e-9)


@given(
    dispatch=st.floats(0.0, 100.0, allow_nan=False),
    combine=st.floats(0.0, 100.0, allow_nan=False),
    forward=st.floats(0.0, 100.0, allow_nan=False),
    more=st.floats(0.0, 100.0, allow_nan=False),
    matrices=st.sampled_from([2, 3]),
    full=st.booleans(),
)
def test_each_phase_of_each_pass_hides_behind_its_own_gemm(
    dispatch: float, combine: float, forward: float, more: float, matrices: int, full: bool
) -> None:
    """The first GEMM (all matrices but the last) runs beside the dispatch, the second beside the combine, in
    every pass (the backward with twice the forward's math): never more hidden than the exchange or the math
    beside it, and more shared math never hides less."""

    def hidden(math: float) -> float:
        return float(
            exchanges.shared_expert_hidden_s(
                dispatch_s=dispatch,
                combine_s=combine,
                forward_math_s=math,
                matrices=matrices,
                full_recompute=full,
            )
        )

    passes = 4.0 if full else 3.0  # forward + backward (2) + a recomputed forward
    assert 0.0 <= hidden(forward) <= min(dispatch + combine, passes * forward) * (1 + 1e-12) + 1e-12
    assert hidden(forward + more) >= hidden(forward) - 1e-12


def test_a_long_dispatch_hides_the_first_gemm_of_each_pass() -> None:
    """A gated MLP's first GEMM is 2/3 of its math: forward 2/3 F, backward 4/3 F (and 2/3 F more recomputed)."""
    for full, expected in ((False, 2.0), (True, 2.0 + 2.0 / 3.0)):
        got = exchanges.shared_expert_hidden_s(
            dispatch_s=100.0, combine_s=0.0, forward_math_s=1.0, matrices=3, full_recompute=full
        )
        assert got == pytest.approx(expected)
    # the backward's longer math covers what the forward's cannot: 0.9 s of exchange a pass against 0.5 and 1.0
    got = exchanges.shared_expert_hidden_s(
        dispatch_s=0.0, combine_s=1.8, forward_math_s=1.5, matrices=3, full_recompute=False
    )
    assert got == pytest.approx(0.5 + 0.9)


def test_the_expert_tp_reduce_scatter_stays_exposed() -> None:
    """At expert TP 2 (Megatron-Core before folding) the experts' outputs are reduce-scattered over expert TP
    before the combine, after the routed GEMMs: the shared experts' first GEMM is done, the second not yet
    issued, so that part of the exchange stays exposed; folded to expert TP 1 nothing is left."""
    mcore = copy.deepcopy(QWEN2)
    mcore["training"]["layout"]["expert_tp"] = 2
    series, beside = _step(mcore), _step(_with(mcore, moe_shared_expert_overlap=True))
    assert 0.0 < beside["exposed_comm_s"]["ep"] < 0.5 * series["exposed_comm_s"]["ep"]
    assert _step(_with(QWEN2, moe_shared_expert_overlap=True))["exposed_comm_s"]["ep"] == 0.0


def test_with_the_ep_overlap_share_the_hidden_exchange_stays_within_the_moe_compute() -> None:
    """Megatron-Core refuses the flag together with its 1F1B all-to-all overlap; a scenario that states both gets
    the two added, within the MoE layers' compute: where the EP overlap share already fills that window (an
    exchange far longer than the compute, on a slow scale-out), the shared experts hide nothing more."""
    doc = load_example("deepseek-v3-2048xh800.yaml")
    doc["cluster"]["scale_out"] = {"bandwidth_gb_s": 2.0, "latency_us": 5.0}
    doc["training"]["efficiency"]["overlap"]["ep"] = 1.0
    doc["training"]["moe_dispatch"] = "per_expert"
    series, beside = _step(doc), _step(_with(doc, moe_shared_expert_overlap=True))
    assert series["exposed_comm_s"]["ep"] > series["compute_s"]
    assert beside == series


@settings(max_examples=25, deadline=None)
@given(ep=st.sampled_from([2, 4, 8, 16]), microbatch=st.sampled_from([1, 2]), shared=st.integers(0, 8))
def test_the_overlap_never_slows_a_step(ep: int, microbatch: int, shared: int) -> None:
    doc = _with(QWEN2, model_moe={"shared_experts": shared})
    doc["training"]["layout"].update({"ep": ep, "microbatch_seqs": microbatch})
    series, beside = _step(doc), _step(_with(doc, moe_shared_expert_overlap=True))
    assert beside["step_s"] <= series["step_s"]
    assert 0.0 <= beside["exposed_comm_s"]["ep"] <= series["exposed_comm_s"]["ep"]
    if shared == 0:
        assert beside == series


def test_models_without_shared_experts_change_nothing_and_say_so() -> None:
    mixtral = _with(QWEN2, model_moe={"shared_experts": 0})
    report = solve(_with(mixtral, moe_shared_expert_overlap=True), ranges=False)
    assert report["step"] == _step(mixtral)
    assert any(
        w.startswith("training.moe_shared_expert_overlap: the model has no shared experts")
        for w in report["warnings"]
    )
    dense = _with(load_example("llama3-405b-16384.yaml"), moe_shared_expert_overlap=True)
    warnings = solve(dense, ranges=False)["warnings"]
    assert any(
        "training.moe_shared_expert_overlap" in w and "the model has no experts" in w for w in warnings
    ), warnings


def test_the_shared_parameters_worked_examples() -> None:
    # Qwen2-57B-A14B: 28 layers of one 20,480-wide shared expert (written as 8 of 2,560), SwiGLU
    assert compute.shared_expert_params(model=resolve(QWEN2).model) == 6_165_626_880
    # DeepSeek-V3: 58 MoE layers of one 2,048-wide shared expert (its MTP module's block has no priced all-to-all)
    deepseek = resolve(load_example("deepseek-v3-2048xh800.yaml")).model
    assert compute.shared_expert_params(model=deepseek) == 2_554_331_136


def test_a_flag_that_is_not_a_bool_names_the_field() -> None:
    with pytest.raises(ScenarioError) as info:
        resolve(_with(QWEN2, moe_shared_expert_overlap="yes"))
    errors = {e.path: e.message for e in info.value.errors}
    assert "true or false" in errors["training.moe_shared_expert_overlap"], errors
