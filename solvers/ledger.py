"""The ledger: from a step time to failures, checkpoints, schedule, energy, carbon, water and TCO.

``compute_ledger`` takes the resolved inputs of one scenario (``LedgerInputs``; defaults come from
``solvers.ledger_defaults`` and ``solvers.catalog.regions``) and returns the ``reliability``, ``schedule``,
``energy``, ``carbon`` and ``tco`` sections of the report document (CONTRACT.md) with the conventions it
used in ``assumptions``. It runs four typed blocks, each a pure function of what it reads:

    reliability(inp)                          MTBF, checkpoint size/write time/interval, goodput shares
    schedule(inp, rel, step_s, tokens)        steps, tokens, ideal and wall-clock time
    energy_carbon(inp, rel, sched, busy)      IT and facility energy, operational and embodied carbon, water
    tco(prices, durations, energy, shares)    capex, maintenance, electricity, cloud, cost per token

Each figure is computed once, from the same inputs: the interval is optimised on the real checkpoint write
time, the goodput that lengthens the schedule is the one that sets the energy and the bill. Nothing here
checks its inputs again: a scenario read by ``solvers.inputs`` holds every rule already, and hand-built
inputs are checked where they are built (``ledger_inputs_with_defaults``, ``solvers.ledger_checks``).

Per-layout inputs (``step_s``, ``gpu_busy_fraction``, ``tokens_per_step``) may be numpy arrays; every
numeric output is then an array of their broadcast shape, otherwise a python float. Reliability and
checkpoint figures do not depend on the layout and are broadcast for uniformity. ``tco`` takes arrays for
every argument, so one call prices many plans at once (``solvers.entry.reprice_many``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from solvers import checkpoint as ckpt
from solvers import economics as econ
from solvers import reliability as rel
from solvers import sustainability as sus
from solvers.catalog.regions import REGIONS
from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.ledger_assumptions import ScenarioLedger, ledger_assumptions
from solvers.ledger_checks import check_ledger_inputs
from solvers.ledger_defaults import DEFAULTS
from solvers.ledger_inputs import FIELD_PATHS, LedgerInputs, Num
from solvers.report_types import (
    Assumption,
    CarbonBlock,
    EnergyBlock,
    ReliabilityBlock,
    ScheduleBlock,
    TcoBlock,
)

__all__ = [
    "FIELD_PATHS",
    "LedgerInputs",
    "LedgerResult",
    "compute_ledger",
    "energy_carbon",
    "ledger_inputs_with_defaults",
    "reliability",
    "schedule",
    "tco",
]

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0


class LedgerResult(NamedTuple):
    """The report's ledger sections, their assumptions and warnings (one made per report: a named tuple)."""

    reliability: ReliabilityBlock
    schedule: ScheduleBlock
    energy: EnergyBlock
    carbon: CarbonBlock
    tco: TcoBlock
    assumptions: list[Assumption]
    warnings: list[str]


@dataclass(frozen=True, slots=True)
class Reliability:
    """Failures and checkpoints of one scenario (python scalars: they do not depend on the layout)."""

    nodes: int
    node_mtbf_h: float
    node_series_mtbf_h: float
    gpu_only_mtbf_h: float
    cluster_mtbf_h: float
    bytes_per_param: float
    checkpoint_bytes: float
    writers: int
    write_gb_s: float
    write_s: float
    optimum_s: float
    interval_s: float
    method_label: str  # the interval method, or "fixed" when the scenario gives the interval
    shares: rel.GoodputShares
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Schedule:
    """How long the run lasts and what it delivers, per layout."""

    mode: str  # "total_tokens" | "job_days" | "default_window"
    window_days: float | None
    steps: Num
    tokens: Num
    ideal_s: Num
    wall_s: Num
    wall_h: Num
    wall_days: Num
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EnergyCarbon:
    """Energy (kWh), carbon (kgCO2e) and water (L) of the run, per layout."""

    it_kwh: Num
    facility_kwh: Num
    operational_kgco2e: Num
    embodied_kgco2e: Num
    water_l: Num


