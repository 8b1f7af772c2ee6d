"""The ``attention_kernels`` effect: published kernel rates (FlashAttention-3 paper, Figures 5(d) and 6) and
the scenario field ``training.attention_kernel``."""

from __future__ import annotations

import copy

import pytest

from solvers.catalog.attention_kernels import (
    ATTENTION_KERNELS,
    REFERENCE_KERNEL,
    attention_kernel_ratio,
    training_tflops,
)
from solvers.entry import solve
from solvers.inputs.fields import TABLE

DOC = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 8},
    "training": {
        "seq_len": 8192,
        "global_batch_seqs": 128,
        "precision": "bf16",
        "layout": {"tp": 1, "pp": 1, "cp": 1, "microbatch_seqs": 1, "zero_stage": 3},
    },
}


def _step_s(**training: object) -> float:
    doc = copy.deepcopy(DOC)
    doc["training"].update(training)
    return float(solve(doc, ranges=False)["step"]["step_s"])


def test_the_ratios_follow_the_published_figures() -> None:
    assert REFERENCE_KERNEL == "flash2" and attention_kernel_ratio("flash2") == 1.0
    assert training_tflops("flash2") == pytest.approx(3.5 / (1 / 333 + 2.5 / 318))
    assert attention_kernel_ratio("cudnn") == pytest.approx(1.618, abs=1e-3)
    assert attention_kernel_ratio("flash3") == pytest.approx(1.771, abs=1e-3)


def test_the_field_defaults_to_flash_attention_2() -> None:
    row = TABLE["training.attention_kernel"]
    assert row.default == "flash2" and tuple(row.choices) == ATTENTION_KERNELS


def test_a_faster_kernel_gives_a_shorter_step_and_the_default_is_flash2() -> None:
    default, flash2 = _step_s(), _step_s(attention_kernel="flash2")
    cudnn, flash3 = _step_s(attention_kernel="cudnn"), _step_s(attention_kernel="flash3")
    assert default == flash2
    assert flash3 < cudnn < flash2


def test_the_switch_off_or_unfused_scores_ignore_the_kernel() -> None:
    off = {"efficiency": {"effects": {"attention_kernels": False}}}
    assert _step_s(attention_kernel="cudnn", **off) == _step_s(**off)
    assert _step_s(attention_kernel="cudnn", fused_attention=False) == _step_s(fused_attention=False)
