"""The ledger: from a step time to failures, checkpoints, schedule, energy, carbon, water and TCO.

``compute_ledger`` takes the resolved inputs of one scenario (``LedgerInputs``; defaults come from
``solvers.ledger_defaults`` and ``solvers.catalog.regions``) and returns the ``reliability``, ``schedule``,
``energy``, ``carbon`` and ``tco`` sections of the report document (CONTRACT.md) with the conventions it
used in ``assumptions``. Each figure is computed once, from the same inputs: the interval is optimised on
the real checkpoint write time, the goodput that lengthens the schedule is the one that sets the energy
and the bill.

Per-layout inputs (``step_s``, ``gpu_busy_fraction``, ``tokens_per_step``) may be numpy arrays; every
numeric output is then an array of their broadcast shape, otherwise a python float. Reliability and
checkpoint figures do not depend on the layout and are broadcast for uniformity.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt

from solvers import checkpoint as ckpt
from solvers import economics as econ
from solvers import reliability as rel
from solvers import sustainability as sus
from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.ledger_defaults import DEFAULTS, GOODPUT_LEDGERS, INTERVAL_METHODS, MTBF_CONVENTIONS
from solvers.plain import (
    all_plain_finite,
    fresh_entries,
    has_non_finite,
    plain_key,
    read_only_entries,
    to_plain,
)

Num: TypeAlias = float | npt.NDArray[np.float64]

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0


# Not frozen: a frozen dataclass of 38 fields costs several microseconds to build (one object.__setattr__
# per field), paid by every report; slots keep the fields fixed and their reads fast.
@dataclass(slots=True)
class LedgerInputs:
    # per-layout quantities: float or numpy float64 arrays, broadcastable together
    step_s: Num
    gpu_busy_fraction: Num  # compute_s / step_s in 0..1: GPU power between idle_fraction*TDP and TDP
    tokens_per_step: Num  # global batch tokens per optimizer step
    # cluster
    gpus: int
    gpus_per_node: int
    accelerator_tdp_w: float
    accelerator_unit_price_usd: float
    accelerator_embodied_kgco2e: float
    gpu_mttf_h: float
    nic_mttf_h: float
    psu_mttf_h: float
    nics_per_node: int
    psus_per_node: int
    other_mttf_h: tuple[float, ...]
    restart_s: float
    storage_write_gb_s: float  # aggregate file-system cap, 1e9 B/s
    storage_per_writer_gb_s: float  # per writing node, 1e9 B/s
    host_w_per_node: float
    idle_fraction: float
    mtbf_convention: str
    # model / training
    params: float  # total parameters (MoE: all experts), for checkpoint size
    optimizer: str  # "adam" | "sgd"
    precision: str  # "bf16" | "fp16" | "fp8" | "fp32"
    total_tokens: float | None
    checkpoint_interval_h: float | None
    checkpoint_writers: int | None
    interval_method: str
    goodput_ledger: str
    # site
    grid_gco2_per_kwh: float
    pue: float
    wue_l_per_kwh: float
    electricity_usd_per_kwh: float
    # economics
    job_days: float | None
    amortization_years: float
    infra_multiplier: float
    maintenance_per_year: float
    cloud_usd_per_gpu_hour: float | None
    embodied_lifetime_years: float


class LedgerResult(NamedTuple):
    """The report's ledger sections, their assumptions and warnings (one made per report: a named tuple)."""

    reliability: dict[str, Any]
    schedule: dict[str, Any]
    energy: dict[str, Any]
    carbon: dict[str, Any]
    tco: dict[str, Any]
    assumptions: list[dict[str, Any]]
    warnings: list[str]


# Scenario-document path of every LedgerInputs field that the scenario (or a default) supplies; errors and
# defaults are keyed by these paths.
FIELD_PATHS: dict[str, str] = {
    "gpus": "cluster.gpus",
    "gpus_per_node": "cluster.gpus_per_node",
    "accelerator_tdp_w": "cluster.accelerator.tdp_w",
    "accelerator_unit_price_usd": "cluster.accelerator.unit_price_usd",
    "accelerator_embodied_kgco2e": "cluster.accelerator.embodied_kgco2e",
    "gpu_mttf_h": "cluster.reliability.gpu_mttf_h",
    "nic_mttf_h": "cluster.reliability.nic_mttf_h",
    "psu_mttf_h": "cluster.reliability.psu_mttf_h",
    "nics_per_node": "cluster.reliability.nics_per_node",
    "psus_per_node": "cluster.reliability.psus_per_node",
    "other_mttf_h": "cluster.reliability.other_mttf_h",
    "restart_s": "cluster.reliability.restart_s",
    "mtbf_convention": "cluster.reliability.mtbf_convention",
    "storage_write_gb_s": "cluster.storage.write_gb_s",
    "storage_per_writer_gb_s": "cluster.storage.per_writer_gb_s",
    "host_w_per_node": "cluster.power.host_w_per_node",
    "idle_fraction": "cluster.power.idle_fraction",
    "params": "model.params",
    "optimizer": "training.optimizer",
    "precision": "training.precision",
    "total_tokens": "training.total_tokens",
    "checkpoint_interval_h": "training.checkpoint.interval_h",
    "checkpoint_writers": "training.checkpoint.writers",
    "interval_method": "training.checkpoint.interval_method",
    "goodput_ledger": "training.checkpoint.goodput_ledger",
    "grid_gco2_per_kwh": "site.grid_gco2_per_kwh",
    "pue": "site.pue",
    "wue_l_per_kwh": "site.wue_l_per_kwh",
    "electricity_usd_per_kwh": "site.electricity_usd_per_kwh",
    "job_days": "economics.job_days",
    "amortization_years": "economics.amortization_years",
    "infra_multiplier": "economics.infra_multiplier",
    "maintenance_per_year": "economics.maintenance_per_year",
    "cloud_usd_per_gpu_hour": "economics.cloud_usd_per_gpu_hour",
    "embodied_lifetime_years": "economics.embodied_lifetime_years",
}


