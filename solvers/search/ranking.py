"""Ranking a layout search: every candidate evaluated by the engine a single solve runs, ranked, Pareto front.

``search_resolved`` checks the layouts of the candidate space (``solvers.search.space``) with the engine's
own rules (``engine.check_layouts``), evaluates them with ``engine.evaluate`` (the very code a single solve
runs, in chunks of ``EVAL_CHUNK_LAYOUTS``), drops those that do not fit in memory, prices the rest with the
ledger over arrays (``ledger.compute_ledger``) when the objective is a cost or carbon figure, ranks them, and
finds the Pareto front over two or three objectives (``solvers.pareto``). It returns layouts and their
figures (``SearchResult``); composing a report from them is the report's job (``solvers.report``), and the
search document is ``solvers.search.document``.

Example: Llama 3 405B on 16,384 H100 with a 16M-token batch of 8,192-token sequences: 179,310 valid layouts
are evaluated in about 0.2 s of engine time on one core; the best that fits is at least as fast as the
published TP8 CP1 PP16 DP128 (``tests/solvers/test_search.py``, ``bench/bench_search.py``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers import engine
from solvers.errors import FieldError, ScenarioError
from solvers.inputs import Resolved, layout_from_batch
from solvers.ledger import LedgerInputs, LedgerResult, compute_ledger
from solvers.pareto import MAX_OBJECTIVES, MIN_OBJECTIVES, pareto_indices
from solvers.search.envelope import (
    Envelope,
    inside_mask,
    load_envelope,
    model_class,
    outside_text,
    rejection_reason,
    support_blocks,
)
from solvers.search.space import (
    MAX_LAYOUTS_PER_SEARCH,
    SearchSpace,
    default_space,
    enumerate_layouts,
    space_from_document,
    stated_layout,
    take,
)
from solvers.specs import FloatArray, IntArray, LayoutBatch

EVAL_CHUNK_LAYOUTS = 8_192  # layouts per engine call: its temporaries stay in cache (measured fastest)

OBJECTIVES: tuple[str, ...] = ("step_s", "usd_per_million_tokens", "total_usd", "total_kgco2e")
# Metrics a Pareto front may use: the objectives plus a few figures users trade against them.
PARETO_METRICS: tuple[str, ...] = (
    *OBJECTIVES,
    "wall_clock_days",
    "facility_kwh",
    "water_l",
    "memory_bytes",
)
DEFAULT_PARETO: tuple[str, ...] = ("step_s", "usd_per_million_tokens", "total_kgco2e")
_LEDGER_METRICS = frozenset(PARETO_METRICS) - {"step_s", "memory_bytes"}

R_MEMORY = "memory.fits: needs more memory per GPU than the accelerator holds"


def layout_dict(batch: LayoutBatch, i: int) -> dict[str, Any]:
    """Row ``i`` of a LayoutBatch as a layout mapping with the document's spellings."""
    return layout_from_batch(batch, i)


_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?(e[+-]?\d+)?")


def reason_key(reason: str) -> str:
    """An engine rule text with its numbers blanked, so that one rule counts as one reason."""
    return _NUMBER.sub("N", reason.strip())


# ---------------------------------------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------------------------------------

Progress = Callable[[int, int], None]  # (layouts evaluated so far, layouts to evaluate)


@dataclass(frozen=True)
class SearchResult:
    """A ranked search: ``layouts`` holds the feasible layouts, best first, and ``metrics`` their figures.

    ``metrics`` always has ``step_s``, ``gpu_busy_fraction`` and ``memory_bytes`` (per-GPU total), and
    the ledger figures (``usd_per_million_tokens``, ``total_usd``, ``total_kgco2e``, ``wall_clock_days``,
    ``facility_kwh``, ``water_l``) when the objective or the Pareto front needs them. ``pareto`` indexes
    ``layouts`` (ordered by the first Pareto objective).
    """

    objective: str
    candidates: int
    evaluated: int
    feasible: int
    rejected: dict[str, int]
    elapsed_s: float
    layouts: LayoutBatch
    metrics: dict[str, FloatArray]
    pareto_objectives: tuple[str, ...]
    pareto: IntArray
    space: SearchSpace
    within_validated: bool = False  # whether layouts outside the validated envelope were left out