@dataclass(frozen=True, slots=True)
class Tco:
    """The bill of the run (USD), per layout or per plan."""

    capex_total_usd: Num
    capex_usd: Num
    maintenance_usd: Num
    electricity_usd: Num
    total_usd: Num
    usd_per_million_tokens: Num
    cloud_usd: Num | None
    failure_cost_usd: Num
    checkpoint_cost_usd: Num
    capex_share: Num


def ledger_inputs_with_defaults(*, region: str | None = None, **given: Any) -> LedgerInputs:
    """``LedgerInputs`` from the fields given, the rest from ``region`` and ``DEFAULTS``.

    Order of precedence: a field given here, then the region's ``site.*`` value (``region`` or the
    ``site.region`` default), then ``DEFAULTS``. ``nics_per_node`` left out means one NIC per GPU. Fields
    without a default (the per-layout step figures, GPU count, accelerator data, ``params``, ``optimizer``,
    ``precision``, ``total_tokens``, ``job_days``) must be given; ``total_tokens`` and ``job_days`` may be
    ``None``. The result is checked (``check_ledger_inputs``): hand-built values get the parser's rules.
    Example: ``ledger_inputs_with_defaults(region="quebec", step_s=10.0, gpu_busy_fraction=0.8,
    tokens_per_step=4e6, gpus=512, gpus_per_node=8, accelerator_tdp_w=700, accelerator_unit_price_usd=25e3,
    accelerator_embodied_kgco2e=150, params=70.6e9, optimizer="adam", precision="bf16", total_tokens=None,
    job_days=None)``.
    """
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
    missing = [n for n in LedgerInputs._fields if n not in values]
    if missing:
        raise ScenarioError(
            [FieldError(path=FIELD_PATHS.get(n, f"step.{n}"), message="is required") for n in missing]
        )
    inputs = LedgerInputs(**values)
    check_ledger_inputs(inputs)
    return inputs


def reliability(inp: ScenarioLedger) -> Reliability:
    """MTBF, checkpoint size and write time, checkpoint interval and goodput shares of one scenario.

    Equations (each in the module named): node MTBF in series and cluster MTBF = node / nodes
    (``reliability``); checkpoint bytes and write time, Young, Daly or exact interval on the real write time
    (``checkpoint``); goodput and lost-time split under the named ledger (``reliability.goodput_shares``).
    Example: 512 H100, Llama-3-70B (70.6e9 params, Adam bf16), one writer at 7 GB/s: node MTBF 4,285.71 h,
    cluster 66.96 h, checkpoint 988.4 GB written in 141.2 s, interval 2.27 h (daly) or 2.29 h (young).
    """
    warnings: list[str] = []
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
    return Reliability(
        nodes=nodes,
        node_mtbf_h=node_mtbf_h,
        node_series_mtbf_h=node_series_mtbf_h,
        gpu_only_mtbf_h=gpu_only_mtbf_h,
        cluster_mtbf_h=cluster_mtbf_h,
        bytes_per_param=bytes_per_param,
        checkpoint_bytes=checkpoint_bytes,
        writers=writers,
        write_gb_s=write_gb_s,
        write_s=write_s,
        optimum_s=optimum_s,
        interval_s=interval_s,
        method_label=method_label,
        shares=shares,
        warnings=tuple(warnings),
    )


def schedule(
    inp: LedgerInputs, rel_: Reliability, *, step_s: Num, tokens_per_step: Num, shape: tuple[int, ...]
) -> Schedule:
    """Steps, tokens and time of the run, per layout (``shape`` is the layouts' shape, ``()`` for one).

    Equations: with ``training.total_tokens``, steps = ceil(total / tokens per step), ideal = steps x step
    time and wall-clock = ideal / goodput; otherwise the wall-clock is ``economics.job_days`` (or the default
    window) and steps = floor(wall-clock x goodput / step time). Source: CONVENTIONS.md "Schedule".
    Example: 15e12 tokens at 16.8e6 tokens per 6.76 s step and goodput 0.95: 892,858 steps, 73.5 days.
    """
    warnings: list[str] = []
    scalar = shape == ()
    shares = rel_.shares
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
    return Schedule(
        mode=mode,
        window_days=window_days,
        steps=steps,
        tokens=tokens,
        ideal_s=ideal_s,
        wall_s=wall_s,
        wall_h=wall_h,
        wall_days=wall_h / HOURS_PER_DAY,
        warnings=tuple(warnings),
    )