def ledger_inputs_with_defaults(*, region: str | None = None, **given: Any) -> LedgerInputs:
    """``LedgerInputs`` from the fields given, the rest from ``region`` and ``DEFAULTS``.

    Order of precedence: a field given here, then the region's ``site.*`` value (``region`` or the
    ``site.region`` default), then ``DEFAULTS``. ``nics_per_node`` left out means one NIC per GPU. Fields
    without a default (the per-layout step figures, GPU count, accelerator data, ``params``, ``optimizer``,
    ``precision``, ``total_tokens``, ``job_days``) must be given; ``total_tokens`` and ``job_days`` may be
    ``None``.
    Example: ``ledger_inputs_with_defaults(region="quebec", step_s=10.0, gpu_busy_fraction=0.8,
    tokens_per_step=4e6, gpus=512, gpus_per_node=8, accelerator_tdp_w=700, accelerator_unit_price_usd=25e3,
    accelerator_embodied_kgco2e=150, params=70.6e9, optimizer="adam", precision="bf16", total_tokens=None,
    job_days=None)``.
    """
    from solvers.catalog.regions import REGIONS

    region_key = region if region is not None else DEFAULTS["site.region"].value
    site: dict[str, Any] = {}
    if region_key is not None:
        if region_key not in REGIONS:
            raise ScenarioError.single("site.region", f"unknown region {region_key!r}")
        site = REGIONS[str(region_key)]
    values: dict[str, Any] = {}
    for name, path in FIELD_PATHS.items():
        if name in given:
            values[name] = given[name]
        elif path.startswith("site.") and path.removeprefix("site.") in site:
            values[name] = site[path.removeprefix("site.")]
        elif path in DEFAULTS:
            values[name] = DEFAULTS[path].value
    if values.get("nics_per_node") is None and "gpus_per_node" in values:
        values["nics_per_node"] = values["gpus_per_node"]
    values["other_mttf_h"] = tuple(values.get("other_mttf_h", ()))
    for name in ("step_s", "gpu_busy_fraction", "tokens_per_step"):
        if name in given:
            values[name] = given[name]
    unknown = set(given) - set(values)
    if unknown:
        raise ScenarioError.single("", f"unknown ledger input(s): {', '.join(sorted(unknown))}")
    missing = [n for n in LedgerInputs.__dataclass_fields__ if n not in values]
    if missing:
        raise ScenarioError(
            [FieldError(path=FIELD_PATHS.get(n, f"step.{n}"), message="is required") for n in missing]
        )
    return LedgerInputs(**values)


