"""Sweeps: vary scenario fields over lists or ranges; the best layout at every point; the Pareto front.

A sweep document is a scenario document with a ``sweep`` section (and optionally a ``search`` section that
every point's search uses)::

    sweep:
      axes:
        - {field: cluster.gpus, range: {start: 4096, stop: 16384, factor: 2}}   # 4096, 8192, 16384
        - {field: site.region, values: [quebec, virginia, iceland]}
        - {field: cluster.scale_out.bandwidth_gb_s, range: {start: 25, stop: 100, step: 25}}
      mode: product          # every combination (default); zip: the i-th value of every axis together
      objective: step_s      # how each point picks its best layout (search objectives)
      pareto: [wall_clock_days, total_usd, total_kgco2e]   # 2 or 3 metrics over the points' best layouts

Any field of the scenario may vary (accelerator, GPU count, fabric bandwidth, region, batch, prices, ...),
except ``training.layout``: the layout is what each point searches (narrow it with ``search.space``).
Ranges include ``stop`` when a step lands on it. At most ``MAX_SWEEP_POINTS`` points; a larger sweep is
refused with a ``ScenarioError`` naming ``sweep.axes`` before any point is solved. Each point's search is
limited to ``search.MAX_LAYOUTS_PER_SEARCH`` layouts, checked before that point is evaluated; a point that
breaks a rule yields a row with its ``error`` and the sweep goes on.

``plan_sweep`` validates and expands the points; ``sweep_point`` solves one (the unit a worker runs, so a
job can split the points into chunks); ``sweep_front`` is the Pareto front over rows; ``sweep_document``
does all three in one process; the ``sweep`` command line is ``solvers.cli``.
"""

from __future__ import annotations

import copy
import decimal
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

import numpy as np

from solvers import catalog, prices
from solvers.errors import ScenarioError, SolverInternalError
from solvers.inputs import resolve
from solvers.inputs.fields import TABLE
from solvers.pareto import pareto_indices
from solvers.plain import all_plain_finite
from solvers.search import (
    SearchRequest,
    best_support,
    check_objectives,
    layout_dict,
    ledger_metrics,
    parse_search_request,
    search_resolved,
    search_space,
    with_auto_layout,
)
from solvers.search.envelope import Envelope, load_envelope

MAX_SWEEP_POINTS = 1_000
MAX_AXES = 6
MAX_VALUES_PER_AXIS = 1_000
SWEEP_KEYS: tuple[str, ...] = ("axes", "mode", "objective", "pareto")
AXIS_KEYS: tuple[str, ...] = ("field", "values", "range")
RANGE_KEYS: tuple[str, ...] = ("start", "stop", "step", "factor")
MODES: tuple[str, ...] = ("product", "zip")
PARTS: tuple[str, ...] = ("model", "cluster", "site", "training", "economics")
DEFAULT_PARETO_TOTAL: tuple[str, ...] = ("wall_clock_days", "total_usd", "total_kgco2e")
DEFAULT_PARETO_WINDOW: tuple[str, ...] = ("step_s", "usd_per_million_tokens", "total_kgco2e")

Progress = Callable[[int, int], None]  # (points done, points in all)


