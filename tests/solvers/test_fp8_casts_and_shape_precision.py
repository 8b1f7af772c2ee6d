"""The ``fp8_casts`` and ``shape_by_precision`` effects (solvers.effects; docs/CONVENTIONS.md, "Step effects"):
FP8 training quantises GEMM inputs and output gradients through HBM, and the matrix-shape curve's half-rate
dimension, fitted to FP8 kernels, scales with the precision's peak."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import effects, solve
from solvers.catalog.accelerators import ACCELERATORS
from solvers.specs import ModelSpec, MoESpec

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
        elements=_elements(LLAMA3_8B), token_layers=32 * 16384, full_recompute=False, hbm_bytes_s=3.35e12
    )
    assert seconds == pytest.approx(0.0385, rel=1e-3)
    # a full recomputation repeats the forward's casts
    again = effects.fp8_cast_time_s(
        elements=_elements(LLAMA3_8B), token_layers=32 * 16384, full_recompute=True, hbm_bytes_s=3.35e12
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


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 1 << 20), scale=st.integers(2, 16), full=st.booleans())
def test_cast_time_is_linear_in_tokens(tokens: int, scale: int, full: bool) -> None:
    elements = _elements(MIXTRAL, tp=2, expert_tp=2, expert_gather=True, sequence_parallel=True)
    one = effects.fp8_cast_time_s(
        elements=elements, token_layers=tokens, full_recompute=full, hbm_bytes_s=3e12
    )
    more = effects.fp8_cast_time_s(
        elements=elements, token_layers=tokens * scale, full_recompute=full, hbm_bytes_s=3e12
    )
    assert one > 0.0
    assert more == pytest.approx(one * scale, rel=1e-12)


def test_the_half_dimension_scales_with_the_precision_peak() -> None:
    h100 = ACCELERATORS["h100-sxm"]["peak_tflops"]
    bf16 = effects.precision_half_dim(half=99.8, peak=h100["bf16"], peak_fp8=h100["fp8"])
    assert bf16 == pytest.approx(99.8 * h100["bf16"] / h100["fp8"])
    assert effects.precision_half_dim(half=99.8, peak=h100["fp8"], peak_fp8=h100["fp8"]) == 99.8
    # without an FP8 peak (Ampere, Volta) the curve keeps the fitted half
    assert effects.precision_half_dim(half=99.8, peak=312.0, peak_fp8=0.0) == 99.8


def _plan(precision: str, fp8_casts: bool, shape_by_precision: bool, **switches: bool) -> dict[str, Any]:
    """Llama 3 8B on 16 H100 at 8K tokens, with the switches as given (every other effect on)."""
    return {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 16},
        "training": {
            "seq_len": 8192, "global_batch_seqs": 64, "precision": precision,
            "layout": {"tp": 1, "pp": 1, "microbatch_seqs": 1},
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