def compute_ledger(
    inp: LedgerInputs,
    *,
    notes: LedgerNotes | None = None,
    step: tuple[Num, Num, Num] | None = None,
) -> LedgerResult:
    """Reliability, schedule, energy, carbon, water and TCO of one scenario over one or many layouts.

    Equations (each in the module named): node MTBF in series and cluster MTBF = node / nodes
    (``reliability``); checkpoint bytes and write time, Young or Daly interval (``checkpoint``); goodput
    and lost-time split under the named ledger (``reliability.goodput_shares``); wall-clock = ideal /
    goodput; IT energy from utilisation-scaled TDP plus host power, facility = IT x PUE, operational and
    amortised embodied carbon, water = WUE x IT (``sustainability``); amortised capex, maintenance,
    electricity, cloud alternative (``economics``).
    Example: 512 H100, Llama-3-70B (70.6e9 params, Adam bf16), one writer at 7 GB/s, 30-day window:
    node MTBF 4,285.71 h, cluster 66.96 h, checkpoint 988.4 GB written in 141.2 s, interval 2.27 h (daly)
    or 2.29 h (young).

    ``notes`` (from ``ledger_notes``) are the checked assumptions of ``inp``'s scenario values, kept by a
    caller that solves one scenario again and again; with them, ``step`` may give the per-layout values
    ``(step_s, gpu_busy_fraction, tokens_per_step)`` in place of ``inp``'s, so that one LedgerInputs serves
    every layout of that scenario.
    """
    if step is None:
        step = (inp.step_s, inp.gpu_busy_fraction, inp.tokens_per_step)
    elif notes is None:
        raise ValueError("compute_ledger: step= is for a caller that passes the scenario's notes= too")
    step_in, busy_in, tokens_in = step
    if notes is None:
        assumptions = _checked_assumptions(inp)
    else:  # ``ledger_notes`` checked these scenario values already; the step values are checked here
        if not _valid_step(step_in, busy_in, tokens_in):
            _validate(_with_step(inp, step))
        assumptions = fresh_entries(*notes)
    warnings: list[str] = []

    # One layout (python scalars) runs on python floats, the way the step engine runs a batch of one: the
    # same IEEE-754 operations as on 0-d arrays, so the same bits, without numpy's per-operation overhead.
    scalar = type(step_in) in _SCALARS and type(busy_in) in _SCALARS and type(tokens_in) in _SCALARS
    if scalar:
        step_s: Any = float(step_in)
        busy: Any = float(busy_in)
        tokens_per_step: Any = float(tokens_in)
        shape: tuple[int, ...] = ()
    else:
        step_s = np.asarray(step_in, dtype=np.float64)
        busy = np.asarray(busy_in, dtype=np.float64)
        tokens_per_step = np.asarray(tokens_in, dtype=np.float64)
        shape = np.broadcast_shapes(step_s.shape, busy.shape, tokens_per_step.shape)
        scalar = shape == ()

    if scalar:
        # python floats; every block is checked for NaN and infinity in one walk at the end
        out: Any = float

    else:

        def out(value: Num) -> Num:
            array = np.broadcast_to(np.asarray(value, dtype=np.float64), shape)
            if not np.isfinite(array).all():
                raise SolverInternalError("the ledger produced a non-finite number")
            return array.copy()

    # --- reliability -------------------------------------------------------------------------------------
    nodes = math.ceil(inp.gpus / inp.gpus_per_node)
    node_mtbf_h = rel.node_mtbf_h(
        gpus_per_node=inp.gpus_per_node,
        gpu_mttf_h=inp.gpu_mttf_h,
        nics_per_node=inp.nics_per_node,
        nic_mttf_h=inp.nic_mttf_h,
        psus_per_node=inp.psus_per_node,
        psu_mttf_h=inp.psu_mttf_h,
        other_mttf_h=inp.other_mttf_h,
    )
    node_series_mtbf_h = rel.cluster_mtbf_h(node_mtbf_h=node_mtbf_h, nodes=nodes)
    gpu_only_mtbf_h = rel.gpu_only_cluster_mtbf_h(gpu_mttf_h=inp.gpu_mttf_h, gpus=inp.gpus)
    cluster_mtbf_h = node_series_mtbf_h if inp.mtbf_convention == "node_series" else gpu_only_mtbf_h
    mtbf_s = cluster_mtbf_h * SECONDS_PER_HOUR

    bytes_per_param = ckpt.checkpoint_bytes_per_param(optimizer=inp.optimizer, precision=inp.precision)
    checkpoint_bytes = ckpt.checkpoint_bytes(
        params=inp.params, optimizer=inp.optimizer, precision=inp.precision
    )
    writers = (
        ckpt.default_checkpoint_writers(nodes=nodes)
        if inp.checkpoint_writers is None
        else inp.checkpoint_writers
    )
    write_gb_s = ckpt.checkpoint_write_bandwidth_gb_s(
        writers=writers, per_writer_gb_s=inp.storage_per_writer_gb_s, storage_cap_gb_s=inp.storage_write_gb_s
    )
    write_s = checkpoint_bytes / (write_gb_s * 1e9)

    optimum_s = ckpt.optimal_interval_s(method=inp.interval_method, checkpoint_write_s=write_s, mtbf_s=mtbf_s)
    if inp.checkpoint_interval_h is None:
        interval_s = optimum_s
        method_label = inp.interval_method
    else:
        interval_s = inp.checkpoint_interval_h * SECONDS_PER_HOUR
        method_label = "fixed"
        if interval_s < 0.5 * optimum_s or interval_s > 2.0 * optimum_s:
            warnings.append(
                f"checkpoint interval {inp.checkpoint_interval_h:g} h is outside 0.5x-2x of the "
                f"{inp.interval_method} optimum {optimum_s / SECONDS_PER_HOUR:.3g} h: more time goes to "
                + ("writes" if interval_s < optimum_s else "rework after failures")
            )

    shares = rel.goodput_shares(
        ledger=inp.goodput_ledger,
        interval_s=interval_s,
        checkpoint_write_s=write_s,
        restart_s=inp.restart_s,
        mtbf_s=mtbf_s,
    )
    if shares.floored:
        warnings.append(
            f"goodput under the {inp.goodput_ledger} ledger is not positive (checkpoint writes and "
            f"failures exceed the wall-clock time); floored at {rel.GOODPUT_FLOOR:g}"
        )
    elif shares.goodput < 0.5:
        warnings.append(
            f"goodput {shares.goodput:.3f}: more than half of the wall-clock time is lost to checkpoints "
            "and failures; faster storage or fewer, more reliable nodes would pay"
        )

    # --- schedule ----------------------------------------------------------------------------------------
    window_days: float | None = None
    if inp.total_tokens is not None:
        mode = "total_tokens"
        steps = _ceil(inp.total_tokens / tokens_per_step)
        tokens = steps * tokens_per_step
        ideal_s = steps * step_s
        wall_s = ideal_s / shares.goodput
        if inp.job_days is not None:
            window_days = inp.job_days
            longest_days = float(wall_s if scalar else np.max(wall_s)) / SECONDS_PER_HOUR / HOURS_PER_DAY
            if longest_days > inp.job_days:
                warnings.append(
                    f"training.total_tokens needs {longest_days:.1f} wall-clock days, more than "
                    f"economics.job_days = {inp.job_days:g}"
                )
    else:
        if inp.job_days is not None:
            mode = "job_days"
            window_days = inp.job_days
        else:
            mode = "default_window"
            window = DEFAULTS["economics.window_days"]
            window_days = float(window.value)  # type: ignore[arg-type]
        window_s = window_days * HOURS_PER_DAY * SECONDS_PER_HOUR
        wall_s = window_s if scalar else np.full(shape, window_s)
        ideal_s = wall_s * shares.goodput
        steps = _floor(ideal_s / step_s)
        tokens = steps * tokens_per_step

    wall_h = wall_s / SECONDS_PER_HOUR
    wall_days = wall_h / HOURS_PER_DAY
    lost_writes_h = wall_h * shares.checkpoint_writes
    lost_rework_h = wall_h * shares.rework
    lost_restarts_h = wall_h * shares.restarts
    failures = wall_h / cluster_mtbf_h
    checkpoints = wall_h * shares.goodput * SECONDS_PER_HOUR / interval_s

    # --- energy, carbon, water ---------------------------------------------------------------------------
    running_h = wall_h * (shares.goodput + shares.rework)
    stalled_h = wall_h * (shares.checkpoint_writes + shares.restarts)
    it_kwh = sus.it_energy_kwh(
        gpus=inp.gpus,
        nodes=nodes,
        tdp_w=inp.accelerator_tdp_w,
        busy_fraction=busy,
        idle_fraction=inp.idle_fraction,
        host_w_per_node=inp.host_w_per_node,
        running_h=running_h,
        stalled_h=stalled_h,
    )
    facility_kwh = sus.facility_energy_kwh(it_kwh=it_kwh, pue=inp.pue)
    operational = sus.operational_carbon_kgco2e(
        facility_kwh=facility_kwh, grid_gco2_per_kwh=inp.grid_gco2_per_kwh
    )
    embodied = sus.embodied_carbon_kgco2e(
        accelerators=inp.gpus,
        embodied_kgco2e_per_accelerator=inp.accelerator_embodied_kgco2e,
        duration_h=wall_h,
        lifetime_years=inp.embodied_lifetime_years,
    )
    water = sus.water_l(it_kwh=it_kwh, wue_l_per_kwh=inp.wue_l_per_kwh)

    # --- TCO ---------------------------------------------------------------------------------------------
    capex_total = econ.capex_total_usd(
        unit_price_usd=inp.accelerator_unit_price_usd, gpus=inp.gpus, infra_multiplier=inp.infra_multiplier
    )
    capex = econ.amortized_capex_usd(
        capex_total_usd=capex_total, amortization_years=inp.amortization_years, duration_days=wall_days
    )
    maintenance = econ.maintenance_usd(
        capex_total_usd=capex_total, maintenance_per_year=inp.maintenance_per_year, duration_days=wall_days
    )
    electricity = econ.electricity_usd(facility_kwh=facility_kwh, usd_per_kwh=inp.electricity_usd_per_kwh)
    total = capex + maintenance + electricity
    per_mtok = econ.usd_per_million_tokens(total_usd=total, tokens=tokens)
    failure_share = shares.rework + shares.restarts
    cloud: Num | None = None
    if inp.cloud_usd_per_gpu_hour is not None:
        cloud = econ.cloud_usd(gpus=inp.gpus, duration_h=wall_h, usd_per_gpu_hour=inp.cloud_usd_per_gpu_hour)

    reliability = {
        "nodes": nodes,
        "node_mtbf_h": out(node_mtbf_h),
        "cluster_mtbf_h": out(cluster_mtbf_h),
        "mtbf_convention": inp.mtbf_convention,
        "node_series_cluster_mtbf_h": out(node_series_mtbf_h),
        "gpu_only_cluster_mtbf_h": out(gpu_only_mtbf_h),
        "expected_failures": out(failures),
        "checkpoint_bytes": out(checkpoint_bytes),
        "checkpoint_bytes_per_param": bytes_per_param,
        "checkpoint_writers": writers,
        "checkpoint_write_gb_s": out(write_gb_s),
        "checkpoint_write_s": out(write_s),
        "checkpoint_interval_h": out(interval_s / SECONDS_PER_HOUR),
        "checkpoint_interval_method": method_label,
        "optimal_interval_h": out(optimum_s / SECONDS_PER_HOUR),
        "checkpoints": out(checkpoints),
        "lost_h": {
            "checkpoint_writes": out(lost_writes_h),
            "rework": out(lost_rework_h),
            "restarts": out(lost_restarts_h),
        },
        "goodput": out(shares.goodput),
        "goodput_ledger": inp.goodput_ledger,
    }
    schedule = {
        "mode": mode,
        "ideal_days": out(ideal_s / SECONDS_PER_HOUR / HOURS_PER_DAY),
        "wall_clock_days": out(wall_days),
        "steps": out(steps),
        "tokens": out(tokens),
        "window_days": window_days,
    }
    energy = {
        "it_kwh": out(it_kwh),
        "facility_kwh": out(facility_kwh),
        "mean_it_power_kw": out(it_kwh / wall_h),
    }
    carbon = {
        "operational_kgco2e": out(operational),
        "embodied_kgco2e": out(embodied),
        "total_kgco2e": out(operational + embodied),
        "water_l": out(water),
    }
    tco = {
        "capex_usd": out(capex),
        "maintenance_usd": out(maintenance),
        "electricity_usd": out(electricity),
        "total_usd": out(total),
        "usd_per_million_tokens": out(per_mtok),
        "cloud_usd": None if cloud is None else out(cloud),
        "failure_cost_usd": out(total * failure_share),
        "checkpoint_cost_usd": out(total * shares.checkpoint_writes),
        "capex_share": out(capex / total)
        if (total > 0 if scalar else np.all(np.asarray(total) > 0))
        else out(0.0),
        "capex_total_usd": out(capex_total),
    }
    if scalar:
        blocks = (reliability, schedule, energy, carbon, tco)
        if not all_plain_finite(blocks) and has_non_finite(blocks):
            raise SolverInternalError("the ledger produced a non-finite number")
    return LedgerResult(
        reliability=reliability,
        schedule=schedule,
        energy=energy,
        carbon=carbon,
        tco=tco,
        assumptions=assumptions,
        warnings=warnings,
    )


