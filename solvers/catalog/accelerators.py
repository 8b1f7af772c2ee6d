"""Accelerator presets: dense peak by precision, HBM capacity and bandwidth, power, price, embodied carbon.

Peaks are *dense* tensor-core rates (no 2:4 sparsity), in 1e12 FLOP/s. ``hbm_gb`` is 1e9 bytes, ``hbm_tb_s``
is 1e12 bytes/s. The data sheets' "80 GB" is binary (an H100 80GB holds 80 GiB, of which NVML reports 81,559 MiB,
85.5e9 bytes); read as 1e9 bytes it leaves about 7% of the memory to what the count does not hold (the CUDA
context, communication buffers, the caching allocator's fragmentation: docs/CONVENTIONS.md "Memory per GPU"). Each entry carries ``sources``: one citation per field. ``compute_efficiency`` (the share of
dense peak that large training GEMMs reach) is not stored here: it is the one default calibration in
``solvers.catalog.calibration`` and is merged in by ``accelerator_entry``.

Prices are list or widely reported street prices per accelerator (not per node) and are estimates; embodied
carbon per accelerator is an estimate from the life-cycle assessments cited, since vendors publish few
per-GPU figures. Both are overridable per scenario (``cluster.accelerator: {preset: ..., unit_price_usd: ...}``).
"""

from __future__ import annotations

from typing import Any

_A100_DS = "NVIDIA A100 Tensor Core GPU data sheet (2021), SXM column, dense"
_H100_DS = "NVIDIA H100 Tensor Core GPU data sheet (2023), H100 SXM column, dense (sparse figures / 2)"
_H200_DS = "NVIDIA H200 Tensor Core GPU data sheet (2024), H200 SXM column, dense (sparse figures / 2)"
_B200_DS = "NVIDIA DGX B200 data sheet (2024): system figures / 8 GPUs, dense (sparse figures / 2)"
_GB200_DS = "NVIDIA GB200 NVL72 data sheet (2024): rack figures / 72 GPUs, dense (sparse figures / 2)"
_GB300_DS = "NVIDIA GB300 NVL72 data sheet (2025): rack figures / 72 GPUs, dense (sparse figures / 2)"
_MI300X_DS = "AMD Instinct MI300X data sheet (2023), dense (without structured sparsity)"
_BLOOM_LCA = (
    "Luccioni, Viguier, Ligozat, 'Estimating the Carbon Footprint of BLOOM' (JMLR 2023) §4.1: "
    "150 kgCO2e embodied per A100 GPU"
)
_EMBODIED_SCALED = (
    "estimate: the BLOOM LCA's 150 kgCO2e per A100 (Luccioni et al. 2023 §4.1) scaled by HBM capacity and "
    "die area of this part; no vendor per-GPU figure published"
)

