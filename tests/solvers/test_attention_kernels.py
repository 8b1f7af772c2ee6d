"""The ``attention_kernels`` effect: published kernel rates (FlashAttention-3 paper, Figures 5(d) and 6) and
the scenario field ``training.attention_kernel``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers.catalog.accelerators import ACCELERATORS
from solvers.catalog.attention_kernels import (
    ATTENTION_KERNELS,
    GENERATION_MS,
    REFERENCE_KERNEL,
    attention_kernel_ratio,
    generation_ratio,
    training_tflops,
)
from solvers.entry import solve
from solvers.errors import ScenarioError
from solvers.inputs.fields import TABLE

DOC: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 8},
    "training": {
        "seq_len": 8192,
        "global_batch_seqs": 128,
        "precision": "bf16",
        "layout": {"tp": 1, "pp": 1, "cp": 1, "microbatch_seqs": 1, "zero_stage": 3},
    },
}


def _step_s(cluster: dict[str, Any] | None = None, **training: Any) -> float:
    doc = copy.deepcopy(DOC)
    doc["training"].update(training)
    if cluster is not None:
        doc["cluster"] = cluster
    return float(solve(doc, ranges=False)["step"]["step_s"])


def test_the_ratios_follow_the_published_figures() -> None:
    assert REFERENCE_KERNEL == "flash2" and attention_kernel_ratio("flash2", "hopper") == 1.0
    assert training_tflops("flash2") == pytest.approx(3.5 / (1 / 333 + 2.5 / 318))
    assert attention_kernel_ratio("cudnn", "hopper") == pytest.approx(1.618, abs=1e-3)
    assert attention_kernel_ratio("flash3", "hopper") == pytest.approx(1.771, abs=1e-3)
    assert attention_kernel_ratio("cudnn", "blackwell") == attention_kernel_ratio("cudnn", "hopper")


def test_off_the_benchmarked_families_every_kernel_is_priced_as_flash_attention_2() -> None:
    assert attention_kernel_ratio("cudnn", "ampere") == 1.0
    assert attention_kernel_ratio("cudnn", None) == 1.0  # an AMD or a custom accelerator
    a100 = {"cluster": {"node": "dgx-a100-80gb", "gpus": 8}}
    assert _step_s(attention_kernel="cudnn", **a100) == _step_s(**a100)


def test_blackwell_ultra_runs_the_attention_core_at_its_measured_gain_over_gb200() -> None:
    """cuDNN's SDPA training benchmarks at 8k tokens (NVIDIA/cudnn-frontend at fb682ce): forward 1.397 and 1.185
    ms, backward 4.127 and 3.832 ms on GB200 and GB300. By catalog key or display name; 1 for every other."""
    assert generation_ratio("gb300") == pytest.approx((1.397 + 4.127) / (1.185 + 3.832))
    assert generation_ratio(str(ACCELERATORS["gb300"]["name"])) == generation_ratio("gb300")
    assert generation_ratio("gb200") == generation_ratio("h100-sxm") == generation_ratio("custom") == 1.0
    assert all(
        reference in ACCELERATORS and key in ACCELERATORS for key, (reference, *_) in GENERATION_MS.items()
    )
    # the same plan on GB300 and GB200 NVL72 nodes at one stated compute efficiency (each part's fitted one
    # differs: solvers.catalog.fitted.EFFICIENCY_FAMILY) differs in the attention core alone (same peaks and HBM rate)
    gb200: dict[str, Any] = {"cluster": {"node": "gb200-nvl72", "gpus": 72}, "global_batch_seqs": 144}
    gb300: dict[str, Any] = {"cluster": {"node": "gb300-nvl72", "gpus": 72}, "global_batch_seqs": 144}
    same: dict[str, Any] = {"efficiency": {"compute": 0.6}}
    assert _step_s(attention_kernel="cudnn", **gb300, **same) < _step_s(
        attention_kernel="cudnn", **gb200, **same
    )
    # scores materialised (no fused kernel) or the effect switched off: nothing to gain
    assert _step_s(fused_attention=False, **gb300, **same) == _step_s(fused_attention=False, **gb200, **same)
    off: dict[str, Any] = {"efficiency": {"compute": 0.6, "effects": {"attention_kernels": False}}}
    assert _step_s(**gb300, **off) == _step_s(**gb200, **off)


def test_flash_attention_3_is_refused_off_hopper() -> None:
    doc = copy.deepcopy(DOC)
    doc["cluster"] = {"node": "dgx-a100-80gb", "gpus": 8}
    doc["training"]["attention_kernel"] = "flash3"
    with pytest.raises(ScenarioError) as caught:
        solve(doc, ranges=False)
    assert [e.path for e in caught.value.errors] == ["training.attention_kernel"]
    assert "hopper" in caught.value.errors[0].message


def test_the_field_defaults_to_flash_attention_2() -> None:
    row = TABLE["training.attention_kernel"]
    assert row.default == "flash2" and tuple(row.choices) == ATTENTION_KERNELS


def test_a_faster_kernel_gives_a_shorter_step_and_the_default_is_flash2() -> None:
    default, flash2 = _step_s(), _step_s(attention_kernel="flash2")
    cudnn, flash3 = _step_s(attention_kernel="cudnn"), _step_s(attention_kernel="flash3")
    assert default == flash2
    assert flash3 < cudnn < flash2


def test_the_switch_off_or_unfused_scores_ignore_the_kernel() -> None:
    off: dict[str, Any] = {"efficiency": {"effects": {"attention_kernels": False}}}
    assert _step_s(attention_kernel="cudnn", **off) == _step_s(**off)
    assert _step_s(attention_kernel="cudnn", fused_attention=False) == _step_s(fused_attention=False)