# The assumptions of a ledger depend on its scenario inputs only, never on the step: they are formatted once
# per distinct input set, as read-only entries that every result shares (a list value is copied for each). A
# set of inputs is stored only after it passed ``_validate``, so a hit leaves only the three per-layout
# values to check. The key is the pickle of every scenario field (``plain_key``: 1, 1.0, True and -0.0 stay apart, so a hit means the very same values;
# inputs holding numpy scalars or other objects are simply not cached).
_SCENARIO_FIELDS: tuple[str, ...] = tuple(
    name
    for name in LedgerInputs.__dataclass_fields__
    if name not in ("step_s", "gpu_busy_fraction", "tokens_per_step")
)
_scenario_values = operator.attrgetter(*_SCENARIO_FIELDS)
_NOTES_CACHE_MAX = 1024
_NOTES_CACHE: dict[bytes, tuple[tuple[dict[str, Any], ...], tuple[int, ...]]] = {}


LedgerNotes: TypeAlias = tuple[tuple[dict[str, Any], ...], tuple[int, ...]]
"""The assumptions of one set of scenario values: read-only entries, and those with a list value."""


def ledger_notes(inp: LedgerInputs) -> LedgerNotes:
    """Validate ``inp`` (``ScenarioError`` naming the fields) and return the assumptions of its scenario
    values, for ``compute_ledger(..., notes=)`` on inputs with these very scenario values (only the three
    per-layout values may differ). A caller that keeps them for a scenario that never changes (a cached
    resolved scenario) skips keying the notes cache on every report."""
    key = plain_key(_scenario_values(inp))
    notes = _NOTES_CACHE.get(key) if key is not None else None
    if notes is None:
        _validate(inp)
        made = _ledger_notes(inp)
        if not all_plain_finite([note["value"] for note in made]):
            raise SolverInternalError("a ledger assumption is not a plain finite value")
        notes = read_only_entries(made)
        if key is not None:
            if len(_NOTES_CACHE) >= _NOTES_CACHE_MAX:
                _NOTES_CACHE.clear()
            _NOTES_CACHE[key] = notes
    elif not _valid_step(inp.step_s, inp.gpu_busy_fraction, inp.tokens_per_step):
        _validate(inp)  # names the broken per-layout value, or passes arrays that are valid
    return notes


