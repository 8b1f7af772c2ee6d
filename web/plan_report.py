"""A plan's report as people read it, and what changed between its result versions.

The report document (CONTRACT.md) keeps full precision; here each figure becomes a row with a label and a
printed value (``planner_format``: a few significant digits and a unit). What changed between two versions
is the API's diff (``api.diffing.changes``), so the page and ``/results/<id>/diff/`` never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from api.compare import figure_range, layout_text, report_number
from api.diffing import changes
from scenarios.models import Plan, Result
from web.plan_forms import catalog
from web.templatetags.planner_format import pct, si, sig, signed_pct, tonnes_co2e, usd, with_unit

unit = with_unit
seconds = with_unit("s")
tonnes = tonnes_co2e


def prefixed(value: Any, base: str) -> str:
    """A value with an SI prefix on its unit (``prefixed(8e10, "B")`` -> ``80.0 GB``)."""
    text = si(value)
    if text == "—":
        return text
    return f"{text}{base}" if text[-1].isalpha() else f"{text} {base}"


def gigabytes(value: Any) -> str:
    """Bytes in the decimal units the catalog and report use (80e9 -> ``80.0 GB``)."""
    return prefixed(value, "B")


def kwh(value: Any) -> str:
    """kWh with a prefix on the watt-hours (34,040 kWh -> ``34.0 MWh``)."""
    number = report_number({"v": value}, "v")
    return "—" if number is None else prefixed(number * 1000, "Wh")


def count(value: Any) -> str:
    return si(value)


@dataclass(frozen=True)
class Row:
    label: str
    value: str
    share: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    rows: tuple[Row, ...]
    note: str = ""


def _rows(
    report: Mapping[str, Any], spec: Iterable[tuple[str, str, Callable[[Any], str]]]
) -> tuple[Row, ...]:
    out = []
    for label, path, printer in spec:
        value = report_number(report, path)
        if value is not None:
            out.append(Row(label=label, value=printer(value)))
    return tuple(out)


def _get(report: Mapping[str, Any], path: str) -> Any:
    node: Any = report
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


HEADLINES: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("Step time", "step.step_s", seconds),
    ("MFU", "step.mfu", pct),
    ("Time to train", "schedule.wall_clock_days", unit("days")),
    ("TCO", "tco.total_usd", usd),
    ("$ per million tokens", "tco.usd_per_million_tokens", usd),
    ("Carbon", "carbon.total_kgco2e", tonnes),
)


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    range: str = ""


def headline_cards(report: Mapping[str, Any]) -> list[Card]:
    """The six figures a reader looks at first, each with its p10-p90 range when the report has one."""
    cards = []
    for label, path, printer in HEADLINES:
        band = figure_range(report, path)  # the compare page's reading, so both pages print one range
        span = f"p10–p90: {printer(band['p10'])} – {printer(band['p90'])}" if band is not None else ""
        cards.append(Card(label=label, value=printer(report_number(report, path)), range=span))
    return cards


AXES = ("tp", "cp", "pp", "dp", "ep")


def step_budget(report: Mapping[str, Any]) -> Section:
    """Where a step's time goes: compute, the pipeline bubble and each exchange left exposed."""
    step_s = report_number(report, "step.step_s")
    parts = [("Compute", "step.compute_s"), ("Pipeline bubble", "step.bubble_s")]
    parts += [(f"Exposed {axis.upper()} communication", f"step.exposed_comm_s.{axis}") for axis in AXES]
    rows = []
    for label, path in parts:
        value = report_number(report, path)
        if value is None:
            continue
        share = pct(value / step_s) if step_s else ""
        rows.append(Row(label=label, value=seconds(value), share=share))
    rows.append(Row(label="Step time", value=seconds(step_s), share="100%" if step_s else ""))
    rows.extend(
        _rows(
            report,
            (
                ("Throughput", "step.tokens_per_s", lambda v: f"{si(v)} tokens/s"),
                ("MFU", "step.mfu", pct),
                ("Bubble fraction", "step.bubble_fraction", pct),
            ),
        )
    )
    return Section("Step-time budget", tuple(rows))


def memory(report: Mapping[str, Any]) -> Section:
    capacity = report_number(report, "memory.capacity_bytes")
    rows = []
    for label, path in (
        ("Weights", "memory.weights_bytes"),
        ("Gradients", "memory.grads_bytes"),
        ("Optimizer state", "memory.optimizer_bytes"),
        ("Activations", "memory.activations_bytes"),
        ("Total per GPU", "memory.total_bytes"),
    ):
        value = report_number(report, path)
        if value is not None:
            rows.append(Row(label, gigabytes(value), pct(value / capacity) if capacity else ""))
    rows.append(Row("Capacity per GPU", gigabytes(capacity), "100%" if capacity else ""))
    fits = _get(report, "memory.fits")
    note = (
        {True: "Fits in memory.", False: "Does not fit in memory."}.get(fits, "")
        if isinstance(fits, bool)
        else ""
    )
    return Section("Memory", tuple(rows), note=note)


