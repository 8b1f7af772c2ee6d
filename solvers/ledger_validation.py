"""The ledger against a published run: Llama 3 405B on 16,384 H100 (Dubey et al., "The Llama 3 Herd of
Models", arXiv:2407.21783, 2024).

Published (§3.3.4 and Table 5): over a 54-day snapshot of pre-training, 466 job interruptions, 47 planned
and 419 unexpected; about 78% of the unexpected ones were confirmed or suspected hardware issues; GPU issues
were the largest category at 58.7%; "higher than 90% effective training time". Cluster (§3.3.1, Table 4):
16,384 H100 SXM at 700 W, 8 per server, 16M-token batches at about 400 TFLOPs/GPU (BF16 MFU 41%).

The ledger runs on its literature defaults (``solvers.ledger_defaults``: mlsysim's 50,000 / 150,000 /
100,000 h GPU / NIC / PSU MTTFs, 300 s restart, 7 GB/s per writer under a 500 GB/s cap): nothing here is
tuned to the published figures, so the rows show the model's real gap.
"""

from __future__ import annotations

from typing import Any

from solvers.ledger import compute_ledger, ledger_inputs_with_defaults
from solvers.ledger_defaults import DEFAULTS

LLAMA3_SOURCE = "Dubey et al., The Llama 3 Herd of Models (arXiv:2407.21783, 2024)"
LLAMA3_CASE = "llama3-405b / 16,384 H100 / 54-day snapshot"

_GPUS = 16_384
_DAYS = 54.0
_TOKENS_PER_STEP = 16 * 1024 * 1024  # Table 4: 16M tokens per batch at 8,192-token sequences
# Step time from the published throughput, not from the step engine: model FLOPs per token under the PaLM
# convention (6 N + 12 layers x hidden x seq) at the reported 400 TFLOPs per GPU (Table 4).
_FLOPS_PER_TOKEN = 6 * 405e9 + 12 * 126 * 16_384 * 8_192
_STEP_S = _TOKENS_PER_STEP * _FLOPS_PER_TOKEN / (_GPUS * 400e12)


def _llama3_ledger(mtbf_convention: str) -> Any:
    inputs = ledger_inputs_with_defaults(
        step_s=_STEP_S,
        gpu_busy_fraction=0.9,
        tokens_per_step=float(_TOKENS_PER_STEP),
        gpus=_GPUS,
        gpus_per_node=8,
        accelerator_tdp_w=700.0,
        accelerator_unit_price_usd=25_000.0,
        accelerator_embodied_kgco2e=150.0,
        params=405e9,
        optimizer="adam",
        precision="bf16",
        total_tokens=None,
        job_days=_DAYS,
        mtbf_convention=mtbf_convention,
    )
    return compute_ledger(inputs)


def ledger_validation_rows() -> list[dict[str, Any]]:
    """Predicted vs published failure and goodput figures for Llama 3 405B.

    Rows: unexpected interruptions in 54 days (node_series default and the gpu_only convention), the
    interruptions the model attributes to GPUs, the implied cluster MTBF, and goodput against ">90%
    effective training time" (a lower bound, so ``published`` is 0.90).
    Example: node_series predicts 1,296 h / 2.09 h = 619 unexpected interruptions against 419 published.
    """
    series = _llama3_ledger("node_series")
    gpu_only = _llama3_ledger("gpu_only")
    wall_h = _DAYS * 24.0
    gpu_rate = 8 / float(DEFAULTS["cluster.reliability.gpu_mttf_h"].value)  # type: ignore[arg-type]
    node_rate = (
        gpu_rate
        + 8 / float(DEFAULTS["cluster.reliability.nic_mttf_h"].value)  # type: ignore[arg-type]
        + int(DEFAULTS["cluster.reliability.psus_per_node"].value)  # type: ignore[call-overload]
        / float(DEFAULTS["cluster.reliability.psu_mttf_h"].value)  # type: ignore[arg-type]
    )
    gpu_share = gpu_rate / node_rate
    return [
        {
            "case": LLAMA3_CASE,
            "metric": "unexpected interruptions (node_series MTBF, default MTTFs)",
            "predicted": float(series.reliability["expected_failures"]),
            "published": 419.0,
            "unit": "count",
            "source": f"{LLAMA3_SOURCE} §3.3.4: 419 unexpected of 466 interruptions in 54 days; the ledger "
            "models hardware failures only, while about 78% of the 419 were hardware (54 were software bugs, "
            "Table 5); the default MTTFs predict 1.5x the published count and 1.9x its hardware share",
        },
        {
            "case": LLAMA3_CASE,
            "metric": "unexpected interruptions (gpu_only MTTF/N convention)",
            "predicted": float(gpu_only.reliability["expected_failures"]),
            "published": 419.0,
            "unit": "count",
            "source": f"{LLAMA3_SOURCE} §3.3.4; the convention counts GPUs only, while 41% of the published "
            "interruptions were not GPU issues: agreement here is not evidence for the convention",
        },
        {
            "case": LLAMA3_CASE,
            "metric": "GPU interruptions (node_series, GPU share of the failure rate)",
            "predicted": float(series.reliability["expected_failures"]) * gpu_share,
            "published": round(419 * 0.587, 1),
            "unit": "count",
            "source": f"{LLAMA3_SOURCE} §3.3.4, Table 5: GPU issues 58.7% of unexpected interruptions",
        },
        {
            "case": LLAMA3_CASE,
            "metric": "cluster MTBF (node_series)",
            "predicted": float(series.reliability["cluster_mtbf_h"]),
            "published": round(wall_h / 419.0, 3),
            "unit": "h",
            "source": f"{LLAMA3_SOURCE} §3.3.4: 54 days x 24 h / 419 unexpected interruptions",
        },
        {
            "case": LLAMA3_CASE,
            "metric": "goodput (expected_loss ledger, Daly interval, one writer per node)",
            "predicted": float(series.reliability["goodput"]),
            "published": 0.90,
            "unit": "fraction",
            "source": f"{LLAMA3_SOURCE} §3.3.4: 'higher than 90% effective training time' (a lower bound)",
        },
    ]
