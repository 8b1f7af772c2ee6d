"""The comparison table: plans side by side by step budget, time to train, goodput, energy, carbon and TCO.

Each figure is read from a result's report document (CONTRACT.md) and given with its delta against the
baseline, absolute and in percent, and with its range {p10, p50, p90} where the report carries one (its
``ranges``, CONVENTIONS.md "Ranges"); a delta whose ranges overlap is marked ``within_uncertainty``. Pure functions over already-loaded rows: the view loads every row it
needs in one query, so a comparison costs the same number of queries for 2 plans as for 20.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Metric:
    key: str  # dotted path in the report document
    group: str
    label: str
    unit: str


def _m(key: str, group: str, label: str, unit: str) -> Metric:
    return Metric(key=key, group=group, label=label, unit=unit)


METRICS: tuple[Metric, ...] = (
    _m("step.compute_s", "step", "Compute per step", "s"),
    *(
        _m(f"step.exposed_comm_s.{axis}", "step", f"Exposed {axis.upper()} communication", "s")
        for axis in ("tp", "cp", "pp", "dp", "ep")
    ),
    _m("step.bubble_s", "step", "Pipeline bubble", "s"),
    _m("step.bubble_fraction", "step", "Bubble fraction", "fraction"),
    _m("step.step_s", "step", "Step time", "s"),
    _m("step.tokens_per_s", "step", "Throughput", "tokens/s"),
    _m("step.mfu", "step", "MFU", "fraction"),
    _m("schedule.ideal_days", "time", "Time to train without failures", "days"),
    _m("schedule.wall_clock_days", "time", "Time to train", "days"),
    _m("reliability.goodput", "reliability", "Goodput", "fraction"),
    _m("reliability.expected_failures", "reliability", "Expected failures", "count"),
    _m("energy.it_kwh", "energy", "IT energy", "kWh"),
    _m("energy.facility_kwh", "energy", "Facility energy", "kWh"),
    _m("carbon.operational_kgco2e", "carbon", "Operational carbon", "kgCO2e"),
    _m("carbon.embodied_kgco2e", "carbon", "Embodied carbon", "kgCO2e"),
    _m("carbon.total_kgco2e", "carbon", "Total carbon", "kgCO2e"),
    _m("carbon.water_l", "carbon", "Water", "L"),
    _m("tco.capex_usd", "tco", "Capital cost (amortized)", "USD"),
    _m("tco.maintenance_usd", "tco", "Maintenance", "USD"),
    _m("tco.electricity_usd", "tco", "Electricity", "USD"),
    _m("tco.failure_cost_usd", "tco", "Cost of failures (rework and restarts)", "USD"),
    _m("tco.checkpoint_cost_usd", "tco", "Cost of checkpoint writes", "USD"),
    _m("tco.total_usd", "tco", "Total cost", "USD"),
    _m("tco.usd_per_million_tokens", "tco", "Cost per million tokens", "USD/Mtok"),
    _m("tco.cloud_usd", "tco", "Cloud alternative (same GPU-hours at the cloud price)", "USD"),
    _m("memory.total_bytes", "memory", "Memory needed per GPU", "bytes"),
    _m("memory.capacity_bytes", "memory", "Memory per GPU", "bytes"),
)

# Per-row facts that are not deltas: whether the plan fits, the layout, the warnings and the cloud price; and
# the figures' ranges.
ROW_SECTIONS: tuple[str, ...] = ("layout", "warnings", "ranges")
# The top-level report sections compare reads (it loads only these from the database; a report's
# assumptions ledger is most of its size).
REPORT_SECTIONS: tuple[str, ...] = tuple(sorted({m.key.split(".")[0] for m in METRICS} | set(ROW_SECTIONS)))


def report_number(report: Any, key: str) -> float | None:
    """The finite number at a dotted path of a report, or None when absent or not a number."""
    node: Any = report
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    value = float(node)
    return value if math.isfinite(value) else None


QUANTILES = ("p10", "p50", "p90")


def figure_range(report: Mapping[str, Any] | None, key: str) -> dict[str, float] | None:
    """The ``{p10, p50, p90}`` range of the figure at dotted path ``key``, or None when the report has none
    (or it is not three finite numbers with p10 <= p50 <= p90). Read from the report's top-level ``ranges``
    keyed by path (``{"ranges": {"schedule.wall_clock_days": {"p10": 21.0, ...}}}``, CONTRACT.md v1.1, what
    the solver writes), else from the section's ``range`` mapping or a ``<figure>_range`` sibling."""
    if not report or "." not in key:
        return None
    top = report.get("ranges")
    candidate = top.get(key) if isinstance(top, Mapping) else None
    if candidate is None:
        parent_key, name = key.rsplit(".", 1)
        parent: Any = report
        for part in parent_key.split("."):
            parent = parent.get(part) if isinstance(parent, Mapping) else None
        if not isinstance(parent, Mapping):
            return None
        section_ranges = parent.get("range")
        candidate = parent.get(f"{name}_range")
        if candidate is None and isinstance(section_ranges, Mapping):
            candidate = section_ranges.get(name)
    if not isinstance(candidate, Mapping):
        return None
    values = [candidate.get(q) for q in QUANTILES]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        return None
    low, mid, high = (float(v) for v in values)  # type: ignore[arg-type]
    return {"p10": low, "p50": mid, "p90": high} if low <= mid <= high else None


