"""The report document's shape (CONTRACT.md v1) as TypedDicts, so that mypy checks who writes and reads it.

A report is plain JSON: python ints, floats (finite), bools, strings and None. The ledger's blocks hold a
float per field for one layout; the design-space search runs the same ledger over arrays of layouts and
reads the same keys (``Num`` then stands for a numpy array), so the ledger blocks are typed over ``Num``.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypedDict

import numpy as np
import numpy.typing as npt

Num: TypeAlias = float | npt.NDArray[np.float64]


class Range(TypedDict):
    """The p10, p50 and p90 of a figure under the report's uncertainty (CONVENTIONS.md "Ranges")."""

    p10: float
    p50: float
    p90: float


class StepResidual(TypedDict):
    """The step model's residual class behind a report's step ranges (``solvers/catalog/step_uncertainty.json``)."""

    step_class: str  # "dense/small" | "dense/large" | "moe/small" | "moe/large"
    mean: float  # of ln(actual step_s / predicted step_s)
    sigma: float
    held_out: bool  # False: residuals of the runs the calibration was set on


class RangesMethod(TypedDict):
    """How a report's ``ranges`` were made (CONVENTIONS.md "Ranges")."""

    method: str  # "monte_carlo"
    samples: int
    seed: int
    quantiles: str
    step_residual: StepResidual
    inputs: list[str]  # the document paths of the sampled inputs (each an ``assumptions`` entry)


class Assumption(TypedDict):
    """One entry of the assumptions ledger: which value a number rests on, its unit and where it came from."""

    key: str
    value: Any  # a plain JSON value: number, string, bool, None or a list of them
    unit: str
    source: str


class LayoutBlock(TypedDict):
    tp: int
    pp: int
    cp: int
    ep: int
    dp: int
    microbatch_seqs: int
    microbatches: int
    schedule: str
    virtual_stages: int
    zero_stage: int
    recompute: str
    sequence_parallel: bool
    fsdp_reshard_after_forward: bool
    expert_tp: int
    grad_reduce_dtype: str


class PerDimension(TypedDict):
    tp: float
    cp: float
    pp: float
    dp: float
    ep: float


class StepBlock(TypedDict):
    model_flops_per_token: float
    compute_s: float
    comm_s: PerDimension
    exposed_comm_s: PerDimension
    bubble_s: float
    bubble_fraction: float
    step_s: float
    tokens_per_s: float
    mfu: float
    mfu_bf16: float
    hfu: float
    gpu_busy_fraction: float
    roofline_bound: bool


class TrafficBlock(TypedDict):
    bytes_per_gpu: PerDimension
    nic_duty_cycle: float
    burst_bytes: float


class MemoryBlock(TypedDict):
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    total_bytes: float
    capacity_bytes: float
    fits: bool


class LostHours(TypedDict):
    checkpoint_writes: Num
    rework: Num
    restarts: Num


class ReliabilityBlock(TypedDict):
    nodes: int  # the ledger's nodes: servers (GB200/GB300 NVL72: 4-GPU compute trays), CONTRACT.md v1.1
    node_mtbf_h: Num
    cluster_mtbf_h: Num
    mtbf_convention: str
    node_series_cluster_mtbf_h: Num
    gpu_only_cluster_mtbf_h: Num
    expected_failures: Num
    checkpoint_bytes: Num
    checkpoint_bytes_per_param: float
    checkpoint_writers: int
    checkpoint_write_gb_s: Num
    checkpoint_write_s: Num
    checkpoint_interval_h: Num
    checkpoint_interval_method: str
    optimal_interval_h: Num
    checkpoints: Num
    lost_h: LostHours
    goodput: Num
    goodput_ledger: str


class ScheduleBlock(TypedDict):
    mode: str  # "total_tokens" | "job_days" | "default_window"
    ideal_days: Num
    wall_clock_days: Num
    steps: Num
    tokens: Num
    window_days: float | None


class EnergyBlock(TypedDict):
    it_kwh: Num
    facility_kwh: Num
    mean_it_power_kw: Num


class CarbonBlock(TypedDict):
    operational_kgco2e: Num
    embodied_kgco2e: Num
    total_kgco2e: Num
    water_l: Num


class TcoBlock(TypedDict):
    capex_usd: Num
    maintenance_usd: Num
    electricity_usd: Num
    total_usd: Num
    usd_per_million_tokens: Num
    cloud_usd: Num | None
    failure_cost_usd: Num
    checkpoint_cost_usd: Num
    capex_share: Num
    capex_total_usd: Num


class SearchSummary(TypedDict, total=False):
    objective: str
    candidates: int
    evaluated: int
    feasible: int
    rejected: dict[str, int]
    elapsed_s: float
    within_validated: bool  # whether the layouts outside the validated envelope were left out
    support: dict[str, Any]  # the chosen layout's closeness to validated runs (solvers.search.envelope)


class _ReportRequired(TypedDict):
    schema_version: int
    solver_version: str
    input_hash: str
    layout: LayoutBlock
    step: StepBlock
    traffic: TrafficBlock
    memory: MemoryBlock
    reliability: ReliabilityBlock
    schedule: ScheduleBlock
    energy: EnergyBlock
    carbon: CarbonBlock
    tco: TcoBlock
    assumptions: list[Assumption]
    warnings: list[str]
    scenario: dict[str, Any]


class Report(_ReportRequired, total=False):
    """One plan's report: ``search`` is present when the layout was chosen by ``layout: auto``; ``ranges``
    (p10/p50/p90 by the figure's dotted path, e.g. ``"step.step_s"``) and ``ranges_method`` are the additive
    v1.1 fields, present unless the caller asked for none (``solve(..., ranges=False)``)."""

    search: dict[str, Any]
    ranges: dict[str, Range]
    ranges_method: RangesMethod