def energy_carbon(inp: LedgerInputs, rel_: Reliability, sched: Schedule, *, busy: Num) -> EnergyCarbon:
    """Energy, carbon and water of the run, per layout.

    Equations (``solvers.sustainability``): GPUs draw TDP x (idle + (1 - idle) x busy) while running (useful
    work and rework) and TDP x idle while checkpoints are written and jobs restart, plus host power per node
    all along; facility = IT x PUE; operational carbon = facility kWh x grid intensity; embodied carbon
    amortised over the accelerators' service life for the wall-clock time; water = WUE x IT energy.
    Example: 512 H100 at 700 W, busy 0.8, idle 0.3, 64 nodes at 2 kW of host power, 720 h all running, PUE
    1.06, Quebec (20 gCO2e/kWh): IT (512 x 700 x 0.86 W + 64 x 2 kW) x 720 h = 314,081 kWh, facility 332,926
    kWh, operational carbon 6,659 kgCO2e.
    """
    shares = rel_.shares
    running_h = sched.wall_h * (shares.goodput + shares.rework)
    stalled_h = sched.wall_h * (shares.checkpoint_writes + shares.restarts)
    it_kwh = sus.it_energy_kwh(
        gpus=inp.gpus,
        nodes=rel_.nodes,
        tdp_w=inp.accelerator_tdp_w,
        busy_fraction=busy,
        idle_fraction=inp.idle_fraction,
        host_w_per_node=inp.host_w_per_node,
        running_h=running_h,
        stalled_h=stalled_h,
    )
    facility_kwh = sus.facility_energy_kwh(it_kwh=it_kwh, pue=inp.pue)
    return EnergyCarbon(
        it_kwh=it_kwh,
        facility_kwh=facility_kwh,
        operational_kgco2e=sus.operational_carbon_kgco2e(
            facility_kwh=facility_kwh, grid_gco2_per_kwh=inp.grid_gco2_per_kwh
        ),
        embodied_kgco2e=sus.embodied_carbon_kgco2e(
            accelerators=inp.gpus,
            embodied_kgco2e_per_accelerator=inp.accelerator_embodied_kgco2e,
            duration_h=sched.wall_h,
            lifetime_years=inp.embodied_lifetime_years,
        ),
        water_l=sus.water_l(it_kwh=it_kwh, wue_l_per_kwh=inp.wue_l_per_kwh),
    )


def tco(
    *,
    unit_price_usd: Num,
    gpus: Num,
    infra_multiplier: Num,
    amortization_years: Num,
    maintenance_per_year: Num,
    electricity_usd_per_kwh: Num,
    cloud_usd_per_gpu_hour: Num | None,
    wall_h: Num,
    wall_days: Num,
    facility_kwh: Num,
    tokens: Num,
    failure_share: Num,
    checkpoint_share: Num,
) -> Tco:
    """The bill of the run; every argument may be an array (many layouts of one plan, or many plans).

    Equations (``solvers.economics``, mlsysim EconomicsModel, seed 000 §5): capex = unit price x GPUs x infra
    multiplier, amortised straight-line over ``amortization_years`` for the wall-clock days; maintenance =
    capex x yearly rate x days / 365; electricity = facility kWh x price; total = the three; cloud = GPUs x
    wall-clock hours x $/GPU-h; failure and checkpoint costs = total x the share of wall-clock time that
    failures (rework + restarts) and checkpoint writes take. ``capex_share`` is 0 for a free run.
    Example: $25,000 x 512 H100 x 2.0 over 3 years for 30 days: capex $0.70 M (25.6 M / 3 years x 30 / 365).
    """
    capex_total = econ.capex_total_usd(
        unit_price_usd=unit_price_usd,
        gpus=gpus,
        infra_multiplier=infra_multiplier,
    )
    capex = econ.amortized_capex_usd(
        capex_total_usd=capex_total,
        amortization_years=amortization_years,
        duration_days=wall_days,
    )
    maintenance = econ.maintenance_usd(
        capex_total_usd=capex_total,
        maintenance_per_year=maintenance_per_year,
        duration_days=wall_days,
    )
    electricity = econ.electricity_usd(facility_kwh=facility_kwh, usd_per_kwh=electricity_usd_per_kwh)
    total = capex + maintenance + electricity
    cloud: Num | None = None
    if cloud_usd_per_gpu_hour is not None:
        cloud = econ.cloud_usd(gpus=gpus, duration_h=wall_h, usd_per_gpu_hour=cloud_usd_per_gpu_hour)
    if type(total) is float:
        share: Num = capex / total if total > 0 else 0.0
    else:
        positive = np.asarray(total) > 0
        share = np.where(positive, capex / np.where(positive, total, 1.0), 0.0)
    return Tco(
        capex_total_usd=capex_total,
        capex_usd=capex,
        maintenance_usd=maintenance,
        electricity_usd=electricity,
        total_usd=total,
        usd_per_million_tokens=econ.usd_per_million_tokens(total_usd=total, tokens=tokens),
        cloud_usd=cloud,
        failure_cost_usd=total * failure_share,
        checkpoint_cost_usd=total * checkpoint_share,
        capex_share=share,
    )