def within_uncertainty(
    value: float | None,
    base: float | None,
    spread: Mapping[str, float] | None,
    base_spread: Mapping[str, float] | None,
) -> bool | None:
    """Whether a difference is inside the uncertainty: the two p10-p90 ranges overlap; with one range only,
    the other figure lies in it; always when the two figures are equal. None when neither figure has a range
    (or a figure is missing).

    Example: 10-14 days against 13-18 days overlap (True); 10-12 against 13-18 do not (False)."""
    if value is None or base is None or (spread is None and base_spread is None):
        return None
    if (
        value == base
    ):  # no difference at all, wherever the one range lies (a point can sit just outside its own)
        return True
    if spread is not None and base_spread is not None:
        return spread["p10"] <= base_spread["p90"] and base_spread["p10"] <= spread["p90"]
    if spread is not None:
        return spread["p10"] <= base <= spread["p90"]
    assert base_spread is not None
    return base_spread["p10"] <= value <= base_spread["p90"]


def deltas(value: float | None, base: float | None) -> tuple[float | None, float | None]:
    """(value - base, 100 * (value - base) / |base|); None where undefined (missing value, zero base)."""
    if value is None or base is None:
        return None, None
    delta = value - base
    pct = 100.0 * delta / abs(base) if base != 0 else (0.0 if delta == 0 else None)
    return delta, pct


@dataclass(frozen=True)
class CompareItem:
    plan_id: int
    plan_name: str
    result_id: int | None
    result_version: int | None
    solver_version: str | None
    price_book_version: int | None
    created_at: Any
    report: Mapping[str, Any] | None
    kind: str | None = None
    team_price_book_version: int | None = None
    cloud_usd_per_gpu_hour: float | None = None
    current: bool | None = None
    stale_reasons: tuple[str, ...] = ()


def _fits(report: Mapping[str, Any] | None) -> bool | None:
    memory = report.get("memory") if report else None
    fits = memory.get("fits") if isinstance(memory, Mapping) else None
    return fits if isinstance(fits, bool) else None


def _warnings(report: Mapping[str, Any] | None) -> list[str]:
    warnings = report.get("warnings") if report else None
    return [str(warning) for warning in warnings] if isinstance(warnings, list) else []


def row_flags(item: CompareItem) -> list[str]:
    """What a buyer must see before reading a row's figures: a plan that does not fit in memory, a result
    that is no longer current (the report's own warnings are beside them, under ``warnings``).

    Example: a plan needing 1,309 GB per GPU on 141 GB GPUs -> "does not fit in memory: needs 1,309.0 GB per
    GPU, the GPU has 141.0 GB"."""
    if item.report is None:
        return ["no result yet: run the plan"]
    flags: list[str] = []
    if _fits(item.report) is False:
        need = report_number(item.report, "memory.total_bytes")
        have = report_number(item.report, "memory.capacity_bytes")
        detail = (
            f": needs {need / 1e9:,.1f} GB per GPU, the GPU has {have / 1e9:,.1f} GB"
            if need is not None and have is not None
            else ""
        )
        flags.append(f"does not fit in memory{detail}")
    if item.current is False:
        flags.extend(f"not current: {reason}" for reason in item.stale_reasons)
    return flags


