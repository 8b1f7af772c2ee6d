"""Checks of ``LedgerInputs`` built by hand (tests, the comparison with published runs, a caller of
``ledger_inputs_with_defaults``): one ``FieldError`` per broken rule, named by its scenario path.

A scenario read by ``solvers.inputs`` is never checked here again: the parser holds every field to these
same rules (and to tighter limits), and the engine's step figures are finite by construction (the report's
final walk would name one that is not).
"""

from __future__ import annotations

import math

import numpy as np

from solvers import checkpoint as ckpt
from solvers.errors import FieldError, ScenarioError
from solvers.ledger_defaults import GOODPUT_LEDGERS, INTERVAL_METHODS, MTBF_CONVENTIONS
from solvers.ledger_inputs import LedgerInputs


def _valid_scalar(inp: LedgerInputs) -> bool:
    """True when a one-layout input passes every rule of ``check_ledger_inputs`` (checked in one expression; any doubt
    returns False and ``check_ledger_inputs`` names the broken rules)."""
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


def check_ledger_inputs(inp: LedgerInputs) -> None:
    """``ScenarioError`` naming every field of ``inp`` that breaks its rule; nothing when all hold."""
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
