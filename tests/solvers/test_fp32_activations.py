"""The activation count's element size: FP32 training stores its activations at 4 bytes an element."""

from __future__ import annotations

from typing import Any

import pytest

from solvers import solve


def _memory(model: str, node: str, gpus: int, precision: str, **layout: Any) -> dict[str, Any]:
    lay = {"tp": 8, "pp": 1, "microbatch_seqs": 1, "sequence_parallel": True, "zero_stage": 1}
    lay.update(layout)
    document = {
        "name": "fp32 activations",
        "model": {"preset": model},
        "cluster": {"node": node, "gpus": gpus},
        "training": {"seq_len": 4096, "global_batch_seqs": 64, "precision": precision, "layout": lay},
    }
    report = solve(document, ranges=False)
    assert report["layout"]["microbatches"] > 1
    return dict(report["memory"])


def test_fp32_training_stores_four_byte_activations() -> None:
    """FP32 training keeps its activations in FP32: every 2-byte tensor of Korthikanti's count takes 4 bytes.

    The engine itself sends FP32 activations at 4 bytes an element (``exchanges.activation_element_bytes``) and
    stores FP32 weights and gradients at 4 bytes (``memory.weight_bytes_per_param``), but
    ``memory.activation_bytes_per_token_layer`` must count them at that size too. Llama 3 8B (no
    dropout masks, so every stored tensor is a 2-byte one in BF16) at TP 8 + SP, selective: 17,408 B per token and
    layer in BF16 (2.28 GB here), 34,816 B in FP32.
    """
    bf16 = _memory("llama3-8b", "dgx-a100-80gb", 64, "bf16", recompute="selective")
    fp32 = _memory("llama3-8b", "dgx-a100-80gb", 64, "fp32", recompute="selective")
    assert fp32["weights_bytes"] == pytest.approx(
        2.0 * bf16["weights_bytes"]
    )  # the model state already doubles
    assert fp32["activations_bytes"] == pytest.approx(2.0 * bf16["activations_bytes"], rel=1e-6)


def test_fp32_dropout_masks_stay_one_byte() -> None:
    """GPT-3 175B trains with dropout: Korthikanti's selective count at TP 8 + SP is 34 h/t bytes per token and
    layer in 16 bits (10 h replicated, two of them the 1-byte masks; 8 h attention; 16 h MLP); in FP32 every
    tensor but the masks doubles: (16 h + 2 h + 16 h + 32 h)/t = 66 h/t."""
    from solvers.inputs import resolve
    from solvers.memory import activation_bytes_per_token_layer

    model = resolve(
        {
            "model": {"preset": "gpt3-175b"},
            "cluster": {"node": "dgx-a100-80gb", "gpus": 8},
            "training": {"seq_len": 2048, "global_batch_seqs": 8, "layout": {"tp": 8}},
        }
    ).model
    assert model.dropout and not model.gated_mlp
    h = 12_288
    common: dict[str, Any] = {
        "model": model,
        "seq_len": 2048,
        "tp": 8,
        "expert_tp": 1,
        "sequence_parallel": True,
    }
    bf16 = activation_bytes_per_token_layer(**common, recompute=1, moe_layer=False)
    fp32 = activation_bytes_per_token_layer(**common, recompute=1, moe_layer=False, element_bytes=4.0)
    assert bf16 == 34 * h / 8
    assert fp32 == 66 * h / 8