def compare_table(*, items: Sequence[CompareItem], baseline_index: int) -> dict[str, Any]:
    base_report = items[baseline_index].report
    base_values = {m.key: report_number(base_report, m.key) for m in METRICS}
    base_ranges = {m.key: figure_range(base_report, m.key) for m in METRICS}
    rows = []
    for index, item in enumerate(items):
        values = {}
        for metric in METRICS:
            value = report_number(item.report, metric.key)
            base_value = base_values[metric.key]
            delta, pct = deltas(value, base_value)
            spread = figure_range(item.report, metric.key)
            values[metric.key] = {
                "value": value,
                "delta": delta,
                "delta_pct": pct,
                "range": spread,
                "within_uncertainty": None
                if index == baseline_index
                else within_uncertainty(value, base_value, spread, base_ranges[metric.key]),
            }
        rows.append(
            {
                "plan": item.plan_id,
                "plan_name": item.plan_name,
                "result": item.result_id,
                "result_version": item.result_version,
                "kind": item.kind,
                "solver_version": item.solver_version,
                "price_book_version": item.price_book_version,
                "team_price_book_version": item.team_price_book_version,
                "created_at": item.created_at,
                "current": item.current,
                "fits": _fits(item.report),
                "layout": item.report.get("layout") if item.report else None,
                "cloud_usd_per_gpu_hour": item.cloud_usd_per_gpu_hour,
                "warnings": _warnings(item.report),
                "flags": row_flags(item),
                "baseline": index == baseline_index,
                "values": values,
            }
        )
    base = items[baseline_index]
    return {
        "baseline": {"plan": base.plan_id, "result": base.result_id},
        "metrics": [{"key": m.key, "group": m.group, "label": m.label, "unit": m.unit} for m in METRICS],
        "items": rows,
    }


CSV_LEAD_COLUMNS = (
    "plan",
    "plan_name",
    "result",
    "result_version",
    "kind",
    "baseline",
    "solver_version",
    "price_book_version",
    "team_price_book_version",
    "current",
    "fits",
    "cloud_usd_per_gpu_hour",
)


def layout_text(layout: Any) -> str:
    """A layout in one cell: ``tp8 pp16 cp1 ep1 dp128 mb1 interleaved`` (empty when there is none)."""
    if not isinstance(layout, Mapping):
        return ""
    parts = [f"{axis}{layout[axis]}" for axis in ("tp", "pp", "cp", "ep", "dp") if axis in layout]
    if "microbatch_seqs" in layout:
        parts.append(f"mb{layout['microbatch_seqs']}")
    if layout.get("schedule"):
        parts.append(str(layout["schedule"]))
    return " ".join(parts)


def compare_csv_table(data: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """One row per plan: provenance, whether it fits and is current, the layout, the cloud price, the
    flags and the warnings, then for each metric its value, delta and delta in percent (units in the header);
    after all of those, for each metric its p10, p50 and p90 and whether its delta is within the uncertainty
    (empty where the report has no range). The range columns come last so that the earlier columns keep
    their places."""
    header = [*CSV_LEAD_COLUMNS, "layout", "flags", "warnings"]
    for metric in data["metrics"]:
        column = f"{metric['key']} [{metric['unit']}]"
        header += [column, f"{column} delta", f"{metric['key']} delta %"]
    for metric in data["metrics"]:
        column = f"{metric['key']} [{metric['unit']}]"
        header += [f"{column} {q}" for q in QUANTILES] + [f"{metric['key']} within uncertainty"]
    rows = []
    for item in data["items"]:
        row = [item[c] for c in CSV_LEAD_COLUMNS]
        row += [layout_text(item["layout"]), "; ".join(item["flags"]), "; ".join(item["warnings"])]
        for metric in data["metrics"]:
            cell = item["values"][metric["key"]]
            row += [cell["value"], cell["delta"], cell["delta_pct"]]
        for metric in data["metrics"]:
            cell = item["values"][metric["key"]]
            spread = cell.get("range") or {}
            row += [spread.get(q) for q in QUANTILES] + [cell.get("within_uncertainty")]
        rows.append(row)
    return header, rows
