"""Where two sources publish the same configuration, or the same run: how far apart they are
(``python -m solvers validate``, section "sources at one configuration").

Two runs share a configuration when their resolved model, cluster and training are equal but for the GPU
count and what follows from it (the data-parallel degree), the scale-out fabric, the global batch and
``training.efficiency`` (the overlap and effect switches are translation conventions of each source's notes,
not something its table states); site and economics do not move a step. They are the same run when they
share a configuration and also the GPU count, the global batch and the fabric.

Two figures, for two questions:

* **Gap** (per configuration): ``max_s m_s - min_s m_s`` over the sources' mean held-out errors ``m_s`` (MFU
  points). The engine has already accounted for what differs inside the group, so a gap is a mix of software
  stacks (tuning, kernels, settings no table states) and of GPU-count, batch or fabric effects the engine
  misses, which separate the sources whenever they publish at different scales (they mostly do). A gap says
  where to look, not how much of the error is irreducible; each source's runs are also predicted by a fit
  without that source, so two sources' errors come from different calibrations.
* **Floor** (over the same runs): whatever a model predicts, it gives the same figure for the same run, so
  over a set of same runs from several sources its mean |error| is at least
  ``min_c sum_i |p_i - c| / n`` over the published MFUs ``p_i`` (``c`` at their median). This needs no
  model and no calibration: it is the disagreement of the data itself, which no single model can remove on
  those runs (their held-out predictions come from the folds of their sources, two calibrations, so the
  held-out figure is bounded by it only as long as one calibration would predict them alike).

Example: one same run published at 38.8% and 39.1% MFU by two sources: floor 0.15 points.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from solvers.canonical import canonical_hash
from solvers.inputs.scenario import resolve_with_document

# The parts of a resolved scenario that define a configuration, and the fields inside them that may differ
# within one (dotted paths below the part; see the module docstring).
PARTS: tuple[str, ...] = ("model", "cluster", "training")
VARYING: frozenset[str] = frozenset(
    {
        "cluster.gpus",
        "cluster.scale_out",
        "training.global_batch_seqs",
        "training.global_batch_tokens",
        "training.efficiency",
        "training.layout.dp",
    }
)
# Of those, the ones the same run shares too (the data-parallel degree and the batch in sequences follow).
SAME_RUN: tuple[str, ...] = ("cluster.gpus", "cluster.scale_out", "training.global_batch_tokens")


def _without(value: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}.{key}"
        if path in VARYING:
            continue
        out[key] = _without(item, path) if type(item) is dict else item
    return out


def _at(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for key in path.split("."):
        value = value[key]
    return value


def run_keys(scenario: Any) -> tuple[str, str]:
    """``(configuration, same run)``: the hash of the scenario's resolved ``PARTS`` without the fields of
    ``VARYING``, and the same with the ``SAME_RUN`` values added.

    Example: two scenarios that differ only in ``cluster.gpus`` share the first key and not the second; two
    that differ only in the site or in ``training.efficiency`` share both; another ``training.layout.tp``
    shares neither.
    """
    _, document = resolve_with_document(scenario, step=False)
    configuration = canonical_hash({part: _without(document[part], part) for part in PARTS})
    same_run = canonical_hash([configuration, *(_at(document, path) for path in SAME_RUN)])
    return configuration, same_run


def configuration_key(scenario: Any) -> str:
    """The first of ``run_keys``."""
    return run_keys(scenario)[0]


def spread_floor(values: Sequence[float]) -> float:
    """``min_c sum_i |v_i - c| / n``: the least mean distance of the values to any one value, reached at their
    median (the sum is convex and piecewise linear in ``c``, flat between the two middle values).

    Example: ``spread_floor([4.0, -1.0]) == 2.5``; ``spread_floor([4.0, 4.0, 4.0, -1.0]) == 1.25``.
    """
    if not values or not all(math.isfinite(v) for v in values):
        raise ValueError("values must be finite and at least one")
    centre = statistics.median(values)
    return sum(abs(v - centre) for v in values) / len(values)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def matched_configurations(scenarios: Mapping[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The groups of runs that share a configuration across at least two sources, the same runs among them,
    and their summary.

    ``scenarios`` maps a run id to its scenario document; ``runs`` are the rows of the validation document
    (``id``, ``source``, ``gpus``, ``held_out.error_points``, ``held_out.mfu_published``). Returns
    ``{"groups": [...], "same_runs": [...], "summary": {...}}``.
    """
    keys = {row["id"]: run_keys(scenarios[row["id"]]) for row in runs}
    by_configuration: dict[str, list[dict[str, Any]]] = {}
    for row in runs:
        by_configuration.setdefault(keys[row["id"]][0], []).append(row)
    groups: list[dict[str, Any]] = []
    same_runs: list[dict[str, Any]] = []
    for members in by_configuration.values():
        sources = sorted({r["source"] for r in members})
        if len(sources) < 2:
            continue
        per_source = []
        for source in sources:
            mine = [r for r in members if r["source"] == source]
            per_source.append(
                {
                    "source": source,
                    "runs": len(mine),
                    "gpus": sorted(r["gpus"] for r in mine),
                    "published_mfu_mean": _mean([r["held_out"]["mfu_published"] for r in mine]),
                    "held_out_error_points_mean": _mean([r["held_out"]["error_points"] for r in mine]),
                }
            )
        means = [s["held_out_error_points_mean"] for s in per_source]
        groups.append(
            {
                "runs": sorted(r["id"] for r in members),
                "sources": per_source,
                "gap_points": max(means) - min(means),
                "held_out_mean_abs_points": _mean([abs(r["held_out"]["error_points"]) for r in members]),
            }
        )
        by_run: dict[str, list[dict[str, Any]]] = {}
        for r in members:
            by_run.setdefault(keys[r["id"]][1], []).append(r)
        for same in by_run.values():
            if len({r["source"] for r in same}) < 2:
                continue
            published = [r["held_out"]["mfu_published"] * 100.0 for r in same]
            same_runs.append(
                {
                    "runs": sorted(r["id"] for r in same),
                    "sources": sorted({r["source"] for r in same}),
                    "gpus": same[0]["gpus"],
                    "published_mfu": sorted(p / 100.0 for p in published),
                    "floor_points": spread_floor(published),
                    "held_out_mean_abs_points": _mean([abs(r["held_out"]["error_points"]) for r in same]),
                }
            )
    groups.sort(key=lambda g: -g["gap_points"])
    same_runs.sort(key=lambda s: -s["floor_points"])
    in_groups = sum(len(g["runs"]) for g in groups)
    in_same = sum(len(s["runs"]) for s in same_runs)
    summary = {
        "groups": len(groups),
        "runs": in_groups,
        "largest_gap_points": groups[0]["gap_points"] if groups else 0.0,
        "held_out_points": sum(g["held_out_mean_abs_points"] * len(g["runs"]) for g in groups) / in_groups
        if in_groups
        else 0.0,
        "same_run_sets": len(same_runs),
        "same_run_runs": in_same,
        "same_run_floor_points": sum(s["floor_points"] * len(s["runs"]) for s in same_runs) / in_same
        if in_same
        else 0.0,
        "same_run_held_out_points": sum(s["held_out_mean_abs_points"] * len(s["runs"]) for s in same_runs)
        / in_same
        if in_same
        else 0.0,
    }
    return {"groups": groups, "same_runs": same_runs, "summary": summary}


