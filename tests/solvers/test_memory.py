"""solvers.memory: model state under ZeRO stages and Korthikanti et al. activations."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from solvers import memory
from tests.solvers.test_engine import GPT3_175B, LLAMA3_405B


def _state(
    stage: int,
    *,
    fp32_grads: bool = False,
    optimizer: str = "adam",
    precision: str = "bf16",
    copies: float = 1.0,
) -> tuple[float, float, float]:
    w, g, o = memory.model_state_bytes(
        dense_params_per_gpu=np.array([405e9 / 128]),
        expert_params_per_gpu=np.array([0.0]),
        dense_shard=np.array([128]),
        expert_shard=np.array([1.0]),
        zero_stage=np.array([stage]),
        grad_reduce_fp32=np.array([fp32_grads]),
        precision=precision,
        optimizer=optimizer,
        copies=np.array([copies]),
        layers_on_stage=np.array([8]),
    )
    return float(w[0]), float(g[0]), float(o[0])


def test_zero_1_example() -> None:
    """Docstring example: weights 6.33 GB, gradients 6.33 GB, optimizer 12 x 3.16e9 / 128 = 0.30 GB."""
    w, g, o = _state(1)
    p = 405e9 / 128
    assert w == pytest.approx(2 * p) and g == pytest.approx(2 * p) and o == pytest.approx(12 * p / 128)


def test_sixteen_bytes_per_parameter_without_zero() -> None:
    w, g, o = _state(0)
    assert w + g + o == pytest.approx(16 * 405e9 / 128)  # ZeRO §3.1: 2 + 2 + 12


def test_each_zero_stage_shards_more() -> None:
    p = 405e9 / 128
    _w2, g2, _o2 = _state(2)
    assert g2 == pytest.approx(2 * p / 128)
    w3, _g3, _o3 = _state(3)
    assert w3 == pytest.approx(2 * (p / 128 + 2 * p / 8))  # shard + two gathered layers
    totals = [sum(_state(s)) for s in range(4)]
    assert totals == sorted(totals, reverse=True)


def test_fp32_grads_sgd_fp32_and_dualpipe_copies() -> None:
    p = 405e9 / 128
    assert _state(0, fp32_grads=True)[1] == pytest.approx(4 * p)
    assert _state(0, optimizer="sgd")[2] == pytest.approx(8 * p)
    assert _state(0, optimizer="sgd", precision="fp32")[2] == pytest.approx(4 * p)
    assert _state(0, precision="fp32")[0] == pytest.approx(4 * p)
    assert _state(0, copies=2.0)[0] == pytest.approx(2 * _state(0)[0])


def test_korthikanti_per_layer_activations_gpt3() -> None:
    """Docstring example: (34 + 5 a s / h) x h / t = 175,104 bytes per token-layer at TP8 with SP."""
    kwargs: dict[str, Any] = {
        "model": GPT3_175B,
        "seq_len": 2048,
        "tp": np.array([8]),
        "expert_tp": np.array([8]),
        "moe_layer": False,
    }
    none = memory.activation_bytes_per_token_layer(
        sequence_parallel=np.array([True]), recompute=np.array([0]), **kwargs
    )
    assert none[0] == pytest.approx(175_104)
    selective = memory.activation_bytes_per_token_layer(
        sequence_parallel=np.array([True]), recompute=np.array([1]), **kwargs
    )
    assert selective[0] == pytest.approx(34 * 12288 / 8)
    no_sp = memory.activation_bytes_per_token_layer(
        sequence_parallel=np.array([False]), recompute=np.array([1]), **kwargs
    )
    assert no_sp[0] == pytest.approx(12288 * (10 + 24 / 8))  # Korthikanti eq. 2 without the score term
    full = memory.activation_bytes_per_token_layer(
        sequence_parallel=np.array([True]), recompute=np.array([2]), **kwargs
    )
    assert full[0] == pytest.approx(2 * 12288 / 8)


@pytest.mark.parametrize(
    ("dropout", "per_token_layer"),
    [
        # 8h/t + (4h + 4h kv/a)/t + 6f/t = 16,384 + 8,704 + 39,936 (Llama 3 trains without dropout)
        (False, 65_024),
        # Korthikanti's count adds two 1-byte dropout masks, 2h/t = 4,096
        (True, 69_120),
    ],
)
def test_activation_total_example_llama(dropout: bool, per_token_layer: int) -> None:
    """Docstring example: 65,024 B per token-layer x 8,192 x 8 layers x 16 in flight = 68.2 GB without dropout;
    with dropout masks 69,120 B and 72.5 GB."""
    model = dataclasses.replace(LLAMA3_405B, dropout=dropout)
    total = memory.activation_bytes(
        model=model,
        seq_len=8192,
        microbatch_tokens=np.array([8192.0]),
        tp=np.array([8]),
        expert_tp=np.array([8]),
        sequence_parallel=np.array([True]),
        recompute=np.array([1]),
        layers_on_stage=np.array([8]),
        in_flight=np.array([16.0]),
    )
    assert total[0] == pytest.approx(per_token_layer * 8192 * 8 * 16)
    assert total[0] / 1e9 == pytest.approx(68.2 if not dropout else 72.5, abs=0.05)
    assert memory.activation_traffic_bytes_per_token_layer(
        model=model, seq_len=8192, tp=8, expert_tp=8, sequence_parallel=True, scores=False
    ) == pytest.approx(per_token_layer)


def test_dense_and_expert_split() -> None:
    dense, experts = memory.dense_and_expert_params(model=LLAMA3_405B)
    assert dense == 405e9 and experts == 0.0


def test_scores_materialised_depends_on_the_kernel_not_the_policy() -> None:
    codes = np.array([0, 1, 2])
    np.testing.assert_array_equal(
        memory.scores_materialised(recompute=codes, fused_attention=True), [False] * 3
    )
    np.testing.assert_array_equal(
        memory.scores_materialised(recompute=codes, fused_attention=False), [True] * 3
    )
    np.testing.assert_array_equal(
        memory.scores_materialised(recompute=codes, fused_attention=None), [False] * 3
    )
    assert memory.scores_materialised(recompute=2, fused_attention=False) is True
    np.testing.assert_array_equal(memory.memory_policy(recompute=codes, fused_attention=True), [1, 1, 2])
    np.testing.assert_array_equal(memory.memory_policy(recompute=codes, fused_attention=False), [0, 1, 2])
    assert memory.memory_policy(recompute=0, fused_attention=True) == 1


def test_unfused_scores_without_dropout_keep_only_the_softmax_output() -> None:
    """Korthikanti's 5as per token is softmax output 2as + dropout mask as + dropped-out probabilities 2as;
    without dropout only the softmax output (the AV input) is kept: 2as."""
    kwargs: dict[str, Any] = {"seq_len": 2048, "tp": 8, "expert_tp": 8, "sequence_parallel": True}
    with_dropout = memory.activation_bytes_per_token_layer(
        model=GPT3_175B, recompute=0, moe_layer=False, **kwargs
    )
    selective = memory.activation_bytes_per_token_layer(
        model=GPT3_175B, recompute=1, moe_layer=False, **kwargs
    )
    plain = dataclasses.replace(GPT3_175B, dropout=False)
    without = memory.activation_bytes_per_token_layer(model=plain, recompute=0, moe_layer=False, **kwargs)
    without_selective = memory.activation_bytes_per_token_layer(
        model=plain, recompute=1, moe_layer=False, **kwargs
    )
    assert with_dropout - selective == pytest.approx(5 * 96 * 2048 / 8)
    assert without - without_selective == pytest.approx(2 * 96 * 2048 / 8)
    assert selective - without_selective == pytest.approx(2 * 12288 / 8)  # the two masks, split by SP