def compute_ledger(
    inp: LedgerInputs, *, assumptions: bool = True, held_reliability: Reliability | None = None
) -> LedgerResult:
    """Reliability, schedule, energy, carbon, water and TCO of one scenario over one or many layouts: the
    four blocks (``reliability``, ``schedule``, ``energy_carbon``, ``tco``) as the report's sections, with
    their assumptions (``solvers.ledger_assumptions``) and warnings. ``assumptions=False`` leaves the
    assumptions list empty: they depend on the scenario only, and ``resolve`` wrote them into the
    ``Resolved`` once. ``held_reliability`` is ``reliability(inp)`` made before (``Resolved.reliability``:
    it reads no step figure and no price), used as it is.

    Example: 512 H100, Llama-3-70B (70.6e9 params, Adam bf16), one writer at 7 GB/s, 30-day window:
    node MTBF 4,285.71 h, cluster 66.96 h, checkpoint 988.4 GB written in 141.2 s, interval 2.27 h (daly)
    or 2.29 h (young).
    """
    step_in, busy_in, tokens_in = inp.step_s, inp.gpu_busy_fraction, inp.tokens_per_step
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

    r = reliability(inp) if held_reliability is None else held_reliability
    s = schedule(inp, r, step_s=step_s, tokens_per_step=tokens_per_step, shape=shape)
    e = energy_carbon(inp, r, s, busy=busy)
    shares = r.shares
    t = run_tco(inp, s, e, shares, cloud_usd_per_gpu_hour=inp.cloud_usd_per_gpu_hour)
    wall_h = s.wall_h
    reliability_block: ReliabilityBlock = {
        "nodes": r.nodes,
        "node_mtbf_h": out(r.node_mtbf_h),
        "cluster_mtbf_h": out(r.cluster_mtbf_h),
        "mtbf_convention": inp.mtbf_convention,
        "node_series_cluster_mtbf_h": out(r.node_series_mtbf_h),
        "gpu_only_cluster_mtbf_h": out(r.gpu_only_mtbf_h),
        "expected_failures": out(wall_h / r.cluster_mtbf_h),
        "checkpoint_bytes": out(r.checkpoint_bytes),
        "checkpoint_bytes_per_param": r.bytes_per_param,
        "checkpoint_writers": r.writers,
        "checkpoint_write_gb_s": out(r.write_gb_s),
        "checkpoint_write_s": out(r.write_s),
        "checkpoint_interval_h": out(r.interval_s / SECONDS_PER_HOUR),
        "checkpoint_interval_method": r.method_label,
        "optimal_interval_h": out(r.optimum_s / SECONDS_PER_HOUR),
        "checkpoints": out(wall_h * shares.goodput * SECONDS_PER_HOUR / r.interval_s),
        "lost_h": {
            "checkpoint_writes": out(wall_h * shares.checkpoint_writes),
            "rework": out(wall_h * shares.rework),
            "restarts": out(wall_h * shares.restarts),
        },
        "goodput": out(shares.goodput),
        "goodput_ledger": inp.goodput_ledger,
    }
    schedule_block: ScheduleBlock = {
        "mode": s.mode,
        "ideal_days": out(s.ideal_s / SECONDS_PER_HOUR / HOURS_PER_DAY),
        "wall_clock_days": out(s.wall_days),
        "steps": out(s.steps),
        "tokens": out(s.tokens),
        "window_days": s.window_days,
    }
    energy_block: EnergyBlock = {
        "it_kwh": out(e.it_kwh),
        "facility_kwh": out(e.facility_kwh),
        "mean_it_power_kw": out(e.it_kwh / wall_h),
    }
    carbon_block: CarbonBlock = {
        "operational_kgco2e": out(e.operational_kgco2e),
        "embodied_kgco2e": out(e.embodied_kgco2e),
        "total_kgco2e": out(e.operational_kgco2e + e.embodied_kgco2e),
        "water_l": out(e.water_l),
    }
    tco_block = tco_section(t, out)
    if scalar and not _all_finite(
        reliability_block, reliability_block["lost_h"], schedule_block, energy_block, carbon_block, tco_block
    ):
        raise SolverInternalError("the ledger produced a non-finite number")
    return LedgerResult(
        reliability=reliability_block,
        schedule=schedule_block,
        energy=energy_block,
        carbon=carbon_block,
        tco=tco_block,
        assumptions=ledger_assumptions(inp) if assumptions else [],
        warnings=[*r.warnings, *s.warnings],
    )


