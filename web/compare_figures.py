"""What the compare page draws and prints from the API's comparison table (``api.compare.compare_table``).

Charts get plain numbers in the unit on their axis (tonnes, cubic metres, days), the table gets the figures
printed with the ``planner_format`` filters (a few significant digits and a unit); the full precision stays
in the API and its CSV.

Ranges: a report may carry a p10/p50/p90 range of a headline figure in its top-level ``ranges`` keyed by
the figure's path (``{"ranges": {"schedule.wall_clock_days": {"p10": 21.0, "p50": 23.5, "p90": 27.2}}}``,
what the solver writes), or beside it as a section's ``range`` mapping or a ``<figure>_range`` sibling
(``api.compare.figure_range``).
Where one is present the table prints p10-p90 and the chart draws it as an error bar, and a delta the API
marks ``within_uncertainty`` (the ranges overlap) says so; where none is, nothing is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from django.utils.safestring import mark_safe

from api.compare import CompareItem, figure_range, report_number
from web.templatetags.planner_format import binary_bytes, pct, si, sig, signed_pct, tonnes_co2e, usd

# --- ranges: read by the API's table (``api.compare.figure_range``) -------------------------------------

# --- printed figures --------------------------------------------------------------------------------------


def _with(unit: str) -> Callable[[float], str]:
    return lambda value: f"{sig(value)} {unit}"


FORMATS: dict[str, Callable[[float], str]] = {
    "USD": usd,
    "USD/Mtok": lambda value: f"{usd(value)}/Mtok",
    "fraction": pct,
    "bytes": binary_bytes,
    "tokens/s": lambda value: f"{si(value)} tokens/s",
    "count": sig,
}


def figure(value: float | None, unit: str) -> str:
    """A figure as a reader takes it in: ``8.53 s``, ``$42.7 k``, ``47.4%``, ``65.3 GiB``; — when absent."""
    if value is None:
        return "—"
    return FORMATS.get(unit, _with(unit))(value)


def signed_figure(delta: float | None, unit: str) -> str:
    """A difference with its sign: ``+0.61 s``, ``−$1.2 k`` (a fraction's difference in points)."""
    if delta is None:
        return "—"
    if unit == "fraction":
        return f"{signed_pct(100 * delta)[:-1]} pts"
    text = figure(abs(delta), unit)
    return f"{'+' if delta > 0 else '−' if delta < 0 else '±'}{text}"


# Figures where more is better; for every other figure less is better (time, cost, carbon, memory).
HIGHER_IS_BETTER = frozenset(
    {"step.tokens_per_s", "step.mfu", "reliability.goodput", "memory.capacity_bytes"}
)

GROUP_TITLES = {
    "step": "Step time",
    "time": "Time to train",
    "reliability": "Reliability",
    "energy": "Energy",
    "carbon": "Carbon and water",
    "tco": "Cost",
    "memory": "Memory",
}


def _direction(key: str, delta: float | None) -> str:
    if delta is None or delta == 0:
        return ""
    better = (delta > 0) == (key in HIGHER_IS_BETTER)
    return "better" if better else "worse"


def delta_table(table: Mapping[str, Any], items: Sequence[CompareItem]) -> dict[str, Any]:
    """The rows of the table of differences: one per metric (grouped, rows without any figure left out), one
    cell per plan with its value, its difference and percentage against the baseline, and its range."""
    base_index = next(i for i, row in enumerate(table["items"]) if row["baseline"])
    groups: list[dict[str, Any]] = []
    for metric in table["metrics"]:
        key, unit = metric["key"], metric["unit"]
        cells_in = [row["values"][key] for row in table["items"]]
        if all(cell["value"] is None for cell in cells_in):
            continue
        cells = []
        for index, cell in enumerate(cells_in):
            spread = cell.get("range")
            cells.append(
                {
                    "value": figure(cell["value"], unit),
                    "baseline": index == base_index,
                    "delta": signed_figure(cell["delta"], unit),
                    "pct": signed_pct(cell["delta_pct"]),
                    "direction": _direction(key, cell["delta"]),
                    "range": None
                    if spread is None
                    else f"{figure(spread['p10'], unit)} – {figure(spread['p90'], unit)}",
                    "within": bool(cell.get("within_uncertainty")) and index != base_index,
                }
            )
        if not groups or groups[-1]["key"] != metric["group"]:
            groups.append(
                {
                    "key": metric["group"],
                    "title": GROUP_TITLES.get(metric["group"], metric["group"]),
                    "rows": [],
                }
            )
        groups[-1]["rows"].append(
            {
                "key": key,
                "label": metric["label"],
                "unit": unit,
                "cells": cells,
                "cells_html": mark_safe("".join(cell_html(cell) for cell in cells)),  # cell_html escapes
            }
        )
    return {"groups": groups}


def cell_html(cell: Mapping[str, Any]) -> str:
    """One cell of the table as HTML, every text escaped: a 10-plan table has some 300 cells, and building
    them here costs a fraction of what the template's loops and conditions (or ``format_html``) do."""
    html = f'<td class="num"><span class="value">{escape(cell["value"])}</span>'
    if cell["range"]:
        html += f'<span class="range">p10–p90 {escape(cell["range"])}</span>'
    if not cell["baseline"]:
        within = cell["within"]
        classes = " ".join(
            c for c in ("delta", cell["direction"], "within-uncertainty" if within else "") if c
        )
        note = " within uncertainty" if within else ""
        html += f'<span class="{classes}">{escape(cell["delta"])} ({escape(cell["pct"])}){note}</span>'
    return html + "</td>"


# --- charts -----------------------------------------------------------------------------------------------

STEP_PARTS = (
    ("step.compute_s", "Compute"),
    ("step.bubble_s", "Pipeline bubble"),
    *(
        (f"step.exposed_comm_s.{axis}", f"Exposed {axis.upper()} communication")
        for axis in ("tp", "cp", "pp", "dp", "ep")
    ),
)
TCO_PARTS = (
    ("tco.capex_usd", "Capital cost (amortized)"),
    ("tco.maintenance_usd", "Maintenance"),
    ("tco.electricity_usd", "Electricity"),
)


def _series(items: Sequence[CompareItem], key: str, scale: float = 1.0) -> list[float | None]:
    out = []
    for item in items:
        value = report_number(item.report, key)
        out.append(None if value is None else value * scale)
    return out


def _ranges(items: Sequence[CompareItem], key: str, scale: float = 1.0) -> list[dict[str, float] | None]:
    out: list[dict[str, float] | None] = []
    for item in items:
        spread = figure_range(item.report, key)
        out.append(None if spread is None else {q: v * scale for q, v in spread.items()})
    return out


def _dataset(label: str, values: list[float | None], stack: str = "plan") -> dict[str, Any]:
    return {"label": label, "values": values, "stack": stack}


def _summary(title: str, items: Sequence[CompareItem], totals: Sequence[str]) -> str:
    """The chart in words for a screen reader (the canvas's aria-label): each plan's headline figure."""
    parts = [f"{item.plan_name}: {total}" for item, total in zip(items, totals, strict=True)]
    return f"{title}. " + "; ".join(parts) + "."


def chart_specs(table: Mapping[str, Any], items: Sequence[CompareItem]) -> list[dict[str, Any]]:
    """The five charts: datasets per series (values in the axis unit, one per plan), the error bars of the
    headline figure where reports carry ranges (``ranges.dataset`` is the bar they sit on), and a summary."""

    def cell(row: Mapping[str, Any], key: str) -> float | None:
        value = row["values"][key]["value"]
        return value if isinstance(value, float) else None

    rows = table["items"]
    step = [_dataset(label, _series(items, key)) for key, label in STEP_PARTS]
    tco = [_dataset(label, _series(items, key)) for key, label in TCO_PARTS]
    cloud = _series(items, "tco.cloud_usd")
    has_cloud = any(value is not None for value in cloud)
    if has_cloud:
        tco.append(_dataset("Cloud alternative (same GPU-hours)", cloud, stack="cloud"))

    def tco_total(row: Mapping[str, Any]) -> str:
        text = figure(cell(row, "tco.total_usd"), "USD")
        cloud_total = cell(row, "tco.cloud_usd")
        return text if cloud_total is None else f"{text} (cloud {figure(cloud_total, 'USD')})"

    specs: list[dict[str, Any]] = [
        {
            "id": "step",
            "title": "Step-time budget",
            "axis": "Seconds per step",
            "datasets": step,
            "ranges": {"dataset": len(step) - 1, "values": _ranges(items, "step.step_s")},
            "summary": _summary(
                "Step-time budget per plan: compute, pipeline bubble and exposed communication, stacked",
                items,
                [figure(cell(row, "step.step_s"), "s") for row in rows],
            ),
        },
        {
            "id": "tco",
            "title": "Total cost of ownership",
            "axis": "US dollars",
            "datasets": tco,
            "ranges": {"dataset": len(TCO_PARTS) - 1, "values": _ranges(items, "tco.total_usd")},
            "summary": _summary(
                "Total cost of ownership per plan: capital, maintenance and electricity, stacked"
                + (", with the cloud alternative beside it" if has_cloud else ""),
                items,
                [tco_total(row) for row in rows],
            ),
        },
        {
            "id": "carbon",
            "title": "Carbon",
            "axis": "Tonnes CO2e",
            "datasets": [
                _dataset("Operational", _series(items, "carbon.operational_kgco2e", 1e-3)),
                _dataset("Embodied", _series(items, "carbon.embodied_kgco2e", 1e-3)),
            ],
            "ranges": {"dataset": 1, "values": _ranges(items, "carbon.total_kgco2e", 1e-3)},
            "summary": _summary(
                "Carbon per plan in tonnes CO2e: operational and embodied, stacked",
                items,
                [_tonnes(cell(row, "carbon.total_kgco2e")) for row in rows],
            ),
        },
        {
            "id": "water",
            "title": "Water",
            "axis": "Cubic metres",
            "datasets": [_dataset("Water", _series(items, "carbon.water_l", 1e-3))],
            "ranges": {"dataset": 0, "values": _ranges(items, "carbon.water_l", 1e-3)},
            "summary": _summary(
                "Water per plan in cubic metres",
                items,
                [_cubic_metres(cell(row, "carbon.water_l")) for row in rows],
            ),
        },
        {
            "id": "days",
            "title": "Time to train",
            "axis": "Days",
            "datasets": [
                _dataset("Without failures", _series(items, "schedule.ideal_days"), stack="ideal"),
                _dataset("Wall clock", _series(items, "schedule.wall_clock_days"), stack="wall"),
            ],
            "ranges": {"dataset": 1, "values": _ranges(items, "schedule.wall_clock_days")},
            "summary": _summary(
                "Time to train per plan in days, without failures and wall clock",
                items,
                [
                    f"{figure(cell(row, 'schedule.wall_clock_days'), 'days')} wall clock, "
                    f"{figure(cell(row, 'schedule.ideal_days'), 'days')} without failures"
                    for row in rows
                ],
            ),
        },
    ]
    for spec in specs:
        if all(spread is None for spread in spec["ranges"]["values"]):
            spec["ranges"] = None
    return specs


_tonnes = tonnes_co2e


def _cubic_metres(litres: float | None) -> str:
    return figure(None if litres is None else litres / 1e3, "m³")