def _checked_assumptions(inp: LedgerInputs) -> list[dict[str, Any]]:
    """Validate ``inp`` (``ScenarioError`` naming the fields) and return its assumptions (a fresh list of
    shared read-only entries, ``solvers.plain.ReadOnlyDict``)."""
    return fresh_entries(*ledger_notes(inp))


def _with_step(inp: LedgerInputs, step: tuple[Num, Num, Num]) -> LedgerInputs:
    step_s, busy, tokens = step
    return dataclasses.replace(inp, step_s=step_s, gpu_busy_fraction=busy, tokens_per_step=tokens)


def _valid_step(step_s: Any, busy: Any, tokens: Any) -> bool:
    """True when the three per-layout values are python numbers within their rules (``_validate``'s)."""
    return bool(
        type(step_s) in _SCALARS
        and type(busy) in _SCALARS
        and type(tokens) in _SCALARS
        and math.isfinite(step_s)
        and math.isfinite(busy)
        and math.isfinite(tokens)
        and step_s > 0
        and 0 <= busy <= 1
        and tokens > 0
    )


def _ledger_notes(inp: LedgerInputs) -> list[dict[str, Any]]:
    """The conventions and inputs ``compute_ledger`` used, in the order of the report's ``assumptions``."""
    notes: list[dict[str, Any]] = []

    def note(key: str, value: object, unit: str, source: str) -> None:
        notes.append({"key": key, "value": to_plain(value), "unit": unit, "source": source})

    nodes = math.ceil(inp.gpus / inp.gpus_per_node)
    if inp.mtbf_convention == "node_series":
        note(
            "reliability.mtbf_convention",
            "node_series",
            "",
            f"node MTBF = 1/({inp.gpus_per_node}/{inp.gpu_mttf_h:g} + {inp.nics_per_node}/{inp.nic_mttf_h:g} + "
            f"{inp.psus_per_node}/{inp.psu_mttf_h:g}"
            + "".join(f" + 1/{m:g}" for m in inp.other_mttf_h)
            + f") h, cluster MTBF = node MTBF / {nodes} nodes (components in series; seed 000 §3)",
        )
    else:
        note(
            "reliability.mtbf_convention",
            "gpu_only",
            "",
            "cluster MTBF = GPU MTTF / GPUs: only GPUs fail (mlsysim tutorial 06 text, seed 000 §3); NICs, "
            "PSUs and other parts are ignored, so this MTBF is optimistic",
        )
    bytes_per_param = ckpt.checkpoint_bytes_per_param(optimizer=inp.optimizer, precision=inp.precision)
    note("checkpoint.bytes_per_param", bytes_per_param, "B", ckpt.BYTES_PER_PARAM_NOTE)
    if inp.checkpoint_writers is None:
        writers = ckpt.default_checkpoint_writers(nodes=nodes)
        note(
            "checkpoint.writers",
            writers,
            "",
            "one writer per node (default): every node writes its own shard of a sharded checkpoint "
            "(PyTorch DCP, Megatron dist-ckpt); the file-system cap bounds the aggregate",
        )
    else:
        writers = inp.checkpoint_writers
        note("checkpoint.writers", writers, "", "training.checkpoint.writers as given")
    write_gb_s = ckpt.checkpoint_write_bandwidth_gb_s(
        writers=writers, per_writer_gb_s=inp.storage_per_writer_gb_s, storage_cap_gb_s=inp.storage_write_gb_s
    )
    note(
        "checkpoint.write_bandwidth_gb_s",
        write_gb_s,
        "GB/s",
        f"min({writers} writers x {inp.storage_per_writer_gb_s:g} GB/s, file-system cap "
        f"{inp.storage_write_gb_s:g} GB/s) (mlsysim CheckpointModel, seed 000 §3.2)",
    )
    if inp.checkpoint_interval_h is None:
        note(
            "checkpoint.interval_method",
            inp.interval_method,
            "",
            _INTERVAL_SOURCES[inp.interval_method] + "; evaluated on the real write time C, not a default",
        )
    else:
        note("checkpoint.interval_method", "fixed", "", "training.checkpoint.interval_h as given")
    note("reliability.goodput_ledger", inp.goodput_ledger, "", _LEDGER_SOURCES[inp.goodput_ledger])
    if inp.total_tokens is not None:
        note(
            "schedule.duration",
            "total_tokens",
            "",
            "wall-clock = ceil(total_tokens / tokens per step) x step time / goodput",
        )
    elif inp.job_days is not None:
        note(
            "schedule.duration",
            "job_days",
            "days",
            "tokens delivered by economics.job_days of wall-clock",
        )
    else:
        window = DEFAULTS["economics.window_days"]
        window_days = float(window.value)  # type: ignore[arg-type]
        note(
            "schedule.duration",
            window_days,
            "days",
            "neither training.total_tokens nor economics.job_days given: time-based figures use a "
            f"{window_days:g}-day window ({window.source})",
        )
    note(
        "energy.power_model",
        inp.idle_fraction,
        "fraction of TDP",
        "GPU power = TDP x (idle_fraction + (1 - idle_fraction) x gpu_busy_fraction) while stepping (useful "
        "work and rework), TDP x idle_fraction during checkpoint writes and restarts, plus "
        f"{inp.host_w_per_node:g} W per node for hosts over the whole wall-clock time; facility = IT x PUE",
    )
    note(
        "carbon.embodied_amortisation",
        inp.embodied_lifetime_years,
        "years",
        "accelerator embodied carbon amortised straight-line over its service life and charged for the "
        "job's wall-clock time only (Gupta et al., ACT, ISCA 2022 §3); hosts, network and building excluded",
    )
    note(
        "carbon.operational_basis",
        inp.grid_gco2_per_kwh,
        "gCO2e/kWh",
        "location-based: facility kWh x grid intensity (GHG Protocol Scope 2 Guidance 2015)",
    )
    note(
        "water.wue_basis",
        "it_energy",
        "",
        "water = WUE x IT energy: The Green Grid WP#35 defines WUE per kWh of IT equipment energy "
        "(mlsysim multiplies facility energy, i.e. x PUE more)",
    )
    note(
        "tco.capex_amortisation",
        inp.amortization_years,
        "years",
        f"capex = unit price x {inp.gpus} GPUs x infra multiplier {inp.infra_multiplier:g}, straight-line over "
        "amortization_years, charged for the wall-clock days / 365 (mlsysim EconomicsModel, seed 000 §5)",
    )
    note(
        "tco.maintenance_basis",
        inp.maintenance_per_year,
        "fraction of capex per year",
        "maintenance = full capex (with infra multiplier) x rate x days / 365 (mlsysim EconomicsModel)",
    )
    note(
        "tco.failure_cost_basis",
        "time_share",
        "",
        "failure_cost_usd = total x (rework + restarts) / wall-clock: the bill of the time failures take; "
        "checkpoint_cost_usd likewise for checkpoint writes",
    )
    if inp.cloud_usd_per_gpu_hour is not None:
        note(
            "tco.cloud_basis",
            inp.cloud_usd_per_gpu_hour,
            "USD/GPU-h",
            "cloud alternative = GPUs x the same wall-clock hours x $/GPU-hour",
        )
    return notes


