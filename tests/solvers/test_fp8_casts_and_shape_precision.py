"""The ``fp8_casts`` and ``shape_by_precision`` effects (solvers.effects; docs/CONVENTIONS.md, "Step effects"):
FP8 training quantises GEMM inputs and output gradients through HBM, and the matrix-shape curve's half-rate
dimension, fitted to FP8 kernels, scales with the large-GEMM rate against the FP8 rate."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import effects, resolve, solve
from solvers.catalog.accelerators import ACCELERATORS
from solvers.published import load_example
from solvers.specs import EffectsSpec, ModelSpec, MoESpec

LLAMA3_8B = ModelSpec(
    name="Llama 3 8B",
    params=8.03e9,
    active_params=8.03e9,
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    ffn_hidden=14336,
    vocab=128256,
    gated_mlp=True,
)
MIXTRAL = ModelSpec(
    name="Mixtral 8x22B",
    params=141e9,
    active_params=39e9,
    layers=56,
    hidden=6144,
    heads=48,
    kv_heads=8,
    ffn_hidden=16384,
    vocab=32768,
    gated_mlp=True,
    moe=MoESpec(experts=8, top_k=2, expert_ffn_hidden=16384, shared_experts=0, moe_layers=56),
)


def _elements(model: ModelSpec, **kwargs: Any) -> tuple[float, float]:
    args: dict[str, Any] = {"tp": 1, "expert_tp": 1, "sequence_parallel": False, "expert_gather": False}
    forward, backward = effects.fp8_cast_elements_per_token_layer(model=model, **{**args, **kwargs})
    return float(forward), float(backward)


def test_the_worked_example_of_the_docstrings() -> None:
    """Llama 3 8B at tp 1: the attention output and the SwiGLU output forward; QKV, projection, fc1 (gated,
    two halves) and fc2 output gradients backward; 4 bytes an element over 32 layers x 16,384 tokens."""
    assert _elements(LLAMA3_8B) == (4096 + 14336, 6144 + 4096 + 2 * 14336 + 4096)
    seconds = effects.fp8_cast_time_s(
        elements=_elements(LLAMA3_8B), token_layers=32 * 16384, forward_rerun=False, hbm_bytes_s=3.35e12
    )
    assert seconds == pytest.approx(0.0385, rel=1e-3)
    # a full recomputation repeats the forward's casts
    again = effects.fp8_cast_time_s(
        elements=_elements(LLAMA3_8B), token_layers=32 * 16384, forward_rerun=True, hbm_bytes_s=3.35e12
    )
    assert again - seconds == pytest.approx(4 * 18432 * 32 * 16384 / 3.35e12)


def test_tensor_and_sequence_parallelism_split_the_casts() -> None:
    """Over tp 8 every TP-split width is an eighth; the hidden-wide gradients split only with sequence
    parallelism (without it every rank holds each token's whole hidden vector)."""
    f1, b1 = _elements(LLAMA3_8B)
    f8, b8 = _elements(LLAMA3_8B, tp=8)
    f8sp, b8sp = _elements(LLAMA3_8B, tp=8, sequence_parallel=True)
    assert f8 == f8sp == pytest.approx(f1 / 8)
    assert b8sp == pytest.approx(b1 / 8)
    assert b8 - b8sp == pytest.approx(2 * (4096 - 4096 / 8))


def test_routed_copies_are_cast_per_expert_and_gathered_copies_count_etp_over_tp() -> None:
    """Mixtral: each of the top-2 copies enters its expert's fc1 at h and fc2 at expert_ffn/etp; under the
    expert-TP gather a GPU casts etp/tp of its TP group's copies."""
    forward, backward = _elements(MIXTRAL)
    q = 48 * 128
    assert forward == q + 2 * (6144 + 16384)
    assert backward == (q + 2 * 8 * 128 + 6144) + 2 * (2 * 16384 + 6144)
    f_old, _ = _elements(MIXTRAL, tp=2, expert_tp=2)
    f_gather, _ = _elements(MIXTRAL, tp=2, expert_tp=2, expert_gather=True)
    assert f_old == q / 2 + 2 * (6144 + 8192)
    assert f_gather == f_old  # etp = tp: a GPU casts as many copies either way
    f_fold, _ = _elements(MIXTRAL, tp=2, expert_tp=1, expert_gather=True)
    assert f_fold == q / 2 + 2 * 0.5 * (6144 + 16384)


def test_multi_head_latent_attention_casts_its_own_widths() -> None:
    """DeepSeek-V3's attention at tp 1 (the preset's MLA: latents 1,536 and 512 + 64, 128 heads of 128 + 64 and
    128): the down-projections' inputs and the output projection's forward (30,720); the latents', the
    up-projections' and the projection's gradients backward (66,624). Against the same model with one
    attention head of width h (forward h, backward q + 2 kv + h = 4h) only the attention part differs."""
    deepseek = resolve(load_example("deepseek-v3-2048xh800.yaml")).model
    assert deepseek.mla is not None
    forward, backward = _elements(deepseek)
    one_head = dataclasses.replace(deepseek, mla=None, heads=1, kv_heads=1, head_dim=None)
    plain_fwd, plain_bwd = _elements(one_head)
    assert forward - plain_fwd == pytest.approx((2 * 7168 + 16384) - 7168)
    assert backward - plain_bwd == pytest.approx((1536 + 576 + 24576 + 32768 + 7168) - 4 * 7168)


def test_fp8_dispatch_quantises_each_token_once_not_each_copy() -> None:
    """Dispatched in FP8 (DeepSeek-V3 §3.3.2) a token's hidden vector is cast once before the dispatch and its
    gradient once before the combine's backward: h/tp each, not top_k copies of h."""
    copies_fwd, copies_bwd = _elements(MIXTRAL, tp=2, expert_tp=2, expert_gather=True)
    token_fwd, token_bwd = _elements(MIXTRAL, tp=2, expert_tp=2, expert_gather=True, fp8_dispatch=True)
    assert copies_fwd - token_fwd == pytest.approx(2 * 6144 - 6144 / 2)
    assert copies_bwd - token_bwd == pytest.approx(2 * 6144 - 6144 / 2)
    assert _elements(LLAMA3_8B, fp8_dispatch=True) == _elements(LLAMA3_8B)  # no experts, nothing dispatched


@settings(max_examples=12, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 4]),
    microbatch=st.sampled_from([1, 2]),
    sequence_parallel=st.booleans(),
    recompute=st.sampled_from(["none", "selective", "full"]),
)
def test_the_casts_lengthen_every_fp8_layout_and_no_bf16_one(
    tp: int, microbatch: int, sequence_parallel: bool, recompute: str
) -> None:
    layout = {
        "tp": tp,
        "microbatch_seqs": microbatch,
        "sequence_parallel": sequence_parallel and tp > 1,
        "recompute": recompute,
    }
    fp8 = [_step(_plan("fp8", flag, False, layout=layout))["step_s"] for flag in (True, False)]
    assert fp8[0] > fp8[1]
    bf16 = [_step(_plan("bf16", flag, False, layout=layout)) for flag in (True, False)]
    assert bf16[0] == bf16[1]


