"""Predicted vs published figures for published training runs (``python -m solvers validate``).

Each case is a scenario file in ``examples/`` solved with the one default calibration of
``solvers.catalog.calibration`` (no per-run tuning) and compared with the figure its paper reports:

* MFU-like figures are compared in percentage points: ``mfu`` (model FLOPs, PaLM convention, against the
  peak at the training precision), ``mfu_bf16`` (against the BF16 peak, DeepSeek-V3's basis) and ``hfu``
  (recomputation counted, which is what Megatron-LM SC'21, BLOOM and OPT report as TFLOP/s per GPU).
* Times are compared in percent of the published value.

Overlap convention for every case: an exchange the paper says its system overlaps with compute is given a
hidden share of 0.9; an exchange it does not describe as overlapped gets 0. That is a statement about the
software, written in each scenario file, not a fit to the published figure.

Attention convention: ``training.fused_attention`` keeps its default (true, FlashAttention-style kernels)
for runs from 2023 on (Llama 3, DeepSeek-V3, MegaScale, which adopts FlashAttention-2 in its §3.3); runs that
predate FlashAttention or did not use it (Megatron-LM SC'21, BLOOM, OPT, and, by assumption, MegaScale's
Megatron-LM baseline) set it to false in their files. Schedules, virtual stages and recompute policies are
the papers' own where they state them; each file names the ones that are assumed or derived.

The ledger's own published comparisons (``solvers.ledger_validation.ledger_validation_rows``) are appended
when that module is present.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"

_MEGASCALE = "Jiang et al., MegaScale (NSDI'24), Table 2"
_LLAMA3 = "Dubey et al., The Llama 3 Herd of Models (2024), Table 4"
_DSV3 = "DeepSeek-V3 ISCA'25 Table 4 (measured)"
_SC21 = "Narayanan et al., Megatron-LM SC'21, Table 1 (TFLOP/s per GPU incl. recompute / 312)"


@dataclass(frozen=True)
class Case:
    case: str
    example: str  # file name in examples/
    metric: str  # "mfu" | "mfu_bf16" | "hfu" | "step_s" | "bubble_s"
    published: float  # fraction for MFU-like metrics, seconds for times
    source: str


_MFU_METRICS = ("mfu", "mfu_bf16", "hfu")

CASES: tuple[Case, ...] = (
    Case(
        "MegaScale 175B, 256 A100, Megatron-LM", "megascale-175b-256-megatron.yaml", "mfu", 0.530, _MEGASCALE
    ),
    Case("MegaScale 175B, 256 A100, MegaScale", "megascale-175b-256.yaml", "mfu", 0.653, _MEGASCALE),
    Case(
        "MegaScale 175B, 12,288 A100, Megatron-LM",
        "megascale-175b-12288-megatron.yaml",
        "mfu",
        0.412,
        _MEGASCALE,
    ),
    Case("MegaScale 175B, 12,288 A100, MegaScale", "megascale-175b-12288.yaml", "mfu", 0.552, _MEGASCALE),
    Case("Llama 3 405B, 8,192 H100, 8K", "llama3-405b-8192.yaml", "mfu", 0.43, _LLAMA3),
    Case("Llama 3 405B, 16,384 H100, 8K", "llama3-405b-16384.yaml", "mfu", 0.41, _LLAMA3),
    Case("Llama 3 405B, 16,384 H100, 131K", "llama3-405b-16384-131k.yaml", "mfu", 0.38, _LLAMA3),
    Case("DeepSeek-V3, 2,048 H800", "deepseek-v3-2048xh800.yaml", "mfu_bf16", 0.4373, _DSV3),
    Case("DeepSeek-V3, 2,048 H800", "deepseek-v3-2048xh800.yaml", "step_s", 19.926, _DSV3),
    Case("DeepSeek-V3, 2,048 H800", "deepseek-v3-2048xh800.yaml", "bubble_s", 2.06, _DSV3),
    Case("Megatron-LM SC'21 1.7B, 32 A100", "megatron-sc21-1.7b.yaml", "hfu", 0.44, _SC21),
    Case("Megatron-LM SC'21 3.6B, 64 A100", "megatron-sc21-3.6b.yaml", "hfu", 0.44, _SC21),
    Case("Megatron-LM SC'21 7.5B, 128 A100", "megatron-sc21-7.5b.yaml", "hfu", 0.46, _SC21),
    Case("Megatron-LM SC'21 18.4B, 256 A100", "megatron-sc21-18.4b.yaml", "hfu", 0.43, _SC21),
    Case("Megatron-LM SC'21 39.1B, 512 A100", "megatron-sc21-39.1b.yaml", "hfu", 0.44, _SC21),
    Case("Megatron-LM SC'21 76.1B, 1,024 A100", "megatron-sc21-76.1b.yaml", "hfu", 0.45, _SC21),
    Case("Megatron-LM SC'21 145.6B, 1,536 A100", "megatron-sc21-145.6b.yaml", "hfu", 0.47, _SC21),
    Case("Megatron-LM SC'21 310.1B, 1,920 A100", "megatron-sc21-310.1b.yaml", "hfu", 0.50, _SC21),
    Case("Megatron-LM SC'21 529.6B, 2,520 A100", "megatron-sc21-529.6b.yaml", "hfu", 0.52, _SC21),
    Case("Megatron-LM SC'21 1T, 3,072 A100", "megatron-sc21-1008b.yaml", "hfu", 0.52, _SC21),
    Case(
        "BLOOM 176B, 384 A100",
        "bloom-176b-384xa100.yaml",
        "hfu",
        156.0 / 312.0,
        "BigScience, BLOOM (2022) §3.5: 156 TFLOP/s per A100 with activation checkpointing",
    ),
    Case(
        "OPT-175B, 992 A100",
        "opt-175b-992xa100.yaml",
        "hfu",
        147.0 / 312.0,
        "Zhang et al., OPT (2022) §2.4: up to 147 TFLOP/s per A100",
    ),
)


def load_example(name: str) -> Any:
    """A scenario document from ``examples/`` (YAML)."""
    from solvers.cli import load_yaml

    return load_yaml((EXAMPLES_DIR / name).read_text(encoding="utf-8"))


def _predicted(report: dict[str, Any], metric: str) -> float:
    return float(report["step"][metric])


def validation_rows() -> list[dict[str, Any]]:
    """One row per case: predicted, published, error (points for MFU-like metrics, % for times)."""
    from solvers.entry import solve

    reports: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for case in CASES:
        if case.example not in reports:
            reports[case.example] = cast(dict[str, Any], solve(load_example(case.example)))
        predicted = _predicted(reports[case.example], case.metric)
        if case.metric in _MFU_METRICS:
            unit, error, error_unit = "fraction", (predicted - case.published) * 100.0, "points"
        else:
            unit = "s"
            error, error_unit = (predicted - case.published) / case.published * 100.0, "%"
        rows.append(
            {
                "case": case.case,
                "metric": case.metric,
                "predicted": predicted,
                "published": case.published,
                "unit": unit,
                "error": error,
                "error_unit": error_unit,
                "example": f"examples/{case.example}",
                "source": case.source,
            }
        )
    return rows


def _ledger_rows() -> list[dict[str, Any]]:
    try:
        from solvers.ledger_validation import ledger_validation_rows
    except ImportError:
        return []
    return [dict(row) for row in ledger_validation_rows()]


def validation_document() -> dict[str, Any]:
    """``{"rows", "summary", "ledger_rows"}``; the summary covers the MFU-like rows (in points)."""
    rows = validation_rows()
    errors = [abs(r["error"]) for r in rows if r["metric"] in _MFU_METRICS]
    summary = {
        "mfu_rows": len(errors),
        "mean_abs_error_points": statistics.fmean(errors) if errors else 0.0,
        "max_abs_error_points": max(errors) if errors else 0.0,
        "within_10_points": sum(1 for e in errors if e <= 10.0),
    }
    return {"rows": rows, "summary": summary, "ledger_rows": _ledger_rows()}


def _fmt_value(value: Any, unit: str) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if unit == "fraction":
            return f"{value * 100:.1f}%"
        return f"{value:,.4g}"
    return str(value)


def format_table(document: dict[str, Any]) -> str:
    """The validation document as a plain-text table."""
    lines = [
        f"{'case':<44} {'metric':<9} {'predicted':>10} {'published':>10} {'error':>12}",
        "-" * 89,
    ]
    for r in document["rows"]:
        err = f"{r['error']:+.1f} {'pts' if r['error_unit'] == 'points' else '%'}"
        lines.append(
            f"{r['case']:<44} {r['metric']:<9} {_fmt_value(r['predicted'], r['unit']):>10} "
            f"{_fmt_value(r['published'], r['unit']):>10} {err:>12}"
        )
    s = document["summary"]
    lines.append("-" * 89)
    lines.append(
        f"MFU-like rows: {s['mfu_rows']}, mean |error| {s['mean_abs_error_points']:.2f} points, "
        f"max {s['max_abs_error_points']:.2f} points, within 10 points: {s['within_10_points']}/{s['mfu_rows']}"
    )
    if document["ledger_rows"]:
        lines.append("")
        lines.append("reliability and schedule (solvers.ledger_validation)")
        lines.append("-" * 89)
        for r in document["ledger_rows"]:
            lines.append(f"{r.get('case', '')}: {r.get('metric', '')}")
            lines.append(
                f"    predicted {_fmt_value(r.get('predicted'), '')} vs published "
                f"{_fmt_value(r.get('published'), '')} {r.get('unit', '')}"
            )
    return "\n".join(lines)