_SCALARS = (float, int)


def _ceil(value: Any) -> Any:
    """``np.ceil``; a python float stays a python float (the same value: ceil is exact)."""
    return float(math.ceil(value)) if type(value) is float else np.ceil(value)


def _floor(value: Any) -> Any:
    """``np.floor``; a python float stays a python float (the same value: floor is exact)."""
    return float(math.floor(value)) if type(value) is float else np.floor(value)


_INTERVAL_SOURCES = {
    "young": "Young 1974 (CACM 17(9)): T = sqrt(2 C M)",
    "daly": "Daly 2006 (FGCS 22(3)) eq. 37: T = sqrt(2CM)[1 + sqrt(C/2M)/3 + (C/2M)/9] - C for C < 2M, else M",
    "exact": "exact optimum of the expected_loss renewal model (Daly 2006 §3): T = M (1 + W0(-e^(-1-C/M)))",
}
_LEDGER_SOURCES = {
    "expected_loss": "Daly 2006 §3 renewal model with exponential failures: goodput = T / (M e^(R/M) "
    "(e^((T+C)/M) - 1)); lost time split exactly into checkpoint writes, rework and restarts",
    "sec5_writes_half_interval": "mlsysim tutorial §5 ledger (seed 000 §3.3): lost = writes + failures x T/2, "
    "no restart term; goodput = 1 - C/T - T/(2M)",
    "mlsysim_goodput_ratio": "mlsysim ReliabilityResult.goodput_ratio (seed 000 §3.3): 1 - C/T - R/MTBF; "
    "rework after a failure is not counted",
}