def test_the_half_dimension_scales_with_the_rate_against_the_fp8_rate() -> None:
    h100 = ACCELERATORS["h100-sxm"]["peak_tflops"]
    bf16, fp8 = h100["bf16"] * 0.67, h100["fp8"] * 0.67 * 0.9
    assert effects.precision_half_dim(half=99.8, rate=bf16, rate_fp8=fp8) == pytest.approx(99.8 * bf16 / fp8)
    assert effects.precision_half_dim(half=99.8, rate=bf16, rate_fp8=fp8) == pytest.approx(55.4, abs=0.05)
    # an FP8 GEMM keeps the fitted half exactly, whatever its value
    for half in (99.775, 97.3, 101.1, 0.1):
        assert effects.precision_half_dim(half=half, rate=fp8, rate_fp8=fp8) == half
    # without an FP8 rate (Ampere, Volta; FP32, not a tensor-core kernel) the curve keeps the fitted half
    assert effects.precision_half_dim(half=99.8, rate=312.0, rate_fp8=0.0) == 99.8
    spec = EffectsSpec(shape_by_precision=True, shape_half_dim=99.8, fp8_rate_factor=0.9)
    rates = [
        effects.gemm_rates(
            peak_tflops=h100,
            precision=precision,
            efficiency=0.67,
            default_factor=1.0,
            fp8_default_factor=0.675,
            fx=spec,
            bf16_islands=False,
        )
        for precision in ("fp32", "bf16")
    ]
    assert rates[0].half == 99.8 and rates[1].half == pytest.approx(99.8 * bf16 / fp8)


def _plan(
    precision: str,
    fp8_casts: bool,
    shape_by_precision: bool,
    layout: dict[str, Any] | None = None,
    **switches: bool,
) -> dict[str, Any]:
    """Llama 3 8B on 16 H100 at 8K tokens, with the switches as given (every other effect on)."""
    return {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 16},
        "training": {
            "seq_len": 8192, "global_batch_seqs": 64, "precision": precision,
            "layout": {"tp": 1, "pp": 1, "microbatch_seqs": 1, **(layout or {})},
            "efficiency": {
                "effects": {"fp8_casts": fp8_casts, "shape_by_precision": shape_by_precision, **switches}
            },
        },
    }  # fmt: skip


def _step(document: dict[str, Any]) -> dict[str, Any]:
    return dict(solve(copy.deepcopy(document), ranges=False)["step"])


def test_the_casts_lengthen_an_fp8_step_only() -> None:
    on, off = _step(_plan("fp8", True, False)), _step(_plan("fp8", False, False))
    assert on["step_s"] > off["step_s"]
    assert on["step_s"] - off["step_s"] < 0.1 * off["step_s"]  # a few per cent for an 8B model, not more
    assert _step(_plan("bf16", True, False)) == _step(_plan("bf16", False, False))


def test_the_precision_half_moves_bf16_and_leaves_fp8_gemms() -> None:
    """At BF16 on H100 the curve's half is half the fitted one: the same GEMMs reach more of their plateau.
    An FP8 run's GEMMs keep the fitted half; its attention core, in BF16, takes the BF16 half on the curve of
    its blocks (``context_parallel``), so without that effect nothing moves."""
    assert _step(_plan("bf16", False, True))["step_s"] < _step(_plan("bf16", False, False))["step_s"]
    fp8_on, fp8_off = _step(_plan("fp8", False, True)), _step(_plan("fp8", False, False))
    assert fp8_on["step_s"] < fp8_off["step_s"]
    without_blocks = [_step(_plan("fp8", False, flag, context_parallel=False)) for flag in (True, False)]
    assert without_blocks[0] == without_blocks[1]
