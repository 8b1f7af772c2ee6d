"""The inputs of the ledger (``LedgerInputs``) and the scenario path of each of its fields."""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt

Num: TypeAlias = float | npt.NDArray[np.float64]


class LedgerInputs(NamedTuple):
    """Everything the ledger reads for one scenario: the step figures of one layout (floats) or of many
    (numpy arrays that broadcast together), and the scenario's resolved cluster, model, training, site and
    economics values. Immutable: a change (a new price) is a new ``LedgerInputs`` (``inputs._replace``).

    A named tuple rather than a frozen dataclass: every report builds one, and a frozen dataclass of 38
    fields pays one ``object.__setattr__`` per field (about five times the cost of the tuple)."""

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
