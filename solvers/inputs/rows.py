"""The field table's vocabulary: the limits of its numbers and the builders of its rows.

The rows are in ``solvers.inputs.fields`` (model, cluster, site, economics) and
``solvers.inputs.training_fields`` (training); both build them with the functions below.
"""

from __future__ import annotations

from typing import Any

from solvers.catalog import calibration
from solvers.inputs.table import Field

# ---- limits (inclusive). The API documents and reuses these; change them only with the CHANGELOG. ----------
MAX_GPUS = 1_048_576
MAX_GPUS_PER_NODE = 1_024
MAX_LAYERS = 1_000
MAX_HIDDEN = 1_000_000
MAX_FFN_HIDDEN = 10_000_000
MAX_HEADS = 100_000
MAX_VOCAB = 10_000_000
MAX_PARAMS = 1e15
MAX_EXPERTS = 100_000
# DeepSeek-V3 trains one module; Gloeckle et al. 2024 (arXiv:2404.19737) compare up to 8 predicted tokens.
MAX_MTP_LAYERS = 16
MAX_SEQ_LEN = 10_000_000
MAX_GLOBAL_BATCH_TOKENS = 1e11
MAX_TOTAL_TOKENS = 1e16
MAX_MICROBATCH_SEQS = 1_000_000
MAX_VIRTUAL_STAGES = MAX_LAYERS
MAX_PEAK_TFLOPS = 1e6
MAX_HBM_GB = 1e5
MAX_HBM_TB_S = 1e3
MAX_TDP_W = 1e5
MAX_UNIT_PRICE_USD = 1e8
MAX_EMBODIED_KGCO2E = 1e6
MAX_BANDWIDTH_GB_S = 1e5
MAX_LATENCY_US = 1e6
MAX_OVERSUBSCRIPTION = 1_000.0
MAX_MTTF_H = 1e9
MAX_COMPONENTS_PER_NODE = 10_000
MAX_OTHER_COMPONENTS = 1_000
MAX_RESTART_S = 1e7
MAX_STORAGE_GB_S = 1e7
MAX_HOST_W_PER_NODE = 1e6
MAX_GRID_GCO2_PER_KWH = 3_000.0
MIN_PUE = 1.0
MAX_PUE = 5.0
MAX_WUE_L_PER_KWH = 100.0
MAX_ELECTRICITY_USD_PER_KWH = 10.0
MAX_JOB_DAYS = 36_500.0
MAX_YEARS = 100.0
MAX_INFRA_MULTIPLIER = 100.0
MAX_MAINTENANCE_PER_YEAR = 10.0
MAX_CLOUD_USD_PER_GPU_HOUR = 10_000.0
MAX_CHECKPOINT_INTERVAL_H = 1e5
MAX_ZERO_STAGE = 3
# Lower limits of the quantities the step and the ledger divide by: a rate, a bandwidth, a time between
# failures or between checkpoints, a service life, an efficiency. A thousandth of the unit is below any real
# device, link, store, part or contract, and far enough from zero that no figure derived from it overflows to
# infinity (just above zero, 1e-300 TFLOP/s, the step or the ledger overflowed: a report of infinities, or an
# internal error instead of the field's name).
MIN_PEAK_TFLOPS = 1e-3
MIN_HBM_TB_S = 1e-3
MIN_BANDWIDTH_GB_S = 1e-3
MIN_STORAGE_GB_S = 1e-3
MIN_MTTF_H = 1e-3
MIN_EFFICIENCY = 1e-3
MIN_CHECKPOINT_INTERVAL_H = 1e-3
MIN_YEARS = 1e-3


def num(path: str, lo: float, hi: float, unit: str = "", *, excl: bool = False, **kw: Any) -> Field:
    return Field(path, "number", unit, lo, hi, excl, **kw)


def integer(path: str, lo: float, hi: float, unit: str = "", **kw: Any) -> Field:
    return Field(path, "integer", unit, lo, hi, **kw)


def obj(path: str, **kw: Any) -> Field:
    return Field(path, "object", nullable=True, **kw)


def flag(path: str, **kw: Any) -> Field:
    return Field(path, "bool", **kw)


def choice(path: str, choices: tuple[str, ...], default: str, source: str) -> Field:
    return Field(path, "choice", choices=choices, default=default, source=source)


def link(path: str) -> tuple[Field, ...]:
    return (
        obj(path, or_key="FABRICS"),
        Field(f"{path}.preset", "key", catalog="FABRICS", nullable=True),
        num(f"{path}.bandwidth_gb_s", MIN_BANDWIDTH_GB_S, MAX_BANDWIDTH_GB_S, "GB/s"),
        num(f"{path}.latency_us", 0, MAX_LATENCY_US, "us"),
        num(
            f"{path}.oversubscription",
            1,
            MAX_OVERSUBSCRIPTION,
            default=1.0,
            source="convention: non-blocking fabric (full bisection), 1.0",
        ),
    )


def layout_row(name: str, lo: float, hi: float, default: Any, source: str, unit: str = "") -> Field:
    return integer(f"training.layout.{name}", lo, hi, unit, default=default, source=source)


def overlap_row(dim: str) -> Field:
    """Default hidden share per exchange: the calibration's when it names one, else none hidden."""
    table = getattr(calibration, "DEFAULT_OVERLAP", None) or {}
    value, source = table.get(dim, (0.0, "CONTRACT.md v1: nothing is hidden unless the scenario says so"))
    return num(
        f"training.efficiency.overlap.{dim}", 0, 1, "fraction", default=float(value), source=str(source)
    )