def run_tco(
    inp: LedgerInputs,
    s: Schedule,
    e: EnergyCarbon,
    shares: rel.GoodputShares,
    *,
    cloud_usd_per_gpu_hour: Num | None,
) -> Tco:
    """``tco`` of one plan from its inputs, schedule, energy and goodput shares (scalars or sampled arrays):
    the one place that says which ledger figure fills which ``tco`` argument (failure share = rework +
    restarts, checkpoint share = checkpoint writes)."""
    return tco(
        unit_price_usd=inp.accelerator_unit_price_usd,
        gpus=inp.gpus,
        infra_multiplier=inp.infra_multiplier,
        amortization_years=inp.amortization_years,
        maintenance_per_year=inp.maintenance_per_year,
        electricity_usd_per_kwh=inp.electricity_usd_per_kwh,
        cloud_usd_per_gpu_hour=cloud_usd_per_gpu_hour,
        wall_h=s.wall_h,
        wall_days=s.wall_days,
        facility_kwh=e.facility_kwh,
        tokens=s.tokens,
        failure_share=shares.rework + shares.restarts,
        checkpoint_share=shares.checkpoint_writes,
    )


def tco_section(t: Tco, out: Any = float) -> TcoBlock:
    """The report's ``tco`` section of ``t`` (``out`` converts each figure: ``float`` for one plan)."""
    return {
        "capex_usd": out(t.capex_usd),
        "maintenance_usd": out(t.maintenance_usd),
        "electricity_usd": out(t.electricity_usd),
        "total_usd": out(t.total_usd),
        "usd_per_million_tokens": out(t.usd_per_million_tokens),
        "cloud_usd": None if t.cloud_usd is None else out(t.cloud_usd),
        "failure_cost_usd": out(t.failure_cost_usd),
        "checkpoint_cost_usd": out(t.checkpoint_cost_usd),
        "capex_share": out(t.capex_share),
        "capex_total_usd": out(t.capex_total_usd),
    }


_SCALARS = (float, int)


def _all_finite(*blocks: Any) -> bool:
    """True when no float value of these flat blocks is NaN or infinite (one look at their sum: a NaN or an
    infinity makes it NaN or infinite; only a sum that overflows takes the exact look)."""
    floats = [value for block in blocks for value in block.values() if type(value) is float]
    return math.isfinite(sum(floats)) or all(map(math.isfinite, floats))


def _ceil(value: Any) -> Any:
    """``np.ceil``; a python float stays a python float (the same value: ceil is exact)."""
    return float(math.ceil(value)) if type(value) is float else np.ceil(value)


def _floor(value: Any) -> Any:
    """``np.floor``; a python float stays a python float (the same value: floor is exact)."""
    return float(math.floor(value)) if type(value) is float else np.floor(value)