def check_objectives(*, objective: str, pareto: Sequence[str], path: str = "search") -> tuple[str, ...]:
    """Validate the ranking objective and the Pareto metrics; returns the Pareto metrics as a tuple."""
    errors: list[FieldError] = []
    if objective not in OBJECTIVES:
        errors.append(
            FieldError(f"{path}.objective", f"must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        )
    names = tuple(pareto)
    if not MIN_OBJECTIVES <= len(names) <= MAX_OBJECTIVES:
        errors.append(
            FieldError(
                f"{path}.pareto", f"lists {MIN_OBJECTIVES} or {MAX_OBJECTIVES} metrics, got {len(names)}"
            )
        )
    for i, name in enumerate(names):
        if name not in PARETO_METRICS:
            errors.append(
                FieldError(f"{path}.pareto[{i}]", f"must be one of {', '.join(PARETO_METRICS)}, got {name!r}")
            )
    if len(set(names)) != len(names):
        errors.append(FieldError(f"{path}.pareto", "lists a metric twice"))
    if errors:
        raise ScenarioError(errors)
    return names


def ledger_metrics(
    *, ledger_fields: Mapping[str, Any], tokens_per_step: float, step_s: FloatArray, busy: FloatArray
) -> dict[str, FloatArray]:
    """Cost, carbon and schedule figures of many layouts in one ``compute_ledger`` call over arrays."""
    if step_s.shape[0] == 0:
        return {name: np.zeros(0) for name in _LEDGER_METRICS}
    result = compute_ledger(
        LedgerInputs(step_s=step_s, gpu_busy_fraction=busy, tokens_per_step=tokens_per_step, **ledger_fields)
    )

    def col(value: Any) -> FloatArray:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), step_s.shape)

    return {
        "usd_per_million_tokens": col(result.tco["usd_per_million_tokens"]),
        "total_usd": col(result.tco["total_usd"]),
        "total_kgco2e": col(result.carbon["total_kgco2e"]),
        "wall_clock_days": col(result.schedule["wall_clock_days"]),
        "facility_kwh": col(result.energy["facility_kwh"]),
        "water_l": col(result.carbon["water_l"]),
    }


def search_space(resolved: Resolved, scenario: Mapping[str, Any], raw_space: Any) -> SearchSpace:
    """The space a search of ``scenario`` covers: ``default_space`` of ``resolved`` (the scenario with
    ``layout: auto``) keeping the numerics of the layout ``scenario`` states (``stated_numerics``), with the
    axes ``raw_space`` (the document's ``search.space``, or None) lists in place of the defaults.

    The one way every search, sweep point and result key builds its space: ``scenario`` is required so the
    stated layout cannot be left out. Example: a scenario stating ``grad_reduce_dtype: fp32`` and no
    ``search.space`` -> ``grad_reduce_dtype`` ("fp32",); with ``layout: auto`` -> ("bf16", "fp32").
    Bad ``raw_space`` raises ``ScenarioError`` naming ``search.space.<axis>``.
    """
    default = default_space(
        model=resolved.model,
        cluster=resolved.cluster,
        training=resolved.training,
        stated_layout=stated_layout(scenario),
    )
    return space_from_document(raw_space, default=default)


