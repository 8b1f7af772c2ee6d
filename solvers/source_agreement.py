"""Where two sources publish the same configuration: how far apart they are once the engine has accounted
for what differs (``python -m solvers validate``, section "sources at one configuration").

Two runs share a configuration when their resolved model, cluster and training are equal but for the GPU
count and what follows from it (the data-parallel degree), the scale-out fabric, the global batch and
``training.efficiency`` (the overlap and effect switches are translation conventions of each source's notes,
not something its table states); site and economics do not move a step. Within such a group the engine's
held-out prediction already accounts for what differs (data-parallel traffic over the stated fabric, pipeline
bubble, stragglers), so what
is left between two sources' residuals is either the software stack (tuning, kernels, settings no table
states) or a dependence on scale or batch that the engine gets wrong and that happens to separate the sources.
Neither is something a prediction from the configuration can remove, so the group's spread is a floor under
the held-out error of its runs.

For a group with sources ``s`` holding ``n_s`` runs and mean held-out error ``m_s`` (MFU points):

* ``gap_points = max_s m_s - min_s m_s``;
* ``floor_points = min_c sum_s n_s |m_s - c| / sum_s n_s`` (``c`` at a weighted median of the ``m_s``): the
  least mean |error| over the group's runs of any prediction that shifts the configuration by one amount,
  however well it followed each source's own runs.

Example: two sources, one run each, at +4 and -1 points: gap 5, floor 2.5 (any ``c`` between them).
"""

from __future__ import annotations

from collections.abc import Mapping
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


def _without(value: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        path = f"{prefix}.{key}"
        if path in VARYING:
            continue
        out[key] = _without(item, path) if type(item) is dict else item
    return out


def configuration_key(scenario: Any) -> str:
    """The hash of a scenario's resolved ``PARTS`` without the fields of ``VARYING``.

    Example: two scenarios that differ only in ``cluster.gpus``, ``training.global_batch_seqs`` and the site
    share a key; a different ``training.layout.tp`` gives another.
    """
    _, document = resolve_with_document(scenario, step=False)
    return canonical_hash({part: _without(document[part], part) for part in PARTS})


def weighted_floor(means: list[float], weights: list[int]) -> float:
    """``min_c sum_i w_i |m_i - c| / sum_i w_i``: reached at a weighted median of ``means``.

    Example: ``weighted_floor([4.0, -1.0], [1, 1]) == 2.5``; ``weighted_floor([4.0, -1.0], [3, 1]) == 1.25``.
    """
    total = sum(weights)
    if total <= 0 or len(means) != len(weights):
        raise ValueError("weights must be positive and as many as the means")
    # Piecewise linear and convex in c: its minimum lies at one of the means.
    return min(sum(w * abs(m - c) for m, w in zip(means, weights, strict=True)) for c in means) / total


def matched_configurations(scenarios: Mapping[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The groups of runs that share a configuration across at least two sources, and their summary.

    ``scenarios`` maps a run id to its scenario document; ``runs`` are the rows of the validation document
    (``id``, ``source``, ``gpus``, ``held_out.error_points``, ``held_out.mfu_published``). Returns
    ``{"groups": [...], "summary": {...}}``; the summary's ``floor_points`` is the run-weighted mean of the
    groups' floors and ``held_out_points`` the held-out mean |error| of the same runs.
    """
    by_key: dict[str, list[dict[str, Any]]] = {}
    for row in runs:
        by_key.setdefault(configuration_key(scenarios[row["id"]]), []).append(row)
    groups: list[dict[str, Any]] = []
    for members in by_key.values():
        sources = sorted({r["source"] for r in members})
        if len(sources) < 2:
            continue
        per_source = []
        for source in sources:
            errors = [r["held_out"]["error_points"] for r in members if r["source"] == source]
            published = [r["held_out"]["mfu_published"] for r in members if r["source"] == source]
            per_source.append(
                {
                    "source": source,
                    "runs": len(errors),
                    "gpus": sorted(r["gpus"] for r in members if r["source"] == source),
                    "published_mfu_mean": sum(published) / len(published),
                    "held_out_error_points_mean": sum(errors) / len(errors),
                }
            )
        means = [s["held_out_error_points_mean"] for s in per_source]
        weights = [s["runs"] for s in per_source]
        groups.append(
            {
                "runs": sorted(r["id"] for r in members),
                "sources": per_source,
                "gap_points": max(means) - min(means),
                "floor_points": weighted_floor(means, weights),
                "held_out_mean_abs_points": sum(abs(r["held_out"]["error_points"]) for r in members)
                / len(members),
            }
        )
    groups.sort(key=lambda g: -g["gap_points"])
    count = sum(len(g["runs"]) for g in groups)
    summary = {
        "groups": len(groups),
        "runs": count,
        "floor_points": sum(g["floor_points"] * len(g["runs"]) for g in groups) / count if count else 0.0,
        "held_out_points": sum(g["held_out_mean_abs_points"] * len(g["runs"]) for g in groups) / count
        if count
        else 0.0,
        "largest_gap_points": groups[0]["gap_points"] if groups else 0.0,
    }
    return {"groups": groups, "summary": summary}


def format_matched(document: dict[str, Any]) -> list[str]:
    """The section's lines of ``validate``'s text: the summary, then each group with its sources."""
    s = document["summary"]
    if not s["groups"]:
        return ["sources at one configuration: none (no two sources publish the same configuration)"]
    lines = [
        f"sources at one configuration (resolved model, cluster and training equal but GPUs, fabric, batch and "
        f"efficiency): {s['groups']} "
        f"groups, {s['runs']} runs; held-out mean |error| on them {s['held_out_points']:.2f} points, of which at "
        f"least {s['floor_points']:.2f} is the sources disagreeing (largest gap {s['largest_gap_points']:.1f} points)"
    ]
    for g in document["groups"]:
        parts = "; ".join(
            f"{x['source']} ({x['runs']} at {','.join(map(str, x['gpus']))} GPUs) published "
            f"{x['published_mfu_mean'] * 100:.1f}%, error {x['held_out_error_points_mean']:+.1f}"
            for x in g["sources"]
        )
        lines.append(f"  gap {g['gap_points']:.1f}, floor {g['floor_points']:.1f}: {parts}")
    return lines