def reliability(report: Mapping[str, Any]) -> Section:
    return Section(
        "Reliability",
        _rows(
            report,
            (
                ("Node MTBF", "reliability.node_mtbf_h", unit("h")),
                ("Cluster MTBF", "reliability.cluster_mtbf_h", unit("h")),
                ("Expected failures", "reliability.expected_failures", count),
                ("Checkpoint size", "reliability.checkpoint_bytes", gigabytes),
                ("Checkpoint write time", "reliability.checkpoint_write_s", seconds),
                ("Checkpoint interval", "reliability.checkpoint_interval_h", unit("h")),
                ("Hours lost to checkpoint writes", "reliability.lost_h.checkpoint_writes", unit("h")),
                ("Hours lost to rework", "reliability.lost_h.rework", unit("h")),
                ("Hours lost to restarts", "reliability.lost_h.restarts", unit("h")),
                ("Goodput", "reliability.goodput", pct),
            ),
        ),
    )


def schedule(report: Mapping[str, Any]) -> Section:
    return Section(
        "Schedule",
        _rows(
            report,
            (
                ("Time to train without failures", "schedule.ideal_days", unit("days")),
                ("Time to train (wall clock)", "schedule.wall_clock_days", unit("days")),
                ("Steps", "schedule.steps", count),
                ("Tokens", "schedule.tokens", count),
                ("Window", "schedule.window_days", unit("days")),
            ),
        ),
    )


def energy(report: Mapping[str, Any]) -> Section:
    return Section(
        "Energy",
        _rows(
            report,
            (
                ("IT energy", "energy.it_kwh", kwh),
                ("Facility energy", "energy.facility_kwh", kwh),
                ("Mean IT power", "energy.mean_it_power_kw", unit("kW")),
            ),
        ),
    )


def carbon(report: Mapping[str, Any]) -> Section:
    return Section(
        "Carbon",
        _rows(
            report,
            (
                ("Operational", "carbon.operational_kgco2e", tonnes),
                ("Embodied", "carbon.embodied_kgco2e", tonnes),
                ("Total", "carbon.total_kgco2e", tonnes),
                ("Water", "carbon.water_l", unit("L")),
            ),
        ),
    )


def tco(report: Mapping[str, Any]) -> Section:
    rows = _rows(
        report,
        (
            ("Capital cost (amortized)", "tco.capex_usd", usd),
            ("Maintenance", "tco.maintenance_usd", usd),
            ("Electricity", "tco.electricity_usd", usd),
            ("Cost of failures", "tco.failure_cost_usd", usd),
            ("Cost of checkpoint writes", "tco.checkpoint_cost_usd", usd),
            ("Total cost", "tco.total_usd", usd),
            ("Cost per million tokens", "tco.usd_per_million_tokens", usd),
        ),
    )
    cloud = report_number(report, "tco.cloud_usd")
    cloud_row = Row(
        "Cloud alternative (same GPU-hours)", usd(cloud) if cloud is not None else "no cloud price given"
    )
    return Section("TCO", (*rows, cloud_row))


def report_sections(report: Mapping[str, Any]) -> list[Section]:
    return [
        step_budget(report),
        memory(report),
        reliability(report),
        schedule(report),
        energy(report),
        carbon(report),
        tco(report),
    ]


def shown_report(result: Result | None) -> Mapping[str, Any] | None:
    """The report a page shows: a solve's own, or the best point of a search or sweep."""
    if result is None or not isinstance(result.report, Mapping):
        return None
    best = result.report.get("best")
    return best if isinstance(best, Mapping) else result.report


