"""Defaults of the reliability, checkpoint, schedule, energy, carbon, water and TCO ledger.

Each value is keyed by its path in the scenario document (CONTRACT.md) and carries its unit and its source,
so that a report can list every number it rests on. The scenario parser fills a field from here only when
the user (and, for ``site.*``, the chosen region in ``solvers.catalog.regions``) leaves it out.

Conventions are named strings, never booleans, so that a report can say which one produced a figure:

* ``MTBF_CONVENTIONS``: ``node_series`` (every component of a node in series, cluster MTBF = node MTBF /
  nodes) or ``gpu_only`` (GPU MTTF / GPU count, the shortcut of the mlsysim tutorial text, seed 000 §3).
* ``INTERVAL_METHODS``: ``daly`` (Daly 2006 higher-order optimum), ``young`` (Young 1974, sqrt(2 C M)) or
  ``exact`` (the exact optimum of the default ``expected_loss`` ledger, T = M (1 + W0(-e^(-1-C/M)))).
* ``GOODPUT_LEDGERS``: the first is the default; the other two reproduce the two ledgers that seed 000 finds
  side by side in mlsysim, so that published figures can be traced to their convention.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Default:
    value: object  # float | int | str | tuple | None
    unit: str  # "h", "s", "W", "USD", "kgCO2e", "fraction", "" ...
    source: str  # data sheet, paper with section or table, or the name of a convention


MTBF_CONVENTIONS: tuple[str, ...] = ("node_series", "gpu_only")
INTERVAL_METHODS: tuple[str, ...] = ("daly", "young", "exact")
GOODPUT_LEDGERS: tuple[str, ...] = (
    # Expected wall-clock cost per failure-renewal cycle: checkpoint writes, half an interval (plus the write
    # in flight) of rework and a restart per failure, all inside the wall-clock time they lengthen.
    "expected_loss",
    # Seed 000 §3.3 / mlsysim tutorial 06 §5: lost time over a window = writes + failures x half an interval;
    # no restart term, reported against the window.
    "sec5_writes_half_interval",
    # Seed 000 §3.3 / mlsysim ReliabilityResult.goodput_ratio: 1 - C/T - R/MTBF (steady-state shares).
    "mlsysim_goodput_ratio",
)

_SEED000 = "seed 000 §3 (mlsysim 0.1.2 ReliabilityModel defaults)"

DEFAULTS: dict[str, Default] = {
    # --- reliability -------------------------------------------------------------------------------------
    "cluster.reliability.gpu_mttf_h": Default(
        50_000.0,
        "h",
        f"{_SEED000}; CONTRACT.md v1 reliability convention. Llama 3 (Dubey et al. 2024, Table 5) observed "
        "148 faulty-GPU interruptions in 54 days on 16,384 H100, i.e. ~143,000 GPU-hours per GPU fault.",
    ),
    "cluster.reliability.nic_mttf_h": Default(150_000.0, "h", f"{_SEED000}; CONTRACT.md v1"),
    "cluster.reliability.psu_mttf_h": Default(100_000.0, "h", f"{_SEED000}; CONTRACT.md v1"),
    "cluster.reliability.psus_per_node": Default(2, "", f"{_SEED000}: 2 PSUs in series per 8-GPU node"),
    "cluster.reliability.nics_per_node": Default(
        None, "", "None = one NIC per GPU (gpus_per_node), the DGX H100 layout of 8 ConnectX-7 compute NICs"
    ),
    "cluster.reliability.other_mttf_h": Default(
        (), "h", "none: only the components the cluster names are in series (CONTRACT.md v1)"
    ),
    "cluster.reliability.restart_s": Default(
        300.0, "s", "mlsysim ReliabilityModel recovery time R = 300 s (seed 000 §3.3)"
    ),
    "cluster.reliability.mtbf_convention": Default(
        "node_series",
        "",
        "node-level series model: node MTBF = 1/sum(count_i/MTTF_i), cluster MTBF = node MTBF / nodes "
        "(seed 000 §3; any component stops a synchronous job)",
    ),
    # --- storage -----------------------------------------------------------------------------------------
    "cluster.storage.write_gb_s": Default(
        500.0, "GB/s", "mlsysim CheckpointModel parallel file-system cap, 500 GB/s (seed 000 §3.2)"
    ),
    "cluster.storage.per_writer_gb_s": Default(
        7.0,
        "GB/s",
        "effective write rate of one writing node: 988.4 GB / 141.2 s in mlsysim (seed 000 §3.2); "
        "close to the ~7 GB/s sequential write of one data-center NVMe SSD or one 100 GbE client stream",
    ),
    # --- power -------------------------------------------------------------------------------------------
    "cluster.power.host_w_per_node": Default(
        2_000.0,
        "W",
        "CPUs, memory, NICs, NVSwitches and fans of an 8-GPU node under training load; NVIDIA DGX H100 "
        "data sheet gives 10.2 kW max for the system, 8 x 700 W of which are GPUs (4.6 kW non-GPU ceiling)",
    ),
    "cluster.power.idle_fraction": Default(
        0.3,
        "fraction",
        "GPU draw while not computing (communication waits, pipeline bubbles, checkpoint writes, restarts) "
        "as a share of TDP: the 30% idle floor of mlsysim SustainabilityModel (P = 0.3 TDP + 0.7 TDP x "
        "utilisation). An H100 parked at idle draws nearer 10% of TDP, but clocks and HBM stay up during "
        "collectives (Patel et al., 'Characterizing Power Management Opportunities for LLMs in the "
        "Cloud', ASPLOS 2024)",
    ),
    # --- checkpoints -------------------------------------------------------------------------------------
    "training.checkpoint.interval_h": Default(
        None, "h", "None = the optimum of training.checkpoint.interval_method on the real write time"
    ),
    "training.checkpoint.writers": Default(
        None,
        "",
        "None = one writer per node: with ZeRO-1 or FSDP every node holds a distinct shard of the model "
        "and optimizer state, and sharded checkpointing (PyTorch DCP, Megatron dist-ckpt) has each node "
        "write its own shard in parallel",
    ),
    "training.checkpoint.interval_method": Default(
        "daly",
        "",
        "Daly 2006, 'A higher order estimate of the optimum checkpoint interval for restart dumps', "
        "FGCS 22(3):303-312, eq. 37; 'young' = Young 1974, CACM 17(9), sqrt(2 C M); 'exact' = the optimum "
        "of the expected_loss ledger, T = M (1 + W0(-e^(-1-C/M)))",
    ),
    "training.checkpoint.goodput_ledger": Default(
        "expected_loss",
        "",
        "writes + rework (half an interval plus the write in flight per failure) + restarts, each failure "
        "counted over the wall-clock time it lengthens (Daly 2006 §3 renewal argument)",
    ),
    # --- site (only when neither the user nor a region gives them) -----------------------------------
    "site.grid_gco2_per_kwh": Default(
        480.0, "gCO2e/kWh", "world average 2023, Ember Global Electricity Review 2024"
    ),
    "site.pue": Default(1.56, "", "global average PUE, Uptime Institute Global Data Center Survey 2024"),
    "site.wue_l_per_kwh": Default(
        1.8,
        "L/kWh",
        "industry average on-site WUE, Shehabi et al. 'United States Data Center Energy Usage Report' "
        "(LBNL 2016); The Green Grid WP#35 defines WUE per kWh of IT energy",
    ),
    "site.electricity_usd_per_kwh": Default(
        0.12, "USD/kWh", "mlsysim EconomicsModel default electricity price (seed 000 §5)"
    ),
    "site.region": Default(None, "", "None = no region: the site.* defaults above apply"),
    # --- economics ---------------------------------------------------------------------------------------
    "economics.amortization_years": Default(
        3.0, "years", "straight-line over 3 years, mlsysim EconomicsModel (seed 000 §5); CONTRACT.md v1"
    ),
    "economics.infra_multiplier": Default(
        1.0,
        "",
        "1.0 = accelerators only (CONTRACT.md v1, mlsysim default); mlsysim source comments put full "
        "facility cost at 2.0-2.5 (seed 000 §5)",
    ),
    "economics.maintenance_per_year": Default(
        0.05, "fraction", "5% of capex per year, mlsysim EconomicsModel (seed 000 §5)"
    ),
    "economics.cloud_usd_per_gpu_hour": Default(
        None, "USD/GPU-h", "None = no cloud comparison unless a price book gives one"
    ),
    "economics.embodied_lifetime_years": Default(
        5.0,
        "years",
        "service life over which embodied carbon is amortised; CONTRACT.md v1 (accelerator embodied "
        "carbon per unit comes from the accelerator catalog)",
    ),
    "economics.window_days": Default(
        30.0,
        "days",
        "window for time-based figures when neither training.total_tokens nor economics.job_days is "
        "given (CONTRACT.md v1 Duration convention; the 30-day job of seed 000)",
    ),
}
