"""The ``expert_tp_exchange`` effect: with expert tensor parallelism the routed copies are gathered over the
expert-TP group (Megatron-Core's dispatcher; Liu et al. 2025, MoE Parallel Folding); docs/CONVENTIONS.md."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import exchanges, memory, solve
from solvers.collectives import Links
from solvers.specs import ModelSpec, MoESpec

LINKS = Links(up_gb_s=400.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=8)
A = 4096 * 3584 * 2.0  # one activation tensor of a 4,096-token microbatch of Qwen2-57B-A14B in BF16
QWEN2 = ModelSpec(
    name="Qwen2-57B-A14B",
    params=57.4e9,
    active_params=14.2e9,
    layers=28,
    hidden=3584,
    heads=28,
    kv_heads=4,
    ffn_hidden=18944,
    vocab=151936,
    gated_mlp=True,
    dropout=False,
    moe=MoESpec(experts=64, top_k=8, expert_ffn_hidden=2560, shared_experts=8, moe_layers=28),
)


def _tp(*, expert_tp: int, gather: bool, shared: bool) -> exchanges.Exchange:
    return exchanges.tp_exchange(
        tp=2,
        expert_tp=expert_tp,
        activation_bytes=A,
        microbatches=1,
        layers_busiest=1,
        layers_mean=1.0,
        moe_share=1.0,
        full_recompute=False,
        links=LINKS,
        expert_gather=gather,
        shared_experts=shared,
    )


def _ep(*, expert_tp: int, gather: bool) -> exchanges.Exchange:
    tokens_per_rank = 4096 / 2  # a 4,096-token microbatch over TP 2 with sequence parallelism
    return exchanges.ep_exchange(
        ep=4,
        stride=expert_tp,
        dispatch_bytes=tokens_per_rank * 8 * 3584 * 2.0,
        combine_bytes=tokens_per_rank * 8 * 3584 * 2.0,
        microbatches=1,
        moe_layers_busiest=1,
        moe_layers_mean=1.0,
        full_recompute=False,
        links=LINKS,
        expert_tp=expert_tp,
        gather=gather,
    )


def test_the_dispatcher_gathers_every_routed_copy_over_expert_tp() -> None:
    """Qwen2-57B-A14B at TP 2, expert TP 2, top-8, EP 4: each GPU receives 2,048 x 8 copies of 7,168 bytes per
    all-to-all (117 MB); the dispatcher all-gathers them over the expert-TP pair and reduce-scatters the outputs
    back, half of twice that each way: 117 MB more per direction and pass, on top of the all-to-all's 3/4."""
    per_gpu = 2048 * 8 * 3584 * 2.0
    a2a = _ep(expert_tp=2, gather=False)
    gathered = _ep(expert_tp=2, gather=True)
    assert a2a.bytes_per_gpu == pytest.approx(2 * 0.75 * 2 * per_gpu)  # fwd + bwd, dispatch + combine
    assert gathered.bytes_per_gpu - a2a.bytes_per_gpu == pytest.approx(2 * 2 * per_gpu)
    assert gathered.time_s > a2a.time_s
    # folded to expert TP 1 the dispatcher gathers nothing
    assert _ep(expert_tp=1, gather=True) == _ep(expert_tp=1, gather=False)


def test_a_moe_layer_keeps_over_tp_only_its_shared_experts_pair() -> None:
    """With the effect the MLP half of a MoE layer sends the attention TP's pair for a shared expert (a dense TP
    MLP) and nothing for the routed ones; without it (the seeds' convention) an all-reduce of A over expert TP."""
    attention = 2 * A  # fwd + bwd, 2(t-1)/t = 1 at TP 2
    assert _tp(expert_tp=2, gather=False, shared=False).bytes_per_gpu == pytest.approx(2 * attention)
    assert _tp(expert_tp=2, gather=True, shared=True).bytes_per_gpu == pytest.approx(2 * attention)
    assert _tp(expert_tp=2, gather=True, shared=False).bytes_per_gpu == pytest.approx(attention)
    assert _tp(expert_tp=1, gather=True, shared=False).bytes_per_gpu == pytest.approx(attention)