ACCELERATORS: dict[str, dict[str, Any]] = {
    "a100-sxm-40gb": {
        "name": "NVIDIA A100 SXM4 40GB",
        "peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
        "hbm_gb": 40.0,
        "hbm_tb_s": 1.555,
        "tdp_w": 400.0,
        "unit_price_usd": 10_000.0,
        "embodied_kgco2e": 150.0,
        "sources": {
            "peak_tflops": f"{_A100_DS}: BF16/FP16 tensor 312 TFLOPS, FP32 19.5 TFLOPS (no FP8 unit)",
            "hbm_gb": f"{_A100_DS}: 40 GB HBM2",
            "hbm_tb_s": f"{_A100_DS}: 1,555 GB/s",
            "tdp_w": f"{_A100_DS}: max TDP 400 W",
            "unit_price_usd": "estimate: reported A100 40GB SXM street price at launch (2020), ~USD 10,000",
            "embodied_kgco2e": _BLOOM_LCA,
        },
    },
    "a100-sxm-80gb": {
        "name": "NVIDIA A100 SXM4 80GB",
        "peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
        "hbm_gb": 80.0,
        "hbm_tb_s": 2.039,
        "tdp_w": 400.0,
        "unit_price_usd": 15_000.0,
        "embodied_kgco2e": 150.0,
        "sources": {
            "peak_tflops": f"{_A100_DS}: BF16/FP16 tensor 312 TFLOPS, FP32 19.5 TFLOPS (no FP8 unit)",
            "hbm_gb": f"{_A100_DS}: 80 GB HBM2e",
            "hbm_tb_s": f"{_A100_DS}: 2,039 GB/s",
            "tdp_w": f"{_A100_DS}: max TDP 400 W",
            "unit_price_usd": "estimate: reported A100 80GB SXM street price (2021-2022), ~USD 15,000",
            "embodied_kgco2e": _BLOOM_LCA + " (the LCA's GPUs were A100 80GB)",
        },
    },
    "h100-sxm": {
        "name": "NVIDIA H100 SXM5 80GB",
        "peak_tflops": {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 66.9},
        "hbm_gb": 80.0,
        "hbm_tb_s": 3.35,
        "tdp_w": 700.0,
        "unit_price_usd": 25_000.0,
        "embodied_kgco2e": 165.0,
        "sources": {
            "peak_tflops": f"{_H100_DS}: BF16 1,979/2, FP8 3,958/2, FP32 67 TFLOPS",
            "hbm_gb": f"{_H100_DS}: 80 GB HBM3",
            "hbm_tb_s": f"{_H100_DS}: 3.35 TB/s",
            "tdp_w": f"{_H100_DS}: max TDP up to 700 W",
            "unit_price_usd": "USD 25,000 per H100, seed 000 §5 (mlsysim EconomicsModel)",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "h800-sxm": {
        "name": "NVIDIA H800 SXM5 80GB",
        "peak_tflops": {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 66.9},
        "hbm_gb": 80.0,
        "hbm_tb_s": 3.35,
        "tdp_w": 700.0,
        "unit_price_usd": 30_000.0,
        "embodied_kgco2e": 165.0,
        "sources": {
            "peak_tflops": "DeepSeek-V3 technical report (2024) §3.1 and ISCA'25 §2: H800 keeps H100 SXM "
            "compute (989 TFLOPS BF16 dense) with NVLink cut to 400 GB/s",
            "hbm_gb": "NVIDIA H800 SXM5 product brief: 80 GB HBM3",
            "hbm_tb_s": "NVIDIA H800 SXM5 product brief: 3.35 TB/s",
            "tdp_w": "NVIDIA H800 SXM5 product brief: up to 700 W",
            "unit_price_usd": "estimate: reported H800 prices in China (2023), ~USD 30,000",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "h200-sxm": {
        "name": "NVIDIA H200 SXM 141GB",
        "peak_tflops": {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "fp32": 66.9},
        "hbm_gb": 141.0,
        "hbm_tb_s": 4.8,
        "tdp_w": 700.0,
        "unit_price_usd": 32_000.0,
        "embodied_kgco2e": 190.0,
        "sources": {
            "peak_tflops": f"{_H200_DS}: BF16 1,979/2, FP8 3,958/2, FP32 67 TFLOPS",
            "hbm_gb": f"{_H200_DS}: 141 GB HBM3e",
            "hbm_tb_s": f"{_H200_DS}: 4.8 TB/s",
            "tdp_w": f"{_H200_DS}: max TDP up to 700 W",
            "unit_price_usd": "estimate: reported H200 SXM prices (2024), USD 30,000-35,000",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "b200": {
        "name": "NVIDIA B200 (HGX/DGX B200)",
        "peak_tflops": {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "fp32": 75.0},
        "hbm_gb": 180.0,
        "hbm_tb_s": 7.7,
        "tdp_w": 1000.0,
        "unit_price_usd": 40_000.0,
        "embodied_kgco2e": 240.0,
        "sources": {
            "peak_tflops": f"{_B200_DS}: FP8 72 PFLOPS training / 8 / 2 = 4.5 PFLOPS; BF16 half of FP8; "
            "FP32 75 TFLOPS (HGX B200 spec)",
            "hbm_gb": f"{_B200_DS}: 1,440 GB / 8 = 180 GB HBM3e",
            "hbm_tb_s": "NVIDIA HGX B200 spec (2024): 62 TB/s per 8 GPUs, 7.7 TB/s per GPU",
            "tdp_w": "NVIDIA HGX B200 spec (2024): up to 1,000 W per GPU",
            "unit_price_usd": "estimate: USD 30,000-40,000 per B200 quoted by NVIDIA's CEO (CNBC, March 2024)",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "gb200": {
        "name": "NVIDIA GB200 (Blackwell GPU in a GB200 NVL72 rack)",
        "peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "fp32": 80.0},
        "hbm_gb": 186.0,
        "hbm_tb_s": 8.0,
        "tdp_w": 1200.0,
        "unit_price_usd": 50_000.0,
        "embodied_kgco2e": 260.0,
        "sources": {
            "peak_tflops": f"{_GB200_DS}: FP8 720 PFLOPS / 72 / 2 = 5 PFLOPS; FP16/BF16 360 PFLOPS / 72 / 2 "
            "= 2.5 PFLOPS; FP32 5,760 TFLOPS / 72 = 80 TFLOPS",
            "hbm_gb": f"{_GB200_DS}: 13.4 TB HBM3e / 72 = 186 GB",
            "hbm_tb_s": f"{_GB200_DS}: 576 TB/s / 72 = 8 TB/s",
            "tdp_w": "estimate: GB200 superchip (2 GPUs + 1 Grace) configurable up to 2,700 W; ~1,200 W "
            "per GPU after the CPU's share",
            "unit_price_usd": "estimate: GB200 NVL72 racks reported at ~USD 3-3.9M (2024-2025), per GPU "
            "share of ~USD 50,000 including the Grace CPU",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "gb300": {
        "name": "NVIDIA GB300 (Blackwell Ultra GPU in a GB300 NVL72 rack)",
        "peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "fp32": 80.0},
        "hbm_gb": 288.0,
        "hbm_tb_s": 8.0,
        "tdp_w": 1400.0,
        "unit_price_usd": 55_000.0,
        "embodied_kgco2e": 300.0,
        # What a report on this part should say it does not know: printed as a warning of every report whose
        # accelerator is this preset at its own rates (solvers.inputs.cluster).
        "caveat": "GB300 is priced at GB200's data-sheet FP8 and BF16 rates (its data sheet gives no higher "
        "ones) with its own fitted efficiency (calibration family blackwell_ultra, from the corpus's GB300 runs) "
        "and its attention core 1.10x GB200's (cuDNN's SDPA training benchmarks at 8k tokens, "
        "solvers.catalog.attention_kernels). NVIDIA's tables run it 1.04-1.22x as fast as GB200 on one layout "
        "and 1.65x on MLPerf v6.0's DeepSeek-V3, whose layouts differ, and no published run says which part of its "
        "speed is the chip's; the fitted efficiency runs it faster against GB200 than those same-layout tables do, "
        "so a dense GB300 step may be optimistic, a latency-bound one the most (MLPerf v5.1's Llama 3.1 8B on 512 "
        "GPUs: 1.04x published) (docs/CONVENTIONS.md, Calibration)",
        "sources": {
            "peak_tflops": f"{_GB300_DS}: FP8/FP6 720 PFLOPS / 72 / 2 = 5 PFLOPS; FP16/BF16 360 PFLOPS / 72 / 2 "
            "= 2.5 PFLOPS (the GB200 NVL72's training rates: Blackwell Ultra raises the FP4 rate and the "
            "attention exponentials, not FP8 or BF16); FP32 taken as GB200's 80 TFLOPS",
            "hbm_gb": f"{_GB300_DS}: 288 GB HBM3e per Blackwell Ultra GPU (12-high stacks)",
            "hbm_tb_s": f"{_GB300_DS}: 576 TB/s / 72 = 8 TB/s",
            "tdp_w": "estimate: 1,400 W per Blackwell Ultra GPU in the GB300 NVL72 (200 W above GB200's)",
            "unit_price_usd": "estimate: GB300 NVL72 racks reported at ~USD 3.5-4M (2025-2026), per GPU share "
            "of ~USD 55,000 including the Grace CPU",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
    "mi300x": {
        "name": "AMD Instinct MI300X OAM",
        "peak_tflops": {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "fp32": 163.4},
        "hbm_gb": 192.0,
        "hbm_tb_s": 5.3,
        "tdp_w": 750.0,
        "unit_price_usd": 15_000.0,
        "embodied_kgco2e": 230.0,
        "sources": {
            "peak_tflops": f"{_MI300X_DS}: BF16/FP16 1,307.4, FP8 2,614.9, FP32 matrix 163.4 TFLOPS",
            "hbm_gb": f"{_MI300X_DS}: 192 GB HBM3",
            "hbm_tb_s": f"{_MI300X_DS}: 5.3 TB/s",
            "tdp_w": f"{_MI300X_DS}: 750 W peak board power",
            "unit_price_usd": "estimate: reported MI300X prices to hyperscalers (2024), USD 10,000-15,000",
            "embodied_kgco2e": _EMBODIED_SCALED,
        },
    },
}

KEY_BY_NAME: dict[str, str] = {str(spec["name"]): key for key, spec in ACCELERATORS.items()}
"""Catalog key by display name (what a resolved ``AcceleratorSpec`` carries)."""


def catalog_key(accelerator: str) -> str:
    """The catalog key of a catalog key or display name; the string itself for any other accelerator.

    Example: ``catalog_key("gb300")`` and ``catalog_key(ACCELERATORS["gb300"]["name"])`` -> "gb300"."""
    return KEY_BY_NAME.get(accelerator, accelerator)