@dataclass(frozen=True)
class SweepAxis:
    field: str  # dotted path in the scenario document, e.g. "cluster.scale_out.bandwidth_gb_s"
    values: tuple[Any, ...]


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep: the base request (scenario + search options), its axes and every point."""

    request: SearchRequest
    axes: tuple[SweepAxis, ...]
    mode: str
    pareto: tuple[str, ...]
    points: tuple[dict[str, Any], ...]  # field path -> value, one mapping per point


def range_values(raw: Any, *, path: str) -> tuple[float | int, ...]:
    """Values of ``{start, stop, step}`` (arithmetic) or ``{start, stop, factor}`` (geometric), stop included
    when it is reached (to within 1e-9 relative).

    Example: ``{start: 25, stop: 100, step: 25}`` -> (25, 50, 75, 100); ``{start: 1024, stop: 8192,
    factor: 2}`` -> (1024, 2048, 4096, 8192). Integers stay integers when start and step (or factor) are.
    Other values are computed in decimal from the numbers as written and then rounded once to a double:
    ``{start: 0.7, stop: 1.0, step: 0.1}`` -> (0.7, 0.8, 0.9, 1.0), and no value lies past ``stop``.
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError.single(path, "must be a mapping {start, stop, step} or {start, stop, factor}")
    unknown = [k for k in raw if k not in RANGE_KEYS]
    if unknown:
        raise ScenarioError.single(
            f"{path}.{unknown[0]}", f"unknown key; expected one of {', '.join(RANGE_KEYS)}"
        )
    for key in ("start", "stop"):
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ScenarioError.single(f"{path}.{key}", f"must be a finite number, got {value!r}")
    start, stop = raw["start"], raw["stop"]
    if ("step" in raw) == ("factor" in raw):
        raise ScenarioError.single(path, "give exactly one of step (arithmetic) or factor (geometric)")
    key = "step" if "step" in raw else "factor"
    by = raw[key]
    if isinstance(by, bool) or not isinstance(by, int | float) or not math.isfinite(by):
        raise ScenarioError.single(f"{path}.{key}", f"must be a finite number, got {by!r}")
    integral = isinstance(start, int) and isinstance(by, int)
    out: list[float | int] = []
    if key == "step":
        if by <= 0 or stop < start:
            raise ScenarioError.single(f"{path}.step", "must be > 0 with stop >= start")
        span = (stop - start) / by * (1 + 1e-12) + 1e-9
        if not math.isfinite(span) or span >= MAX_VALUES_PER_AXIS:  # an infinite count has no floor
            raise ScenarioError.single(path, f"gives more than {MAX_VALUES_PER_AXIS:,} values")
        count = math.floor(span) + 1
        if count > MAX_VALUES_PER_AXIS:
            raise ScenarioError.single(path, f"gives {count:,} values, more than {MAX_VALUES_PER_AXIS:,}")
        if integral:
            out = [start + i * by for i in range(count)]
        else:
            with decimal.localcontext(prec=RANGE_DIGITS):
                first, step = _decimal(start), _decimal(by)
                out = [float(first + i * step) for i in range(count)]
    else:
        if by <= 1 or start <= 0 or stop < start:
            raise ScenarioError.single(f"{path}.factor", "must be > 1 with 0 < start <= stop")
        with decimal.localcontext(prec=RANGE_DIGITS):
            current, factor = _decimal(start), _decimal(by)
            while current <= _decimal(stop) * STOP_TOLERANCE:
                out.append(int(current) if integral else float(current))
                if len(out) > MAX_VALUES_PER_AXIS:
                    raise ScenarioError.single(path, f"gives more than {MAX_VALUES_PER_AXIS:,} values")
                current = current * factor
    # a value within the tolerance above stop is stop, never past it (an integer past it is left out)
    if integral:
        return tuple(v for v in out if v <= stop)
    return tuple(min(v, float(stop)) for v in out)


# Ranges are computed on the decimal numbers a client wrote (the shortest repr of each double), so that
# 0.7 by 0.1 gives 0.8 and 0.9, not 0.7999999999999999, and a value is the double of its decimal.
RANGE_DIGITS = 60
STOP_TOLERANCE = decimal.Decimal("1.000000001")  # stop counts as reached within 1e-9 relative


def _decimal(value: float | int) -> decimal.Decimal:
    return decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)


def _check_field(field: Any, path: str) -> str:
    if not isinstance(field, str) or not field:
        raise ScenarioError.single(path, f"must be a dotted field path such as cluster.gpus, got {field!r}")
    parts = field.split(".")
    if parts[0] not in PARTS or len(parts) < 2 or any(not p for p in parts):
        raise ScenarioError.single(
            path, f"must be a dotted path under {', '.join(PARTS)} (e.g. cluster.gpus), got {field!r}"
        )
    if parts[:2] == ["training", "layout"]:
        raise ScenarioError.single(
            path, "training.layout is what each point searches; narrow it with search.space instead"
        )
    return field