def test_memory_holds_the_gathered_copies_whole() -> None:
    """Per token and MoE layer a GPU holds etp/tp of its group's copies, 2h each, and 1/tp of their MLP: at
    TP 2, expert TP 2 that is 8 x (2 x 3,584 x 2 + 6 x 2,560) / 2 + 8 x 6 x 2,560 / 2 bytes of MLP part."""
    kw: dict[str, Any] = {"model": QWEN2, "seq_len": 4096, "tp": 2, "sequence_parallel": True, "recompute": 1}
    legacy = memory.activation_bytes_per_token_layer(expert_tp=2, moe_layer=True, **kw)
    gathered = memory.activation_bytes_per_token_layer(expert_tp=2, moe_layer=True, expert_gather=True, **kw)
    mlp_legacy = (8 * (2 * 3584 + 6 * 2560) + 8 * 6 * 2560) / 2
    mlp_gathered = (8 * (2 * 3584 * 2 + 6 * 2560) + 8 * 6 * 2560) / 2
    assert gathered - legacy == pytest.approx(mlp_gathered - mlp_legacy)
    # folded: expert TP 1 under TP 2 holds half the copies and half their MLP, as the attention's split
    folded = memory.activation_bytes_per_token_layer(expert_tp=1, moe_layer=True, expert_gather=True, **kw)
    assert folded - legacy == pytest.approx((8 * (2 * 3584 + 6 * 2560) + 8 * 6 * 2560) / 2 - mlp_legacy)


QWEN2_DOC: dict[str, Any] = {
    "name": "Qwen2-57B-A14B", "layers": 28, "hidden": 3584, "ffn_hidden": 18944, "heads": 28, "kv_heads": 4,
    "vocab": 151936, "gated_mlp": True,
    "moe": {"experts": 64, "top_k": 8, "expert_ffn_hidden": 2560, "shared_experts": 8, "moe_layers": 28},
}  # fmt: skip
MIXTRAL_DOC: dict[str, Any] = {  # Mixtral 8x22B: no shared expert
    "name": "Mixtral 8x22B", "layers": 56, "hidden": 6144, "ffn_hidden": 16384, "heads": 48, "kv_heads": 8,
    "vocab": 32000, "gated_mlp": True,
    "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 16384, "shared_experts": 0, "moe_layers": 56},
}  # fmt: skip


def _doc(
    model: dict[str, Any], gpus: int, layout: dict[str, Any], effect: bool, **training: Any
) -> dict[str, Any]:
    """A BF16 plan at 4,096 tokens and 256 sequences a step on DGX H100 nodes, with sequence parallelism."""
    return {
        "model": model,
        "cluster": {"node": "dgx-h100", "gpus": gpus},
        "training": {
            "seq_len": 4096, "global_batch_seqs": 256, "precision": "bf16", **training,
            "layout": {"microbatch_seqs": 1, "sequence_parallel": True, **layout},
            "efficiency": {"overlap": {"dp": 0.9, "pp": 0.9}, "effects": {"expert_tp_exchange": effect}},
        },
    }  # fmt: skip


def _qwen2(expert_tp: int, effect: bool) -> dict[str, Any]:
    """Liu et al. 2025's Qwen2-57B-A14B layout on 64 H100: TP 2, PP 4 interleaved 7, EP 4."""
    layout = {
        "tp": 2,
        "pp": 4,
        "ep": 4,
        "expert_tp": expert_tp,
        "schedule": "interleaved",
        "virtual_stages": 7,
    }
    return _doc(QWEN2_DOC, 64, layout, effect, moe_capacity_factor=1.0)


def test_folding_wins_where_the_paper_measured_it_and_only_with_the_effect() -> None:
    """Liu et al. 2025 Table 3: Qwen2-57B-A14B on 64 H100, 35.3% MFU at expert TP 2, 39.0% folded (expert TP 1).
    With the effect the fold is faster; without it the engine prices the two the other way round."""
    on = [solve(_qwen2(etp, True), ranges=False)["step"]["step_s"] for etp in (2, 1)]
    off = [solve(_qwen2(etp, False), ranges=False)["step"]["step_s"] for etp in (2, 1)]
    assert on[1] < on[0]
    assert off[1] > off[0]