def assumption_value(value: Any) -> str:
    """An input as a reader takes it in: numbers to four significant digits, lists and text as they are."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return sig(value, 4)
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(assumption_value(item) for item in value) or "none"
    return str(value)


@dataclass(frozen=True)
class Assumption:
    key: str
    value: str
    unit: str
    source: str


def assumptions(report: Mapping[str, Any]) -> list[Assumption]:
    entries = report.get("assumptions")
    if not isinstance(entries, list):
        return []
    return [
        Assumption(
            key=str(entry.get("key", "")),
            value=assumption_value(entry.get("value")),
            unit=str(entry.get("unit") or ""),
            source=str(entry.get("source") or ""),
        )
        for entry in entries
        if isinstance(entry, Mapping)
    ]


def layout_rows(report: Mapping[str, Any]) -> list[Row]:
    layout = report.get("layout")
    if not isinstance(layout, Mapping):
        return []
    return [Row(label=str(key), value=assumption_value(value)) for key, value in layout.items()]


def layout_summary(report: Mapping[str, Any]) -> str:
    return layout_text(report.get("layout"))


# --- Result versions ----------------------------------------------------------------------------------

# The headline figures a version compares, from the result's promoted columns: {report path: column}.
HEADLINE_COLUMNS: dict[str, str] = {
    "step.step_s": "step_s",
    "step.mfu": "mfu",
    "schedule.wall_clock_days": "wall_clock_days",
    "tco.total_usd": "total_usd",
    "tco.usd_per_million_tokens": "usd_per_million_tokens",
    "carbon.total_kgco2e": "total_kgco2e",
}
HEADLINE_LABELS = {path: label for label, path, _ in HEADLINES}
HEADLINE_PRINTERS = {path: printer for _, path, printer in HEADLINES}
SHOWN_INPUT_CHANGES = 8


@dataclass(frozen=True)
class FigureChange:
    label: str
    before: str
    after: str
    change: str
    direction: str  # "up" (worse: app.css colours it as a risk), "down" (better) or ""


@dataclass
class Version:
    result: Result
    current: bool
    stale_reasons: tuple[str, ...]
    previous_version: int | None = None
    figures: list[FigureChange] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    more_inputs: int = 0
    prices_changed: int = 0


# A higher MFU is better; for every other headline figure (time, money, carbon) lower is better.
HIGHER_IS_BETTER = frozenset({"step.mfu"})


def _direction(path: str, delta_pct: float | None) -> str:
    if not delta_pct:
        return ""
    worse = delta_pct < 0 if path in HIGHER_IS_BETTER else delta_pct > 0
    return "up" if worse else "down"


def _headline(result: Result) -> dict[str, Any]:
    return {path: getattr(result, column) for path, column in HEADLINE_COLUMNS.items()}


def versions(results: list[Result], currency: Mapping[int, Any]) -> list[Version]:
    """Every result, newest first, each with what changed against the previous result of its kind (the
    API's diff: ``api.diffing.changes`` over the headline figures, the inputs and the prices)."""
    out: list[Version] = []
    last_of_kind: dict[str, Result] = {}
    for result in sorted(results, key=lambda r: r.version):
        state = currency.get(result.pk)
        version = Version(
            result=result,
            current=bool(state and state.current),
            stale_reasons=tuple(state.reasons) if state else (),
        )
        before = last_of_kind.get(result.kind)
        if before is not None:
            version.previous_version = before.version
            moved = {change["path"]: change for change in changes(_headline(before), _headline(result))}
            for path in (path for _, path, _ in HEADLINES if path in moved):
                change = moved[path]
                printer = HEADLINE_PRINTERS[path]
                delta_pct = change["delta_pct"]
                version.figures.append(
                    FigureChange(
                        label=HEADLINE_LABELS[path],
                        before=printer(change["before"]),
                        after=printer(change["after"]),
                        change=signed_pct(delta_pct) if delta_pct is not None else "",
                        direction=_direction(path, delta_pct),
                    )
                )
            inputs = [change["path"] for change in changes(before.input_snapshot, result.input_snapshot)]
            version.inputs = inputs[:SHOWN_INPUT_CHANGES]
            version.more_inputs = max(0, len(inputs) - SHOWN_INPUT_CHANGES)
            version.prices_changed = len(changes(before.prices, result.prices))
        last_of_kind[result.kind] = result
        out.append(version)
    out.reverse()
    return out


# --- A plan's set-up in a few words -------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    model: str
    accelerator: str
    gpus: Any
    region: str


def plan_setup(plan: Plan) -> Setup:
    """Model, accelerator, GPU count and region from the documents the plan solves now (its pinned
    revisions, else its scenarios' latest: load ``adapters.PLAN_RELATED`` to make this query-free)."""
    documents: dict[str, Mapping[str, Any]] = {}
    for part in ("cluster", "model", "site"):
        revision = getattr(plan, f"{part}_revision") or getattr(plan, part).latest_revision
        document = revision.document if revision is not None else None
        documents[part] = document if isinstance(document, Mapping) else {}
    model_doc, cluster_doc, site_doc = documents["model"], documents["cluster"], documents["site"]
    model = model_doc.get("preset") or model_doc.get("name") or "custom model"
    accelerator = cluster_doc.get("accelerator")
    if isinstance(accelerator, Mapping):
        accelerator = accelerator.get("preset") or accelerator.get("name") or "custom accelerator"
    if not accelerator and cluster_doc.get("node"):
        node = catalog()["nodes"].get(str(cluster_doc["node"])) or {}
        accelerator = node.get("accelerator") or str(cluster_doc["node"])
    region = site_doc.get("region") or "custom site"
    return Setup(
        model=str(model),
        accelerator=str(accelerator or "—"),
        gpus=cluster_doc.get("gpus"),
        region=str(region),
    )
