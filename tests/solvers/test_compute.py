"""solvers.compute: FLOPs per token, recompute FLOPs, busiest stage, GEMM roofline, elementwise time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from solvers import compute
from solvers.specs import MLASpec
from tests.solvers.test_engine import DEEPSEEK_V3, GPT3_175B, LLAMA3_405B


def test_palm_model_flops_per_token_llama3() -> None:
    """PaLM appendix B: 6 x 405e9 + 12 x 126 x 16,384 x 8,192 = 2.633e12."""
    assert compute.model_flops_per_token(model=LLAMA3_405B, seq_len=8192) == pytest.approx(
        2.6329e12, rel=1e-4
    )


def test_moe_flops_use_active_parameters() -> None:
    flops = compute.model_flops_per_token(model=DEEPSEEK_V3, seq_len=4096)
    assert flops == pytest.approx(6 * 37e9 + 12 * 61 * 7168 * 4096)
    assert compute.expert_params(model=DEEPSEEK_V3) == pytest.approx(58 * 256 * 3 * 7168 * 2048)
    assert compute.active_expert_params(model=DEEPSEEK_V3) == pytest.approx(58 * 8 * 3 * 7168 * 2048)
    assert compute.expert_params(model=LLAMA3_405B) == 0.0


def test_mla_attention_flops_follow_its_head_widths() -> None:
    """DeepSeek-V3's MLA: QK^T over 128 x (128 + 64) and AV over 128 x 128 per token, x 6 L s (PaLM's
    count with MLA's widths), near the 2.80e11 FLOP per token the ISCA'25 paper's Table 4 implies."""
    mla = MLASpec(
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128
    )
    model = dataclasses.replace(DEEPSEEK_V3, mla=mla)
    assert compute.attention_widths(model=model) == (24_576.0, 16_384.0)
    assert compute.attention_widths(model=DEEPSEEK_V3) == (7168.0, 7168.0)
    attention = 6 * 61 * 4096 * (24_576 + 16_384)
    assert compute.attention_flops_per_token(model=model, seq_len=4096) == pytest.approx(attention)
    flops = compute.model_flops_per_token(model=model, seq_len=4096)
    assert flops == pytest.approx(6 * 37e9 + attention)
    implied = 432e12 * 2048 * 19.926 / (15_360 * 4096)
    assert flops == pytest.approx(implied, rel=0.02)
    selective = compute.recompute_flops_per_token(model=model, seq_len=4096, recompute=1)
    assert selective == pytest.approx(attention / 3)


def test_recompute_flops() -> None:
    """none 0; selective the attention core's forward 4 L h s; full one more forward pass of the blocks, the
    embedding and the output layer not run again (SC'21 eq. 3 counts the logit layer 3 times, the layers 4)."""
    codes = np.array([0, 1, 2])
    extra = compute.recompute_flops_per_token(model=GPT3_175B, seq_len=2048, recompute=codes)
    attn_fwd = 4 * 96 * 12288 * 2048
    vocab = 2 * GPT3_175B.vocab * 12288 * (1 if GPT3_175B.tied_embeddings else 2)
    np.testing.assert_allclose(extra, [0.0, attn_fwd, 2 * 175e9 - vocab + attn_fwd])
    full = compute.model_flops_per_token(model=GPT3_175B, seq_len=2048)
    assert extra[2] == pytest.approx((full - 3 * vocab) / 3)  # the blocks 4 passes instead of 3
    assert compute.recompute_flops_per_token(model=GPT3_175B, seq_len=2048, recompute=1) == pytest.approx(
        attn_fwd
    )


def test_busiest_stage_of_uneven_split() -> None:
    assert compute.busiest_stage_layers(layers=126, pp=16) == 8
    assert compute.stage_layer_share(layers=126, pp=16) == pytest.approx(8 / 126)
    np.testing.assert_array_equal(
        compute.busiest_stage_layers(layers=96, pp=np.array([1, 8, 96])), [96, 12, 1]
    )


def test_gemm_intensity_and_roofline() -> None:
    """Docstring example: I = 3,000 FLOP/B for Llama 3's TP8 MLP GEMM; tiny GEMMs are HBM-bound."""
    big = compute.gemm_intensity_flop_per_byte(rows=8192.0, inner=16384.0, cols=53248 / 8, element_bytes=2.0)
    assert big == pytest.approx(3000, rel=0.01)
    small = compute.gemm_intensity_flop_per_byte(rows=8.0, inner=256.0, cols=64.0, element_bytes=2.0)
    rate = 514e12
    assert compute.math_time_s(
        flops=1e15, rate_flops=rate, intensity=big, hbm_bytes_s=3.35e12
    ) == pytest.approx(1e15 / rate)
    assert compute.math_time_s(
        flops=1e9, rate_flops=rate, intensity=small, hbm_bytes_s=3.35e12
    ) == pytest.approx(1e9 / (small * 3.35e12))


def test_elementwise_time_example() -> None:
    """Docstring example: 324 kB per token-layer x 6 passes / 2.039e12 B/s = 0.95 us."""
    per = 34 * 2304 + 5 * 24 * 2048
    t = compute.elementwise_time_s(activation_bytes=float(per), forward_rerun=True, hbm_bytes_s=2.039e12)
    assert t == pytest.approx(0.95e-6, rel=0.01)
    assert compute.elementwise_time_s(
        activation_bytes=float(per), forward_rerun=False, hbm_bytes_s=2.039e12
    ) == pytest.approx(t * 4 / 6)


def test_scalar_and_array_helpers_agree() -> None:
    a = np.array([1.0, 5.0, 3.0])
    b = np.array([2.0, 4.0, 3.0])
    for i in range(3):
        assert compute.minimum(float(a[i]), float(b[i])) == np.minimum(a, b)[i]
        assert compute.maximum(float(a[i]), float(b[i])) == np.maximum(a, b)[i]
        assert compute.where(bool(a[i] > b[i]), 1.0, 2.0) == np.where(a > b, 1.0, 2.0)[i]
    assert compute.logical_not(True) is False
    np.testing.assert_array_equal(compute.logical_not(np.array([True, False])), [False, True])
    assert compute.clip(7, 1, 5) == 5


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 1024, 1025, 16384, 2**40 + 1])
def test_ceil_log2_is_exact(n: int) -> None:
    expected = (n - 1).bit_length() if n > 1 else 0
    assert compute.ceil_log2(n) == expected
    assert int(compute.ceil_log2(np.array([n]))[0]) == expected