@settings(max_examples=25, deadline=None)
@given(etp=st.sampled_from([1, 2, 4, 8]), ep=st.sampled_from([1, 2, 8, 32]), recompute=st.booleans())
def test_the_gather_grows_with_expert_tp_and_vanishes_at_one(etp: int, ep: int, recompute: bool) -> None:
    """The gather adds ``rounds x (etp-1) x (dispatch + combine)`` bytes per MoE layer, 0 at expert TP 1."""
    kw: dict[str, Any] = {
        "ep": np.array([ep]), "stride": np.array([etp]), "dispatch_bytes": np.array([A]),
        "combine_bytes": np.array([A]), "microbatches": np.array([1]), "moe_layers_busiest": np.array([1.0]),
        "moe_layers_mean": np.array([1.0]), "full_recompute": np.array([recompute]), "links": LINKS,
        "expert_tp": np.array([etp]),
    }  # fmt: skip
    extra = exchanges.ep_exchange(gather=True, **kw).bytes_per_gpu - exchanges.ep_exchange(**kw).bytes_per_gpu
    rounds = 3 if recompute else 2
    assert extra[0] == pytest.approx(rounds * (etp - 1) * 2 * A)


def test_a_dense_model_and_a_model_without_expert_tp_are_untouched() -> None:
    doc = _qwen2(2, True)
    dense = copy.deepcopy(doc)
    dense["model"].pop("moe")
    dense["training"]["layout"] = {
        k: v for k, v in doc["training"]["layout"].items() if k not in ("ep", "expert_tp")
    }
    off = copy.deepcopy(dense)
    off["training"]["efficiency"]["effects"]["expert_tp_exchange"] = False
    assert solve(dense, ranges=False)["step"] == solve(off, ranges=False)["step"]


def _mixtral_like(expert_tp: int, effect: bool, **training: Any) -> dict[str, Any]:
    """Mixtral 8x22B at TP 2 on 128 H100: EP 4 at expert TP 2, EP 8 folded to expert TP 1."""
    layout = {"tp": 2, "pp": 8, "ep": 8 if expert_tp == 1 else 4, "expert_tp": expert_tp}
    return _doc(MIXTRAL_DOC, 128, layout, effect, **training)


def test_the_engine_moves_each_priced_piece_the_way_the_dispatcher_does() -> None:
    """Switching the effect on, in the report: at expert TP 2 the MoE layers leave the TP exchange (no shared
    expert) for the EP exchange, and a GPU holds the gathered copies whole (more activation memory); folded to
    expert TP 1 under TP 2 nothing is gathered (the same EP exchange), a GPU holds half its group's copies (less
    memory), and its experts' GEMMs and elementwise work change with their tokens."""
    on, off = (solve(_mixtral_like(2, flag), ranges=False) for flag in (True, False))
    assert on["step"]["comm_s"]["tp"] < off["step"]["comm_s"]["tp"]
    assert on["step"]["comm_s"]["ep"] > off["step"]["comm_s"]["ep"]
    assert on["memory"]["activations_bytes"] > off["memory"]["activations_bytes"]
    on, off = (solve(_mixtral_like(1, flag), ranges=False) for flag in (True, False))
    assert on["step"]["comm_s"]["ep"] == off["step"]["comm_s"]["ep"]
    assert on["memory"]["activations_bytes"] < off["memory"]["activations_bytes"]
    assert on["step"]["compute_s"] != off["step"]["compute_s"]
    # eager elementwise kernels (no fusion): the experts' SwiGLU width per token follows the same split
    eager_on, eager_off = (
        solve(_mixtral_like(1, flag, fused_elementwise=False), ranges=False) for flag in (True, False)
    )
    assert (
        eager_on["step"]["compute_s"] - on["step"]["compute_s"]
        < eager_off["step"]["compute_s"] - off["step"]["compute_s"]
    )


def test_a_folded_layouts_experts_multiply_fewer_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The expert GEMMs' rows alone: with the elementwise traffic held at its old split, folding Mixtral to expert
    TP 1 under TP 2 still changes the compute time when the effect is on (each GPU's experts see half its TP
    group's tokens: fewer rows, a lower shape factor, a longer GEMM time) and not when it is off."""
    traffic = memory.activation_traffic_bytes_per_token_layer

    def old_split(**kwargs: Any) -> Any:
        return traffic(**{**kwargs, "expert_gather": False})

    monkeypatch.setattr(memory, "activation_traffic_bytes_per_token_layer", old_split)
    on, off = (solve(_mixtral_like(1, flag), ranges=False)["step"] for flag in (True, False))
    assert on["compute_s"] > off["compute_s"]
    assert on["comm_s"] == off["comm_s"]  # folded: nothing gathered, the same exchanges
