"""How far the step model's time is from published runs, by class of run: the step part of a report's ranges.

The file ``solvers/catalog/step_uncertainty.json`` holds, per class, the mean and standard deviation of the
residual r = ln(actual step_s / predicted step_s) over published runs::

    {"generated_by": "...", "convention": "...", "held_out": false,
     "classes": {"dense/small": {"n": 12, "mean": -0.02, "sigma": 0.05}, ...,
                 "moe/large": {"n": 0, "mean": ..., "sigma": ..., "pooled_from": ["dense/small", ...]}}}

Classes: dense or mixture-of-experts, and small (at most ``SMALL_MAX_GPUS`` GPUs) or large. ``n`` is the
number of the class's own runs; a class with fewer than ``MIN_RUNS`` takes its mean and sigma from the pool
named in ``pooled_from`` (the same kind first, then every run).

A run whose paper gives an MFU-like figure has r = ln(predicted / published) (the step is inversely
proportional to MFU at fixed FLOPs per step); one that gives a step time has r = ln(published / predicted).
One residual per run: its step time where published, else its first MFU-like figure.

``python -m solvers fit`` writes the file with ``fit`` from the held-out residuals of leave-one-source-out
cross-validation over the corpus (``solvers.validation.fit_documents``), and says so with ``held_out: true``;
residuals fitted in sample would understate the error on a new run, and the flag tells a reader which it is.
It also lists, under ``outside_target``, the runs whose held-out MFU error exceeds the validation target (8
points): the validated envelope leaves them out (``solvers.envelope``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CLASSES",
    "MIN_RUNS",
    "PATH",
    "SMALL_MAX_GPUS",
    "fit",
    "read",
    "read_held_out",
    "read_outside_target",
    "step_class",
]

PATH = Path(__file__).resolve().parent / "catalog" / "step_uncertainty.json"
CLASSES: tuple[str, ...] = ("dense/small", "dense/large", "moe/small", "moe/large")
# The size boundary of the classes: the largest GPU count of the "small" runs (issue 13's convention).
SMALL_MAX_GPUS = 2_048
# Fewer runs than this give no usable standard deviation of their own: the class is pooled.
MIN_RUNS = 5

_MFU_METRICS = ("mfu", "mfu_bf16", "hfu")


def step_class(*, moe: bool, gpus: int) -> str:
    """The class of a run: ``step_class(moe=False, gpus=16_384)`` is ``"dense/large"``."""
    return f"{'moe' if moe else 'dense'}/{'small' if gpus <= SMALL_MAX_GPUS else 'large'}"


def read(path: Path = PATH) -> dict[str, tuple[float, float]]:
    """(mean, sigma) of every class from the file; a missing class or a negative sigma is an error."""
    document = json.loads(path.read_text(encoding="utf-8"))
    classes = document["classes"]
    out: dict[str, tuple[float, float]] = {}
    for name in CLASSES:
        mean, sigma = float(classes[name]["mean"]), float(classes[name]["sigma"])
        if not (math.isfinite(mean) and math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"{path}: class {name} needs a finite mean and a sigma >= 0")
        out[name] = (mean, sigma)
    return out


def read_outside_target(path: Path = PATH) -> tuple[float, dict[str, float]]:
    """The validation target in MFU points and the held-out error in points of each corpus run the model misses
    by more than it, by run id (``outside_target`` of the file, written by ``python -m solvers fit``, which
    takes the target from ``solvers.validation``); no runs without the block."""
    block = json.loads(path.read_text(encoding="utf-8")).get("outside_target") or {}
    runs = {str(r["id"]): float(r["held_out_error_points"]) for r in block.get("runs", [])}
    return float(block.get("max_abs_points", math.inf)), runs


def read_held_out(path: Path = PATH) -> bool:
    """Whether the file's residuals are held out (True) or in sample (False, or no ``held_out`` key)."""
    return bool(json.loads(path.read_text(encoding="utf-8")).get("held_out", False))


def fit(
    classified: Sequence[tuple[str, float]], *, generated_by: str, convention: str, held_out: bool
) -> dict[str, Any]:
    """The file's document from (class, residual) pairs: mean and sample standard deviation per class, pooled
    for classes with fewer than ``MIN_RUNS`` runs (same kind first, then all runs)."""
    own = {name: [r for c, r in classified if c == name] for name in CLASSES}
    classes: dict[str, Any] = {}
    for name in CLASSES:
        pool, pooled_from = own[name], [name]
        if len(pool) < MIN_RUNS:
            kind = name.split("/")[0]
            pooled_from = [c for c in CLASSES if c.startswith(kind + "/")]
            pool = [r for c in pooled_from for r in own[c]]
        if len(pool) < MIN_RUNS:
            pooled_from = list(CLASSES)
            pool = [r for _, r in classified]
        entry: dict[str, Any] = {
            "n": len(own[name]),
            "mean": statistics.fmean(pool),
            "sigma": statistics.stdev(pool),
        }
        if pooled_from != [name]:
            entry["pooled_from"] = pooled_from
            entry["n_pooled"] = len(pool)
        classes[name] = entry
    return {
        "generated_by": generated_by,
        "convention": convention,
        "held_out": held_out,
        "classes": classes,
    }