def format_matched(document: dict[str, Any]) -> list[str]:
    """The section's lines of ``validate``'s text: the summary, each group with its sources, each same run."""
    s = document["summary"]
    if not s["groups"]:
        return ["sources at one configuration: none (no two sources publish the same configuration)"]
    lines = [
        f"sources at one configuration (resolved model, cluster and training equal but GPUs, fabric, batch and "
        f"efficiency): {s['groups']} groups, {s['runs']} runs, held-out mean |error| {s['held_out_points']:.2f} "
        f"points; the sources' mean errors differ by up to {s['largest_gap_points']:.1f} points (software stacks, "
        f"and GPU-count, batch or fabric effects the engine misses)"
    ]
    for g in document["groups"]:
        parts = "; ".join(
            f"{x['source']} ({x['runs']} at {','.join(map(str, x['gpus']))} GPUs) published "
            f"{x['published_mfu_mean'] * 100:.1f}%, error {x['held_out_error_points_mean']:+.1f}"
            for x in g["sources"]
        )
        lines.append(f"  gap {g['gap_points']:.1f}: {parts}")
    if not s["same_run_sets"]:
        lines.append("the same run from two sources (configuration, GPUs, batch and fabric): none")
        return lines
    lines.append(
        f"the same run from two sources (configuration, GPUs, batch and fabric): {s['same_run_sets']} sets, "
        f"{s['same_run_runs']} runs; any model errs on them by at least {s['same_run_floor_points']:.2f} points on "
        f"average (the published figures' own spread), against {s['same_run_held_out_points']:.2f} held out"
    )
    for x in document["same_runs"]:
        published = ", ".join(f"{p * 100:.1f}%" for p in x["published_mfu"])
        lines.append(
            f"  {x['gpus']} GPUs, {' / '.join(x['sources'])}: {published} (floor {x['floor_points']:.2f})"
        )
    return lines
