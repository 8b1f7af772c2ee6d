"""The solver's entry points: a scenario document (or a resolved scenario) in, a report out.

    solve(document)          = solve_resolved(resolve(document))
    solve_resolved(resolved) = the layout's step (``solvers.engine``: a given layout's was evaluated once by
                               ``resolve``, ``layout: auto`` runs the search), the ledger on that step
                               (``solvers.ledger``), the report composed (``solvers.report``)
    solve_many(documents)    = one report or one error per document
    validate_scenario(doc)   = resolve(doc), refusing all that a solve refuses (a layout's rules, no fit)
    reprice_many(held, ...)  = the ``tco`` sections of many held plans under new prices, in one vectorised pass

Nothing is kept between calls. Reuse is the caller's choice: a caller that solves one scenario many times
holds its ``Resolved`` (immutable) and calls ``solve_resolved``; a caller that re-prices many plans holds
their ``Resolved`` and step figures and calls ``reprice_many``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from solvers import engine
from solvers.errors import ScenarioError, SolverInternalError, reason_to_error
from solvers.inputs import Resolved, resolve_with_document
from solvers.inputs.scenario import evaluate_step
from solvers.layout import Layout
from solvers.ledger import LedgerInputs, compute_ledger, energy_carbon, schedule, tco
from solvers.report import compose
from solvers.report_types import Report, SearchSummary, TcoBlock
from solvers.search.envelope import load_envelope
from solvers.search.ranking import best_support, search_resolved, search_space
from solvers.search.request import DEFAULT_WITHIN_VALIDATED
from solvers.version import SOLVER_VERSION

__all__ = ["SOLVER_VERSION", "reprice_many", "solve", "solve_many", "solve_resolved", "validate_scenario"]

# The prices a price book sets, by their LedgerInputs names.
PRICE_FIELDS = ("electricity_usd_per_kwh", "accelerator_unit_price_usd", "cloud_usd_per_gpu_hour")


def solve(document: Any, *, ranges: bool = True) -> Report:
    """Scenario document (dict) -> report document (dict); ``ScenarioError`` names the field for bad input.
    ``ranges=False`` leaves out the p10/p50/p90 ``range`` of each section (``solvers.ranges``), which
    about halves the cost of a report; every other figure is the same either way.

    Example: ``solve({"model": {"preset": "llama3-8b"}, "cluster": {"node": "dgx-h100", "gpus": 64}})``
    returns a report whose ``step.step_s`` is the time of one optimizer step of a ~4M-token batch.
    """
    resolved, scenario = resolve_with_document(document)
    return _report(resolved, scenario, ranges)  # the resolved document is new: the report takes it as it is


def validate_scenario(document: Any) -> Resolved:
    """``resolve(document)``, raising ``ScenarioError`` for everything ``solve`` would refuse: besides the
    document's types, limits and cross-part rules, which ``resolve`` checks, the first engine layout rule a
    given layout breaks (tp must divide the heads, the batch must split into data-parallel microbatches, ...),
    which ``resolve`` only records (``Resolved.layout_rule``), and for ``layout: auto`` a search that finds no
    layout fitting in memory. For a caller that stores a scenario to solve later, so that what it stores can
    be solved; it costs what ``pick_layout`` costs (a search for ``layout: auto``: up to about two seconds
    for a mixture-of-experts model on 16,384 GPUs). The returned ``Resolved`` holds a given layout's step, so
    ``solve_resolved`` does not repeat it.

    Example: a llama3-8b document (32 heads) with ``training.layout.tp`` 3 raises ``ScenarioError`` whose
    first error is ``training.layout.tp: must divide model.heads (=32), got 3``.
    """
    resolved, _ = resolve_with_document(document)
    pick_layout(resolved)
    return resolved


def solve_resolved(resolved: Resolved, *, ranges: bool = True) -> Report:
    """The report of a resolved scenario. ``resolved`` is only read: the report gets its own copies of the
    scenario document and the assumptions, so solving one ``Resolved`` again gives an equal report."""
    return _report(resolved, resolved.document, ranges)


def _report(resolved: Resolved, scenario: dict[str, Any], ranges: bool) -> Report:
    """The report of ``resolved`` with ``scenario``, its resolved document, a dict the report may own."""
    layout, row, search = pick_layout(resolved)
    # The ledger's assumption entries and its reliability block depend on the scenario only: ``resolve``
    # made them once, into ``resolved``.
    inputs = ledger_inputs(resolved, row["step_s"], row["gpu_busy_fraction"])
    ledger = compute_ledger(inputs, assumptions=False, held_reliability=resolved.reliability)
    return compose(resolved, layout, row, ledger, search, ranges=ranges, document=scenario)


def solve_many(documents: Iterable[Any]) -> list[Report | dict[str, Any]]:
    """One result per document, in order: a report, or ``{"error": {"path", "message", "errors"}}``."""
    out: list[Report | dict[str, Any]] = []
    for document in documents:
        try:
            out.append(solve(document))
        except ScenarioError as exc:
            out.append({"error": exc.as_dict()})
    return out


def pick_layout(resolved: Resolved) -> tuple[Layout, dict[str, Any], SearchSummary | None]:
    """The scenario's layout, its engine row (python scalars) and the search summary (None for a given one).

    One layout: its row as ``resolve`` evaluated it (``Resolved.step``), or the engine's first broken rule as
    a ``ScenarioError`` naming its field. ``layout: auto``:
    ``solvers.search`` enumerates and evaluates every candidate with the same engine and the fastest layout
    that fits in memory is reported; the summary counts rejections by rule. As a search does by default, it
    keeps to the layouts inside the envelope of validated runs (``solvers.search.envelope``); when none of
    them is feasible it ranks them all (``within_validated`` false in the summary), and the chosen layout's
    ``support`` says how far it lies from the validated runs and why.
    """
    model, cluster, training = resolved.model, resolved.cluster, resolved.training
    if resolved.layout is not None:  # a given layout: ``resolve`` evaluated its step once (unless step=False)
        step, rule = resolved.step, resolved.layout_rule
        if step is None and rule is None:
            step, rule = evaluate_step(model, cluster, training, resolved.layout)
        if step is None:
            raise ScenarioError([reason_to_error(rule or "training.layout: invalid layout")])
        return resolved.layout, dict(step), None
    envelope = load_envelope()
    # ``layout: auto`` states no layout, so the space is the default one (both gradient-reduction dtypes).
    space = search_space(resolved, resolved.document, None)
    try:
        result = search_resolved(
            resolved, space=space, within_validated=DEFAULT_WITHIN_VALIDATED, envelope=envelope
        )
    except ScenarioError as exc:
        # A solve must give a report: with no feasible layout inside the envelope it ranks every layout and
        # its ``support`` block says why the one it picks is unlike the validated runs.
        if not DEFAULT_WITHIN_VALIDATED or exc.errors[0].path != "search.within_validated":
            raise
        result = search_resolved(resolved, space=space, within_validated=False, envelope=envelope)
    layout = Layout.of(result.layouts, 0)
    row, _ = engine.evaluate_one(model=model, cluster=cluster, training=training, layout=layout)
    if row is None:  # the search keeps only layouts that keep every rule
        raise AssertionError("the search returned a layout that breaks a rule")
    summary: SearchSummary = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": result.rejected,
        "elapsed_s": result.elapsed_s,
        "within_validated": result.within_validated,
        "support": best_support(resolved, result, envelope),
    }
    return layout, row, summary


def ledger_inputs(
    resolved: Resolved,
    step_s: float,
    gpu_busy_fraction: float,
    prices: Mapping[str, float | None] | None = None,
) -> LedgerInputs:
    """The ledger's inputs for ``resolved`` at one step, with ``prices`` (LedgerInputs names, see
    ``PRICE_FIELDS``) in place of the scenario's own. The parser checked every field: nothing is checked
    again."""
    step = (float(step_s), float(gpu_busy_fraction), float(resolved.training.global_batch_tokens))
    if prices is None:  # one C call reads the 35 fields in LedgerInputs' order
        return LedgerInputs._make(step + _SCENARIO_FIELDS(resolved.ledger_fields))
    return LedgerInputs(*step, **{**resolved.ledger_fields, **prices})


# LedgerInputs' scenario fields (all but the step's three), in its order.
_SCENARIO_FIELDS = operator.attrgetter(*LedgerInputs._fields[3:])


def reprice_many(
    held: Sequence[Resolved],
    steps: Sequence[tuple[float, float]],
    prices: Sequence[Mapping[str, float | None]],
) -> list[TcoBlock]:
    """The report's ``tco`` section of each held plan under new prices (a price book's change), without its
    ``range`` (the section of ``solve(..., ranges=False)``).

    ``held[i]`` is a resolved plan, ``steps[i]`` its ``(step_s, gpu_busy_fraction)`` (the report's ``step``),
    ``prices[i]`` its new prices by ``PRICE_FIELDS`` name. Prices move no step, no failure, no schedule and no
    kWh, so those blocks are re-run per plan on python floats and the bill of every plan is one vectorised
    ``ledger.tco`` over arrays (elementwise IEEE-754 operations: the same bits as ``solve`` on the re-priced
    document, ``tests/solvers/test_entry.py``).
    """
    n = len(held)
    if not (len(steps) == n and len(prices) == n):
        raise ValueError("reprice_many: held, steps and prices must have the same length")
    if n == 0:
        return []
    rows: list[tuple[Any, ...]] = []  # python floats: one plan, one layout
    for resolved, (step_s, busy), price in zip(held, steps, prices, strict=True):
        inp = ledger_inputs(resolved, step_s, busy, price)
        r = resolved.reliability  # prices move no failure and no checkpoint
        sched = schedule(inp, r, step_s=inp.step_s, tokens_per_step=inp.tokens_per_step, shape=())
        e = energy_carbon(inp, r, sched, busy=inp.gpu_busy_fraction)
        shares = r.shares
        rows.append(
            (
                inp.accelerator_unit_price_usd,
                inp.gpus,
                inp.infra_multiplier,
                inp.amortization_years,
                inp.maintenance_per_year,
                inp.electricity_usd_per_kwh,
                np.nan if inp.cloud_usd_per_gpu_hour is None else inp.cloud_usd_per_gpu_hour,
                sched.wall_h,
                sched.wall_days,
                e.facility_kwh,
                sched.tokens,
                shares.rework + shares.restarts,
                shares.checkpoint_writes,
            )
        )
    columns = dict(zip(_TCO_ARGS, np.array(rows, dtype=np.float64).T, strict=True))
    cloud_rate = columns.pop("cloud_usd_per_gpu_hour")
    t = tco(**columns, cloud_usd_per_gpu_hour=cloud_rate)
    figures = {
        "capex_usd": t.capex_usd,
        "maintenance_usd": t.maintenance_usd,
        "electricity_usd": t.electricity_usd,
        "total_usd": t.total_usd,
        "usd_per_million_tokens": t.usd_per_million_tokens,
        "cloud_usd": t.cloud_usd,
        "failure_cost_usd": t.failure_cost_usd,
        "checkpoint_cost_usd": t.checkpoint_cost_usd,
        "capex_share": t.capex_share,
        "capex_total_usd": t.capex_total_usd,
    }
    finite = np.isfinite(np.stack([np.asarray(v) for k, v in figures.items() if k != "cloud_usd"]))
    if not finite.all():
        raise SolverInternalError("a re-priced bill is not finite")
    lists = {name: np.asarray(value).tolist() for name, value in figures.items()}
    has_cloud = (~np.isnan(cloud_rate)).tolist()
    out: list[TcoBlock] = []
    for i in range(n):
        block: TcoBlock = {name: lists[name][i] for name in figures}  # type: ignore[assignment]
        if not has_cloud[i]:
            block["cloud_usd"] = None
        out.append(block)
    return out


_TCO_ARGS = (
    "unit_price_usd",
    "gpus",
    "infra_multiplier",
    "amortization_years",
    "maintenance_per_year",
    "electricity_usd_per_kwh",
    "cloud_usd_per_gpu_hour",
    "wall_h",
    "wall_days",
    "facility_kwh",
    "tokens",
    "failure_share",
    "checkpoint_share",
)