def plan_sweep(
    document: Any,
    *,
    objective: str | None = None,
    pareto: Sequence[str] | None = None,
    max_points: int = MAX_SWEEP_POINTS,
) -> SweepPlan:
    """Validate a sweep document and expand its points; refuses more than ``max_points`` before any work."""
    request = parse_search_request(document, objective=None, top=0, pareto=None)
    raw = document.get("sweep") if isinstance(document, Mapping) else None
    if not isinstance(raw, Mapping):
        raise ScenarioError.single("sweep", "must be a mapping with axes (see solvers.sweep)")
    unknown = [k for k in raw if k not in SWEEP_KEYS]
    if unknown:
        raise ScenarioError.single(
            f"sweep.{unknown[0]}", f"unknown key; expected one of {', '.join(SWEEP_KEYS)}"
        )
    mode = raw.get("mode", "product")
    if mode not in MODES:
        raise ScenarioError.single("sweep.mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    raw_axes = raw.get("axes")
    if not isinstance(raw_axes, list) or not raw_axes:
        raise ScenarioError.single("sweep.axes", "must be a non-empty list of {field, values | range}")
    if len(raw_axes) > MAX_AXES:
        raise ScenarioError.single("sweep.axes", f"lists at most {MAX_AXES} axes, got {len(raw_axes)}")
    axes: list[SweepAxis] = []
    for i, item in enumerate(raw_axes):
        path = f"sweep.axes[{i}]"
        if not isinstance(item, Mapping):
            raise ScenarioError.single(path, "must be a mapping {field, values} or {field, range}")
        bad = [k for k in item if k not in AXIS_KEYS]
        if bad:
            raise ScenarioError.single(
                f"{path}.{bad[0]}", f"unknown key; expected one of {', '.join(AXIS_KEYS)}"
            )
        field = _check_field(item.get("field"), f"{path}.field")
        if field in (a.field for a in axes):
            raise ScenarioError.single(f"{path}.field", f"{field} is swept twice")
        # a field inside another swept field: one would overwrite the other at every point
        for j, other in enumerate(axes):
            outer, inner = sorted((field, other.field), key=len)
            if inner.startswith(outer + "."):
                raise ScenarioError.single(
                    f"{path}.field",
                    f"{inner} lies inside {outer}, swept by sweep.axes[{j}]: sweep one of them (to vary a "
                    f"preset and a field of it, sweep {outer} over mappings such as "
                    "{preset: ..., field: value})",
                )
        if ("values" in item) == ("range" in item):
            raise ScenarioError.single(path, "give exactly one of values (a list) or range")
        if "values" in item:
            values = item["values"]
            if not isinstance(values, list) or not values:
                raise ScenarioError.single(f"{path}.values", "must be a non-empty list")
            if len(values) > MAX_VALUES_PER_AXIS:
                raise ScenarioError.single(
                    f"{path}.values", f"lists {len(values):,} values, more than {MAX_VALUES_PER_AXIS:,}"
                )
            for j, value in enumerate(values):
                # a float beyond a double (1e400 reads as inf) or NaN: no field takes it, and no report holds it
                if isinstance(value, float) and not math.isfinite(value):
                    raise ScenarioError.single(
                        f"{path}.values[{j}]", f"must be a finite number, got {value!r}"
                    )
                # a YAML date, or an infinity inside a list: each point's row echoes its values as JSON
                if not all_plain_finite(value):
                    raise ScenarioError.single(
                        f"{path}.values[{j}]",
                        "must be a JSON value (a number, string, boolean, null, list or object of these, "
                        f"finite), got {type(value).__name__}",
                    )
            axes.append(SweepAxis(field=field, values=tuple(values)))
        else:
            axes.append(SweepAxis(field=field, values=range_values(item["range"], path=f"{path}.range")))
    if mode == "zip":
        lengths = {len(a.values) for a in axes}
        if len(lengths) != 1:
            raise ScenarioError.single("sweep.mode", "zip needs every axis to have the same number of values")
        count = len(axes[0].values)
    else:
        count = math.prod(len(a.values) for a in axes)
    if count > max_points:
        sizes = " x ".join(f"{a.field} ({len(a.values)})" for a in axes)
        raise ScenarioError.single(
            "sweep.axes", f"{count:,} points ({sizes}) exceed the limit of {max_points:,} points per sweep"
        )
    chosen_objective = objective if objective is not None else raw.get("objective", request.objective)
    training = request.scenario.get("training")
    has_total = isinstance(training, Mapping) and training.get("total_tokens") is not None
    default_pareto = DEFAULT_PARETO_TOTAL if has_total else DEFAULT_PARETO_WINDOW
    raw_pareto = raw.get("pareto", default_pareto) if pareto is None else pareto
    if not isinstance(raw_pareto, list | tuple) or not all(isinstance(name, str) for name in raw_pareto):
        raise ScenarioError.single("sweep.pareto", "must be a list of 2 or 3 metric names")
    # the search's rule, so that a sweep refuses what a search refuses (a metric listed twice, say)
    chosen_pareto = check_objectives(objective=chosen_objective, pareto=raw_pareto, path="sweep")
    if mode == "zip":
        combos: list[tuple[Any, ...]] = list(zip(*(a.values for a in axes), strict=True))
    else:
        combos = list(product(*(a.values for a in axes)))
    points = tuple({a.field: v for a, v in zip(axes, combo, strict=True)} for combo in combos)
    request = SearchRequest(
        scenario=request.scenario,
        objective=str(chosen_objective),
        top=0,
        pareto=request.pareto,
        space=request.space,
        within_validated=request.within_validated,
    )
    return SweepPlan(request=request, axes=tuple(axes), mode=mode, pareto=chosen_pareto, points=points)


def point_document(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """The base scenario with each swept field set (intermediate mappings created as needed)."""
    doc = copy.deepcopy(dict(base))
    for field, value in point.items():
        parts = field.split(".")
        node: dict[str, Any] = doc
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                # A preset key given as a string (e.g. cluster.scale_out: roce-400g) becomes {preset: key}
                # only where the schema accepts that spelling; otherwise the field replaces it.
                child = {} if not isinstance(child, str) else {"preset": child}
                node[part] = child
            node = child
        node[parts[-1]] = copy.deepcopy(value)
    return doc


def _preset_fields() -> dict[str, tuple[str, tuple[str, ...]]]:
    """A preset field -> (the part its catalog entry fills, the fields of that part it can fill).

    The fields are the schema's own keys of that part (a fabric preset fills ``bandwidth_gb_s`` from the
    catalog's nominal rate), except for a node, which fills exactly what its catalog entries list."""

    def keys(table: Sequence[str]) -> tuple[str, ...]:
        return tuple(key for key in table if key not in _NOT_DERIVED)

    node_keys = sorted({key for entry in catalog.NODES.values() for key in entry if key not in _NOT_DERIVED})
    return {
        "model.preset": ("model", keys(TABLE.keys("model"))),
        "cluster.node": ("cluster", tuple(node_keys)),
        "cluster.accelerator": ("cluster.accelerator", keys(TABLE.keys("cluster.accelerator"))),
        "cluster.accelerator.preset": ("cluster.accelerator", keys(TABLE.keys("cluster.accelerator"))),
        "cluster.scale_up": ("cluster.scale_up", keys(TABLE.keys("cluster.scale_up"))),
        "cluster.scale_up.preset": ("cluster.scale_up", keys(TABLE.keys("cluster.scale_up"))),
        "cluster.scale_out": ("cluster.scale_out", keys(TABLE.keys("cluster.scale_up"))),
        "cluster.scale_out.preset": ("cluster.scale_out", keys(TABLE.keys("cluster.scale_up"))),
        "site.region": ("site", keys(TABLE.keys("site"))),
    }


# Setting a preset field re-derives every field of its part that the document leaves out; a field the
# document states keeps its stated value, and a sweep row says so (``pinned``).
_NOT_DERIVED = frozenset({"name", "sources", "preset", "region"})
# Prices a price book keys by a preset (solvers.prices): the accelerator's cloud price.
_PRICED_BY: dict[str, tuple[str, ...]] = {"cluster.accelerator": (prices.PATH_CLOUD_PRICE,)}


def derived_fields(field: str) -> tuple[str, ...]:
    """Every document field whose value follows from ``field`` when the document leaves it out, through
    the catalog entry that ``field`` names (and through the presets that entry names in turn: a node's
    accelerator, that accelerator's price and cloud price, the node's fabrics).

    Example: ``site.region`` -> site.grid_gco2_per_kwh, site.pue, site.wue_l_per_kwh,
    site.electricity_usd_per_kwh."""
    table = _preset_fields()
    out: list[str] = []
    pending = [field]
    seen: set[str] = set()
    while pending:
        current = pending.pop(0)
        if current in seen or current not in table:
            continue
        seen.add(current)
        prefix, keys = table[current]
        for key in keys:
            path = f"{prefix}.{key}"
            if path not in out and path != field:
                out.append(path)
            pending.append(path)
        for path in _PRICED_BY.get(prefix, ()):
            if path not in out:
                out.append(path)
    return tuple(out)


def _stated(document: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = document
    for part in path.split("."):
        if not isinstance(node, Mapping) or node.get(part) is None:
            return False, None
        node = node[part]
    return True, node


def pinned_fields(base: Mapping[str, Any], point: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fields a point's swept presets would re-derive but the base document states by value, so the
    point keeps the stated value (the swept preset's own value is not used for them).

    Example: base ``cluster: {node: dgx-h100, accelerator: h100-sxm}`` swept over ``cluster.node:
    dgx-b200`` -> [{"field": "cluster.accelerator", "value": "h100-sxm", "swept": "cluster.node", ...}]."""
    pinned: list[dict[str, Any]] = []
    for swept in point:
        for path in derived_fields(swept):
            if path in point or any(path.startswith(f"{other}.") for other in point):
                continue  # set by the point itself
            stated, value = _stated(base, path)
            if stated and not any(p["field"] == path for p in pinned):
                pinned.append(
                    {
                        "field": path,
                        "value": copy.deepcopy(value),
                        "swept": swept,
                        "note": f"stated by the scenario, so kept at this point: not re-derived from {swept}",
                    }
                )
    return pinned


def _base_region(scenario: Mapping[str, Any]) -> Any:
    """The region the base scenario's site states (None when it states none)."""
    site = scenario.get("site")
    return site.get("region") if isinstance(site, Mapping) else None


def sweep_point(
    plan: SweepPlan,
    index: int,
    *,
    pricing: prices.Pricing | None = None,
    envelope: Envelope | None = None,
) -> dict[str, Any]:
    """Search one point of ``plan``: its best layout and figures, or the rule it breaks as ``error``.

    The point's document is the base scenario with the point's fields set; ``pricing`` (the plan's price
    books) then prices it, so a point that changes the accelerator or the region is billed at that
    accelerator's and region's prices, exactly as a solve of that document would be. A base field that a
    swept preset would otherwise re-derive is listed under ``pinned``. ``envelope``: the validated runs the
    point's search and its best layout's ``support`` are judged against (the catalog's file when None; a
    caller solving many points loads it once)."""
    point = plan.points[index]
    started = time.perf_counter()
    row: dict[str, Any] = {"index": index, "point": dict(point)}
    pinned = pinned_fields(plan.request.scenario, point)
    if pinned:
        row["pinned"] = pinned
    document = point_document(plan.request.scenario, point)
    if pricing is not None:
        if "site.region" in point and point["site.region"] != _base_region(plan.request.scenario):
            # The site's own price (a ``site:<name>`` key) is the price where the site is; a point that
            # moves it to another region is billed at that region's price (the point at the site's own
            # region is the plan's own document, billed as its solve is).
            pricing = replace(pricing, site_name=None)
        document, provenance = pricing.apply(document)
        row["prices"] = provenance
    try:
        resolved = resolve(with_auto_layout(document))
        space = search_space(resolved, document, plan.request.space)
        envelope = envelope or load_envelope()
        result = search_resolved(
            resolved,
            objective=plan.request.objective,
            pareto=("step_s", "memory_bytes"),
            space=space,
            within_validated=plan.request.within_validated,
            envelope=envelope,
        )
    except ScenarioError as exc:
        row["error"] = exc.as_dict()
        row["elapsed_s"] = time.perf_counter() - started
        return row
    metrics = ledger_metrics(
        ledger_fields=resolved.ledger_fields,
        tokens_per_step=float(resolved.training.global_batch_tokens),
        step_s=result.metrics["step_s"][:1],
        busy=result.metrics["gpu_busy_fraction"][:1],
    )
    figures = {
        "step_s": float(result.metrics["step_s"][0]),
        "memory_bytes": float(result.metrics["memory_bytes"][0]),
        **{name: float(values[0]) for name, values in metrics.items()},
    }
    # how close the best layout lies to validated runs, as a search's layouts carry it (CONTRACT.md "Support")
    support = best_support(resolved, result, envelope)
    row.update(
        {
            "best": {"layout": layout_dict(result.layouts, 0), "metrics": figures, "support": support},
            "within_validated": result.within_validated,
            "candidates": result.candidates,
            "evaluated": result.evaluated,
            "feasible": result.feasible,
            "elapsed_s": time.perf_counter() - started,
        }
    )
    return row


def sweep_front(rows: Sequence[Mapping[str, Any]], objectives: Sequence[str]) -> list[int]:
    """Indices (into ``rows``) of the Pareto front of the rows that have a best layout."""
    solved = [i for i, row in enumerate(rows) if "best" in row]
    if not solved:
        return []
    values = np.array([[float(rows[i]["best"]["metrics"][name]) for name in objectives] for i in solved])
    return [solved[int(k)] for k in pareto_indices(values)]


def sweep_document(
    document: Any,
    *,
    objective: str | None = None,
    pareto: Sequence[str] | None = None,
    progress: Progress | None = None,
    pricing: prices.Pricing | None = None,
) -> dict[str, Any]:
    """Run a whole sweep in this process: one row per point, in order, and the Pareto front of the rows.
    ``pricing`` prices every point after its fields are set (``sweep_point``)."""
    started = time.perf_counter()
    plan = plan_sweep(document, objective=objective, pareto=pareto)
    envelope = load_envelope()
    rows: list[dict[str, Any]] = []
    for index in range(len(plan.points)):
        rows.append(sweep_point(plan, index, pricing=pricing, envelope=envelope))
        if progress is not None:
            progress(index + 1, len(plan.points))
    if len(rows) != len(plan.points):
        raise SolverInternalError("sweep lost a point")
    front = sweep_front(rows, plan.pareto)
    return {
        "objective": plan.request.objective,
        "mode": plan.mode,
        "axes": [{"field": a.field, "values": list(a.values)} for a in plan.axes],
        "points": len(plan.points),
        "solved": sum(1 for row in rows if "best" in row),
        "failed": sum(1 for row in rows if "error" in row),
        "elapsed_s": time.perf_counter() - started,
        "rows": rows,
        "pareto_objectives": list(plan.pareto),
        "pareto": front,
        "limits": {"max_points": MAX_SWEEP_POINTS, "max_axes": MAX_AXES},
    }
