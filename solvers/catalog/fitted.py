"""The fitted calibration of the step effects: read from ``fitted_calibration.json``, written by the fit.

``python -m solvers fit`` (``solvers.fit``) fits these constants to the validation corpus (``corpus/``, or the
built-in published cases of ``solvers.published`` while it is empty) and records the corpus hash, the date and
the bounds of each constant in the file; nothing here is set by hand. The constants apply only when the step
effects are on (``training.efficiency.effects``); with every effect off the engine uses the hand calibration
of ``solvers.catalog.calibration`` unchanged.

``compute_efficiency`` by family is the large-GEMM plateau (the share of the dense peak a GEMM reaches once the
matrix-shape, straggler, MoE and pipeline-end losses are modelled), so it is higher than the hand calibration,
which absorbs those losses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from solvers.catalog.accelerators import catalog_key

FITTED_FILE = Path(__file__).resolve().parent / "fitted_calibration.json"

FAMILY: dict[str, str] = {
    "a100-sxm-40gb": "ampere",
    "a100-sxm-80gb": "ampere",
    "h100-sxm": "hopper",
    "h800-sxm": "hopper",
    "h200-sxm": "hopper",
    "b200": "blackwell",
    "gb200": "blackwell",
    "gb300": "blackwell",
}
"""Accelerator -> architecture: what the attention kernels' benchmarks (``solvers.catalog.attention_kernels``) and
the search's envelope (``solvers.search.envelope``) go by."""

EFFICIENCY_FAMILY: dict[str, str] = {
    **FAMILY,
    # Blackwell Ultra: GB200's data-sheet FP8 and BF16 rates, but its own fitted efficiency. NVIDIA's same-release
    # tables run it 1.04-1.22 times as fast as GB200 on one layout (Megatron-Bridge 25.11, MLPerf v5.1) and 1.65
    # times on MLPerf v6.0's DeepSeek-V3, whose layouts differ only in TP and recompute; one Blackwell figure for
    # both biased each (docs/CONVENTIONS.md "Calibration": GB300).
    "gb300": "blackwell_ultra",
}
"""Accelerator -> calibration family, one fitted large-GEMM efficiency each: its architecture, except a part whose
published runs set it apart (a family without a fitted figure takes Hopper's)."""

FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(EFFICIENCY_FAMILY.values()))
"""The calibration families, in the table's order (each has one fitted large-GEMM efficiency)."""


CONSTANT_UNITS: dict[str, str] = {
    "shape_half_dim": "rows",
    "jitter": "fraction",
    "moe_skew": "fraction",
    "fp8_rate_factor": "fraction",
    "attention_rate_factor": "ratio",
    "expert_kernel_s": "s",
    "expert_kernel_padded_share": "fraction",
}
"""The effects' fitted constants and their units: the one list of them (the fit, the training parser and the
reports' assumption entries go by it; each is a field of ``solvers.specs.EffectsSpec``, whose default is its
neutral value)."""

CONSTANTS: tuple[str, ...] = tuple(CONSTANT_UNITS)


def _load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FITTED_FILE.read_text(encoding="utf-8"))
    return data


FITTED: dict[str, Any] = _load()
"""The file's content: ``constants``, ``compute_efficiency`` by family, ``bounds``, ``corpus_sha256``, ``date``."""

FITTED_SOURCE = (
    f"fitted by `python -m solvers fit` to the validation corpus (sha256 {str(FITTED.get('corpus_sha256', ''))[:12]}, "
    f"{FITTED.get('date', '')}); solvers/catalog/fitted_calibration.json"
)


def fitted_constant(name: str) -> float:
    """One fitted effect constant (``shape_half_dim``, ``jitter``, ``moe_skew``, ``fp8_rate_factor``)."""
    return float(FITTED["constants"][name])


def family_of(accelerator: str) -> str | None:
    """The architecture of a catalog key or display name; None for any other accelerator."""
    return FAMILY.get(catalog_key(accelerator))


def efficiency_family_of(accelerator: str) -> str | None:
    """The calibration family of a catalog key or display name; None for any other accelerator.
    Example: "gb300" -> "blackwell_ultra", "gb200" -> "blackwell"."""
    return EFFICIENCY_FAMILY.get(catalog_key(accelerator))


def family_efficiency(family: str) -> float:
    """The fitted large-GEMM efficiency of a calibration family; a family without a fitted figure takes Hopper's.
    Example: "blackwell_ultra" -> the written calibration's figure for GB300."""
    table = FITTED["compute_efficiency"]
    return float(table.get(family, table["hopper"]))
