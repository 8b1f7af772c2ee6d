"""The search document (CONTRACT.md "Search"): a scenario in, its best layout's full report, the top
alternatives with what moved, and the Pareto front out.

``search_document`` reads the ``search`` section (``solvers.search.request``), ranks the candidate space
(``solvers.search.ranking``), and composes the best layout's report with the report's own composer
(``solvers.report.compose_report``): search returns layouts and engine rows, the report composes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from solvers import engine
from solvers.errors import ScenarioError
from solvers.inputs import Resolved, layout_from_batch, resolve
from solvers.plain import all_plain_finite
from solvers.report import compose_report, reason_to_error
from solvers.search.envelope import Envelope, load_envelope, support_blocks
from solvers.search.ranking import (
    EVAL_CHUNK_LAYOUTS,
    STEP_TERMS,
    Progress,
    SearchResult,
    explain_difference,
    layout_dict,
    ledger_for_row,
    search_resolved,
    search_space,
)
from solvers.search.request import DEFAULT_TOP, parse_search_request, with_auto_layout
from solvers.search.space import MAX_LAYOUTS_PER_SEARCH, take
from solvers.specs import LayoutBatch

MAX_PARETO_ROWS = 100  # front rows listed in the search output (the size of the whole front is reported)


def _layout_rows(resolved: Resolved, layouts: LayoutBatch) -> list[dict[str, Any]]:
    """The engine rows of ``layouts`` (python scalars, as a report reads them)."""
    columns = engine.evaluate(
        model=resolved.model, cluster=resolved.cluster, training=resolved.training, layouts=layouts
    )
    return [columns.row(i) for i in range(len(layouts))]


def _compact(
    *, rank: int, layout: Mapping[str, Any], row: Mapping[str, Any], metrics: Mapping[str, float]
) -> dict[str, Any]:
    return {
        "rank": rank,
        "layout": dict(layout),
        "step_s": float(row["step_s"]),
        "mfu": float(row["mfu"]),
        "tokens_per_s": float(row["tokens_per_s"]),
        "memory_bytes": float(row["total_bytes"]),
        "terms": {term: float(row[term]) for term in STEP_TERMS},
        "metrics": {k: float(v) for k, v in metrics.items() if k != "gpu_busy_fraction"},
    }


def _metrics_at(result: SearchResult, i: int) -> dict[str, float]:
    return {name: float(values[i]) for name, values in result.metrics.items()}


def search_output(
    resolved: Resolved,
    result: SearchResult,
    *,
    top: int = DEFAULT_TOP,
    baseline: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    baseline_layouts: LayoutBatch | None = None,
    envelope: Envelope | None = None,
) -> dict[str, Any]:
    """The search document: counts, the best layout's full report, top alternatives, the Pareto front.

    Alternatives skip layouts whose step time and memory equal one already listed (e.g. a gradient dtype
    that no exchange exposes). ``baseline`` (layout, engine row) adds the given layout and what moved.
    Every listed layout (and the baseline, given its one-layout batch ``baseline_layouts``) carries
    ``support``: how close it is to the validated runs (``solvers.search.envelope.support_blocks``).
    """
    listed: list[int] = [0]
    seen = {(float(result.metrics["step_s"][0]), float(result.metrics["memory_bytes"][0]))}
    i = 1
    while len(listed) < top + 1 and i < result.feasible:
        key = (float(result.metrics["step_s"][i]), float(result.metrics["memory_bytes"][i]))
        if key not in seen:
            seen.add(key)
            listed.append(i)
        i += 1
    front = [int(k) for k in result.pareto]
    if len(front) > MAX_PARETO_ROWS:
        picks = np.unique(np.linspace(0, len(front) - 1, MAX_PARETO_ROWS).round().astype(np.int64))
        front = [front[int(p)] for p in picks]
    wanted = sorted(set(listed) | set(front))
    rows = dict(
        zip(
            wanted,
            _layout_rows(resolved, take(result.layouts, np.array(wanted, dtype=np.int64))),
            strict=True,
        )
    )
    layouts = {k: layout_dict(result.layouts, k) for k in wanted}
    envelope = envelope or load_envelope()
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    support = dict(
        zip(
            wanted,
            support_blocks(
                **specs, layouts=take(result.layouts, np.array(wanted, dtype=np.int64)), envelope=envelope
            ),
            strict=True,
        )
    )

    summary = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": result.rejected,
        # as an auto solve's report carries them (CONTRACT.md v1.1, "Support")
        "within_validated": result.within_validated,
        "support": support[0],
    }
    best_row = rows[0]
    best = compose_report(
        resolved=resolved,
        layout=layouts[0],
        row=best_row,
        ledger=ledger_for_row(resolved, best_row),
        search=summary,
    )
    cast(dict[str, Any], best)["support"] = support[0]  # the search document's addition to the report
    alternatives = []
    for k in listed[1:]:
        item = _compact(rank=k + 1, layout=layouts[k], row=rows[k], metrics=_metrics_at(result, k))
        item["versus_best"] = explain_difference(
            baseline_layout=layouts[0],
            baseline_row=best_row,
            candidate_layout=layouts[k],
            candidate_row=rows[k],
        )["summary"]
        item["support"] = support[k]
        alternatives.append(item)
    out: dict[str, Any] = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "elapsed_s": result.elapsed_s,
        "rejected": result.rejected,
        "within_validated": result.within_validated,
        "envelope": {"validated_runs": len(envelope.runs), "digest": envelope.digest},
        "best": best,
        "alternatives": alternatives,
        "pareto_objectives": list(result.pareto_objectives),
        "pareto_size": int(result.pareto.shape[0]),
        "pareto": [
            {
                **_compact(rank=k + 1, layout=layouts[k], row=rows[k], metrics=_metrics_at(result, k)),
                "support": support[k],
            }
            for k in front
        ],
        "space": result.space.as_dict(),
        "limits": {
            "max_layouts_per_search": MAX_LAYOUTS_PER_SEARCH,
            "max_pareto_rows": MAX_PARETO_ROWS,
            "eval_chunk_layouts": EVAL_CHUNK_LAYOUTS,
        },
    }
    if baseline is not None:
        base_layout, base_row = baseline
        out["baseline"] = {
            "layout": dict(base_layout),
            "step_s": float(base_row["step_s"]),
            "mfu": float(base_row["mfu"]),
            "memory_bytes": float(base_row["total_bytes"]),
            "fits": bool(base_row["fits"]),
            "terms": {term: float(base_row[term]) for term in STEP_TERMS},
            "versus_best": explain_difference(
                baseline_layout=base_layout,
                baseline_row=base_row,
                candidate_layout=layouts[0],
                candidate_row=best_row,
            ),
        }
        if baseline_layouts is not None:
            out["baseline"]["support"] = support_blocks(**specs, layouts=baseline_layouts, envelope=envelope)[
                0
            ]
    return out


def search_document(
    document: Any,
    *,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
    progress: Progress | None = None,
    within_validated: bool | None = None,
) -> dict[str, Any]:
    """Search a scenario document (CONTRACT.md "Search"); a ``search`` section may set objective, top,
    pareto, space and within_validated (default true: only layouts inside the envelope of validated runs,
    ``solvers.search.envelope``), and the keyword arguments override it.

    When ``training.layout`` is a mapping it is validated, evaluated and reported as ``baseline`` with what
    moved between it and the best layout (or with the rule it breaks as ``baseline.error``); the search
    itself always covers the whole space.
    """
    request = parse_search_request(
        document, objective=objective, top=top, pareto=pareto, within_validated=within_validated
    )
    resolved = resolve(with_auto_layout(request.scenario))
    baseline: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None
    baseline_layouts: LayoutBatch | None = None
    baseline_error: dict[str, Any] | None = None
    training = request.scenario.get("training")
    if isinstance(training, Mapping) and isinstance(training.get("layout"), Mapping):
        try:
            given = resolve(request.scenario)
            given_layouts = given.layouts  # made from the held layout on each read: once here
            ok, reasons = engine.check_layouts(
                model=given.model, cluster=given.cluster, training=given.training, layouts=given_layouts
            )
            if not bool(ok[0]):
                raise ScenarioError([reason_to_error(reasons[0] or "training.layout: invalid layout")])
            baseline = (layout_from_batch(given_layouts, 0), _layout_rows(given, given_layouts)[0])
            baseline_layouts = given_layouts
        except ScenarioError as exc:
            # The given layout is only a point of comparison: the search still covers the whole space.
            baseline_error = exc.as_dict()
    space = search_space(resolved, request.scenario, request.space)
    envelope = load_envelope()
    result = search_resolved(
        resolved,
        objective=request.objective,
        pareto=request.pareto,
        space=space,
        progress=progress,
        within_validated=request.within_validated,
        envelope=envelope,
    )
    out = search_output(
        resolved,
        result,
        top=request.top,
        baseline=baseline,
        baseline_layouts=baseline_layouts,
        envelope=envelope,
    )
    if baseline_error is not None and isinstance(training, Mapping):
        # echoed as given, except a value JSON cannot hold (a NaN, a YAML date), which its error names
        echoed = {str(k): v if all_plain_finite(v) else repr(v) for k, v in training["layout"].items()}
        out["baseline"] = {"layout": echoed, "error": baseline_error}
    return out