def search_resolved(
    resolved: Resolved,
    *,
    objective: str = "step_s",
    pareto: Sequence[str] = DEFAULT_PARETO,
    space: SearchSpace,
    max_layouts: int = MAX_LAYOUTS_PER_SEARCH,
    progress: Progress | None = None,
    within_validated: bool = False,
    envelope: Envelope | None = None,
) -> SearchResult:
    """Search every layout of a resolved scenario (``solvers.inputs.Resolved``) and rank the feasible ones.

    Steps: ``enumerate_layouts``; the engine's rules (``engine.layout_rule_codes``, the rules a single
    solve applies) count the rest by reason; ``engine.evaluate`` in chunks of ``EVAL_CHUNK_LAYOUTS``;
    layouts that do not fit in memory are dropped (counted under ``memory.fits``); the ledger prices the
    feasible ones when needed; rank by the objective, ties by step time, then memory per GPU, then
    enumeration order; Pareto front over ``pareto`` (2 or 3 metrics, all minimised).
    With ``within_validated`` the layouts outside the validated envelope (``solvers.search.envelope``,
    ``envelope`` or the catalog's file) are left out before evaluation, counted by the feature that fails.
    Raises ``ScenarioError`` when no layout is valid, none lies inside the envelope (at
    ``search.within_validated``) or none fits.
    """
    started = time.perf_counter()
    pareto_names = check_objectives(objective=objective, pareto=pareto)
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    enum = enumerate_layouts(**specs, space=space, max_layouts=max_layouts)
    rejected = dict(enum.rejected)

    codes, _names = engine.layout_rule_codes(**specs, layouts=enum.layouts)
    ok = codes == 0
    if not bool(ok.all()):
        for code in np.unique(codes[~ok]):
            first = int(np.flatnonzero(codes == code)[0])
            _, messages = engine.check_layouts(**specs, layouts=take(enum.layouts, np.array([first])))
            key = reason_key(messages[0] or f"training.layout: engine rule {int(code)}")
            rejected[key] = rejected.get(key, 0) + int(np.count_nonzero(codes == code))
    valid = enum.layouts if bool(ok.all()) else take(enum.layouts, np.flatnonzero(ok))
    n = len(valid)
    if n == 0:
        common = max(rejected.items(), key=lambda kv: kv[1])[0] if rejected else "empty search space"
        raise ScenarioError.single(
            "training.layout",
            f"auto: none of {enum.candidates:,} candidate layouts is valid; most common rule: {common}",
        )
    if within_validated:
        valid = _inside_envelope(resolved, valid, envelope or load_envelope(), rejected)
        n = len(valid)

    step_s = np.empty(n)
    busy = np.empty(n)
    memory_bytes = np.empty(n)
    fits = np.empty(n, dtype=np.bool_)
    capacity_bytes = 0.0
    for start in range(0, n, EVAL_CHUNK_LAYOUTS):
        stop = min(n, start + EVAL_CHUNK_LAYOUTS)
        columns = engine.evaluate(**specs, layouts=take(valid, slice(start, stop)))
        step_s[start:stop] = columns.step_s
        busy[start:stop] = columns.gpu_busy_fraction
        memory_bytes[start:stop] = columns.total_bytes
        fits[start:stop] = columns.fits
        capacity_bytes = float(columns.capacity_bytes[0])
        if progress is not None:
            progress(stop, n)
    feasible_index = np.flatnonzero(fits)
    if n - feasible_index.size:
        rejected[R_MEMORY] = n - int(feasible_index.size)
    if feasible_index.size == 0 and within_validated:
        # Say which it is: nothing fits at all (the memory error of the whole space), or only layouts
        # outside the envelope fit.
        search_resolved(
            resolved,
            pareto=("step_s", "memory_bytes"),
            space=space,
            max_layouts=max_layouts,
            within_validated=False,
        )
        raise ScenarioError.single(
            "search.within_validated",
            f"none of the {n:,} valid layouts inside the validated envelope fits in memory (smallest needs "
            f"{float(memory_bytes.min()) / 1e9:,.1f} GB per GPU, the accelerator holds {capacity_bytes / 1e9:,.1f} GB); "
            "set search.within_validated to false to rank every layout",
        )
    if feasible_index.size == 0:
        raise ScenarioError.single(
            "training.layout",
            f"auto: none of {n:,} valid layouts fits in memory (smallest needs "
            f"{float(memory_bytes.min()) / 1e9:,.1f} GB per GPU, the accelerator holds {capacity_bytes / 1e9:,.1f} GB)",
        )

    metrics: dict[str, FloatArray] = {
        "step_s": step_s[feasible_index],
        "gpu_busy_fraction": busy[feasible_index],
        "memory_bytes": memory_bytes[feasible_index],
    }
    if objective in _LEDGER_METRICS or any(name in _LEDGER_METRICS for name in pareto_names):
        metrics.update(
            ledger_metrics(
                ledger_fields=resolved.ledger_fields,
                tokens_per_step=float(resolved.training.global_batch_tokens),
                step_s=metrics["step_s"],
                busy=metrics["gpu_busy_fraction"],
            )
        )
    order = np.lexsort(
        (np.arange(feasible_index.size), metrics["memory_bytes"], metrics["step_s"], metrics[objective])
    )
    ranked = take(valid, feasible_index[order])
    metrics = {name: np.ascontiguousarray(values[order]) for name, values in metrics.items()}
    front = pareto_indices(np.column_stack([metrics[name] for name in pareto_names]))
    return SearchResult(
        objective=objective,
        candidates=enum.candidates,
        evaluated=n,
        feasible=int(feasible_index.size),
        rejected=dict(sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
        elapsed_s=time.perf_counter() - started,
        layouts=ranked,
        metrics=metrics,
        pareto_objectives=pareto_names,
        pareto=front,
        space=space,
        within_validated=within_validated,
    )


def best_support(resolved: Resolved, result: SearchResult, envelope: Envelope) -> dict[str, Any]:
    """The ``support`` block (``support_blocks``) of a search's best layout: how close the layout an auto solve
    or a sweep point takes lies to the validated runs of ``envelope``."""
    return support_blocks(
        model=resolved.model,
        cluster=resolved.cluster,
        training=resolved.training,
        layouts=result.layouts.take(slice(0, 1)),
        envelope=envelope,
    )[0]


def _inside_envelope(
    resolved: Resolved, valid: LayoutBatch, envelope: Envelope, rejected: dict[str, int]
) -> LayoutBatch:
    """The layouts of ``valid`` inside the validated envelope; the others are counted in ``rejected`` by the
    first feature outside. Raises ``ScenarioError`` at ``search.within_validated`` when none is inside,
    quoting the reason of the most common failure on one layout that has it."""
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    inside, first = inside_mask(**specs, layouts=valid, envelope=envelope)
    cls = model_class(resolved.model)
    features = np.array(first, dtype=object)
    for name in dict.fromkeys(f for f in first if f is not None):
        key = rejection_reason(str(name), cls)
        rejected[key] = rejected.get(key, 0) + int(np.count_nonzero(features == name))
    if bool(inside.any()):
        return valid if bool(inside.all()) else take(valid, np.flatnonzero(inside))
    common = max(dict.fromkeys(first), key=lambda f: first.count(f))
    example = take(valid, np.array([first.index(common)], dtype=np.int64))
    block = support_blocks(**specs, layouts=example, envelope=envelope)[0]
    reason = block["features"].get(str(common), {}).get("reason") or outside_text(str(common), cls)
    raise ScenarioError.single(
        "search.within_validated",
        f"none of {len(valid):,} valid layouts lies inside the validated envelope of {cls} runs; most "
        f"common reason: {reason}; set search.within_validated to false to rank them all",
    )


def ledger_for_row(resolved: Resolved, row: Mapping[str, Any]) -> LedgerResult:
    """The ledger of ``resolved`` at one engine row (its step time and busy fraction): what a report of that
    layout carries under reliability, schedule, energy, carbon and tco."""
    return compute_ledger(
        LedgerInputs(
            step_s=float(row["step_s"]),
            gpu_busy_fraction=float(row["gpu_busy_fraction"]),
            tokens_per_step=float(resolved.training.global_batch_tokens),
            **resolved.ledger_fields,
        ),
        assumptions=False,  # the report takes them from ``resolved`` (``Resolved.report_assumptions``)
        held_reliability=resolved.reliability,
    )


# ---------------------------------------------------------------------------------------------------------
# explaining a difference
# ---------------------------------------------------------------------------------------------------------

# step_s = compute_s + bubble_s + sum of exposed exchanges (solvers.engine): the difference of two steps is
# exactly the sum of the differences of these terms.
STEP_TERMS: tuple[str, ...] = (
    "compute_s",
    "bubble_s",
    "exposed_comm_s_tp",
    "exposed_comm_s_cp",
    "exposed_comm_s_pp",
    "exposed_comm_s_dp",
    "exposed_comm_s_ep",
)
_TERM_LABEL = {
    "compute_s": "compute",
    "bubble_s": "pipeline bubble",
    "exposed_comm_s_tp": "exposed TP exchange",
    "exposed_comm_s_cp": "exposed CP exchange",
    "exposed_comm_s_pp": "exposed PP exchange",
    "exposed_comm_s_dp": "exposed DP exchange",
    "exposed_comm_s_ep": "exposed EP exchange",
}


def explain_difference(
    *,
    baseline_layout: Mapping[str, Any],
    baseline_row: Mapping[str, Any],
    candidate_layout: Mapping[str, Any],
    candidate_row: Mapping[str, Any],
) -> dict[str, Any]:
    """Which terms of the step moved between two layouts, largest first, and which axes differ.

    Equation: step_s = compute_s + bubble_s + sum_x exposed_comm_s_x (solvers.engine), so
    delta step_s = sum of the term deltas exactly. Example: Llama 3's TP8 PP16 interleaved(2) against a
    layout with more virtual stages shows the bubble shrinking and the PP exchange growing.
    """
    deltas = {term: float(candidate_row[term]) - float(baseline_row[term]) for term in STEP_TERMS}
    base_step = float(baseline_row["step_s"])
    cand_step = float(candidate_row["step_s"])
    moved = sorted((t for t in STEP_TERMS if deltas[t] != 0.0), key=lambda t: -abs(deltas[t]))
    changed = {
        key: [baseline_layout[key], candidate_layout[key]]
        for key in baseline_layout
        if key in candidate_layout and baseline_layout[key] != candidate_layout[key]
    }
    parts = [
        f"{_TERM_LABEL[t]} {deltas[t]:+.3f} s"
        for t in moved
        if abs(deltas[t]) >= 1e-4 * max(base_step, 1e-12)
    ]
    axes = ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in changed.items()) or "no layout axis"
    summary = (
        f"step {base_step:.3f} s -> {cand_step:.3f} s ({(cand_step / base_step - 1.0) * 100.0:+.1f}%) by changing "
        f"{axes}: " + ("; ".join(parts) if parts else "no term moved")
    )
    base_mem, cand_mem = baseline_row.get("total_bytes"), candidate_row.get("total_bytes")
    if base_mem is not None and cand_mem is not None and float(base_mem) != float(cand_mem):
        summary += f"; memory per GPU {float(base_mem) / 1e9:,.1f} GB -> {float(cand_mem) / 1e9:,.1f} GB"
    return {
        "baseline_step_s": base_step,
        "candidate_step_s": cand_step,
        "delta_step_s": cand_step - base_step,
        "delta_s": deltas,
        "terms_by_impact": moved,
        "layout_changes": changed,
        "summary": summary,
    }