def _valid_scalar(inp: LedgerInputs) -> bool:
    """True when a one-layout input passes every rule of ``_validate`` (checked in one expression; any doubt
    returns False and ``_validate`` names the broken rules)."""
    number = (int, float)
    plain = (
        type(inp.step_s) in number
        and type(inp.gpu_busy_fraction) in number
        and type(inp.tokens_per_step) in number
        and type(inp.gpus) is int
        and type(inp.gpus_per_node) is int
        and type(inp.nics_per_node) is int
        and type(inp.psus_per_node) is int
        and (inp.checkpoint_writers is None or type(inp.checkpoint_writers) is int)
    )
    if not plain:
        return False
    values = (
        inp.step_s,
        inp.gpu_busy_fraction,
        inp.tokens_per_step,
        inp.accelerator_tdp_w,
        inp.accelerator_unit_price_usd,
        inp.accelerator_embodied_kgco2e,
        inp.gpu_mttf_h,
        inp.nic_mttf_h,
        inp.psu_mttf_h,
        inp.restart_s,
        inp.storage_write_gb_s,
        inp.storage_per_writer_gb_s,
        inp.host_w_per_node,
        inp.idle_fraction,
        inp.params,
        inp.grid_gco2_per_kwh,
        inp.pue,
        inp.wue_l_per_kwh,
        inp.electricity_usd_per_kwh,
        inp.amortization_years,
        inp.infra_multiplier,
        inp.maintenance_per_year,
        inp.embodied_lifetime_years,
        *inp.other_mttf_h,
    )
    optional = (inp.total_tokens, inp.checkpoint_interval_h, inp.job_days, inp.cloud_usd_per_gpu_hour)
    for value in (*values, *(v for v in optional if v is not None)):
        if type(value) not in number or not math.isfinite(value):
            return False
    return bool(
        inp.step_s > 0
        and 0 <= inp.gpu_busy_fraction <= 1
        and inp.tokens_per_step > 0
        and inp.gpus >= 1
        and inp.gpus_per_node >= 1
        and inp.accelerator_tdp_w > 0
        and inp.accelerator_unit_price_usd >= 0
        and inp.accelerator_embodied_kgco2e >= 0
        and inp.gpu_mttf_h > 0
        and inp.nic_mttf_h > 0
        and inp.psu_mttf_h > 0
        and all(m > 0 for m in inp.other_mttf_h)
        and inp.nics_per_node >= 0
        and inp.psus_per_node >= 0
        and inp.restart_s >= 0
        and inp.storage_write_gb_s > 0
        and inp.storage_per_writer_gb_s > 0
        and inp.host_w_per_node >= 0
        and 0 <= inp.idle_fraction <= 1
        and inp.mtbf_convention in MTBF_CONVENTIONS
        and inp.params > 0
        and inp.optimizer in ckpt.OPTIMIZERS
        and inp.precision in ckpt.PRECISIONS
        and (inp.total_tokens is None or inp.total_tokens > 0)
        and (inp.checkpoint_interval_h is None or inp.checkpoint_interval_h > 0)
        and (inp.checkpoint_writers is None or inp.checkpoint_writers >= 1)
        and inp.interval_method in INTERVAL_METHODS
        and inp.goodput_ledger in GOODPUT_LEDGERS
        and inp.grid_gco2_per_kwh >= 0
        and inp.pue >= 1.0
        and inp.wue_l_per_kwh >= 0
        and inp.electricity_usd_per_kwh >= 0
        and (inp.job_days is None or inp.job_days > 0)
        and inp.amortization_years > 0
        and inp.infra_multiplier >= 0
        and inp.maintenance_per_year >= 0
        and (inp.cloud_usd_per_gpu_hour is None or inp.cloud_usd_per_gpu_hour >= 0)
        and inp.embodied_lifetime_years > 0
    )


def _validate(inp: LedgerInputs) -> None:
    if _valid_scalar(inp):
        return
    errors: list[FieldError] = []

    def need(ok: bool, path: str, rule: str) -> None:
        if not ok:
            errors.append(FieldError(path=path, message=rule))

    def finite(value: float) -> bool:
        return isinstance(value, int | float | np.number) and math.isfinite(value)

    def positive(value: float | None) -> bool:
        return value is not None and finite(value) and value > 0

    def nonnegative(value: float | None) -> bool:
        return value is not None and finite(value) and value >= 0

    def integer(value: object, lowest: int) -> bool:
        return isinstance(value, int | np.integer) and not isinstance(value, bool) and bool(value >= lowest)

    for name, path in (("step_s", "step.step_s"), ("tokens_per_step", "training.global_batch_tokens")):
        value = getattr(inp, name)
        if np.ndim(value) == 0:
            need(positive(float(value)), path, "must be positive and finite")
        else:
            array = np.asarray(value, dtype=np.float64)
            need(bool(np.isfinite(array).all() and (array > 0).all()), path, "must be positive and finite")
    busy = inp.gpu_busy_fraction
    if np.ndim(busy) == 0:
        need(
            finite(float(busy)) and 0 <= float(busy) <= 1,
            "step.gpu_busy_fraction",
            "must be a fraction in 0..1",
        )
    else:
        array = np.asarray(busy, dtype=np.float64)
        need(
            bool(np.isfinite(array).all() and ((array >= 0) & (array <= 1)).all()),
            "step.gpu_busy_fraction",
            "must be a fraction in 0..1",
        )
    try:
        np.broadcast_shapes(
            np.shape(inp.step_s), np.shape(inp.gpu_busy_fraction), np.shape(inp.tokens_per_step)
        )
    except ValueError:
        errors.append(FieldError("step", "per-layout arrays must broadcast together"))

    need(integer(inp.gpus, 1), "cluster.gpus", "must be an integer >= 1")
    need(
        integer(inp.gpus_per_node, 1),
        "cluster.gpus_per_node",
        "must be an integer >= 1",
    )
    need(positive(inp.accelerator_tdp_w), "cluster.accelerator.tdp_w", "must be positive")
    need(nonnegative(inp.accelerator_unit_price_usd), "cluster.accelerator.unit_price_usd", "must be >= 0")
    need(nonnegative(inp.accelerator_embodied_kgco2e), "cluster.accelerator.embodied_kgco2e", "must be >= 0")
    for name in ("gpu_mttf_h", "nic_mttf_h", "psu_mttf_h"):
        need(positive(getattr(inp, name)), f"cluster.reliability.{name}", "must be positive")
    for i, mttf in enumerate(inp.other_mttf_h):
        need(positive(mttf), f"cluster.reliability.other_mttf_h[{i}]", "must be positive")
    need(
        integer(inp.nics_per_node, 0),
        "cluster.reliability.nics_per_node",
        "must be an integer >= 0",
    )
    need(
        integer(inp.psus_per_node, 0),
        "cluster.reliability.psus_per_node",
        "must be an integer >= 0",
    )
    need(nonnegative(inp.restart_s), "cluster.reliability.restart_s", "must be >= 0")
    need(positive(inp.storage_write_gb_s), "cluster.storage.write_gb_s", "must be positive")
    need(positive(inp.storage_per_writer_gb_s), "cluster.storage.per_writer_gb_s", "must be positive")
    need(nonnegative(inp.host_w_per_node), "cluster.power.host_w_per_node", "must be >= 0")
    need(
        finite(inp.idle_fraction) and 0 <= inp.idle_fraction <= 1,
        "cluster.power.idle_fraction",
        "must be a fraction in 0..1",
    )
    need(
        inp.mtbf_convention in MTBF_CONVENTIONS,
        "cluster.reliability.mtbf_convention",
        f"must be one of {', '.join(MTBF_CONVENTIONS)}",
    )
    need(positive(inp.params), "model.params", "must be positive")
    need(
        inp.optimizer in ckpt.OPTIMIZERS, "training.optimizer", f"must be one of {', '.join(ckpt.OPTIMIZERS)}"
    )
    need(
        inp.precision in ckpt.PRECISIONS, "training.precision", f"must be one of {', '.join(ckpt.PRECISIONS)}"
    )
    need(
        inp.total_tokens is None or positive(inp.total_tokens),
        "training.total_tokens",
        "must be positive when given",
    )
    need(
        inp.checkpoint_interval_h is None or positive(inp.checkpoint_interval_h),
        "training.checkpoint.interval_h",
        "must be positive when given",
    )
    need(
        inp.checkpoint_writers is None or integer(inp.checkpoint_writers, 1),
        "training.checkpoint.writers",
        "must be an integer >= 1 when given",
    )
    need(
        inp.interval_method in INTERVAL_METHODS,
        "training.checkpoint.interval_method",
        f"must be one of {', '.join(INTERVAL_METHODS)}",
    )
    need(
        inp.goodput_ledger in GOODPUT_LEDGERS,
        "training.checkpoint.goodput_ledger",
        f"must be one of {', '.join(GOODPUT_LEDGERS)}",
    )
    need(nonnegative(inp.grid_gco2_per_kwh), "site.grid_gco2_per_kwh", "must be >= 0")
    need(finite(inp.pue) and inp.pue >= 1.0, "site.pue", "must be >= 1.0 (facility energy includes IT)")
    need(nonnegative(inp.wue_l_per_kwh), "site.wue_l_per_kwh", "must be >= 0")
    need(nonnegative(inp.electricity_usd_per_kwh), "site.electricity_usd_per_kwh", "must be >= 0")
    need(inp.job_days is None or positive(inp.job_days), "economics.job_days", "must be positive when given")
    need(positive(inp.amortization_years), "economics.amortization_years", "must be positive")
    need(nonnegative(inp.infra_multiplier), "economics.infra_multiplier", "must be >= 0")
    need(nonnegative(inp.maintenance_per_year), "economics.maintenance_per_year", "must be >= 0")
    need(
        inp.cloud_usd_per_gpu_hour is None or nonnegative(inp.cloud_usd_per_gpu_hour),
        "economics.cloud_usd_per_gpu_hour",
        "must be >= 0 when given",
    )
    need(positive(inp.embodied_lifetime_years), "economics.embodied_lifetime_years", "must be positive")
    if errors:
        raise ScenarioError(errors)
