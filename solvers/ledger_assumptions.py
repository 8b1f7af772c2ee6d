"""The assumptions ledger of the reliability, schedule, energy, carbon and TCO blocks: which convention and
which input each of their numbers rests on, with its source, in the order a report lists them.

The texts depend on the scenario's inputs only (never on the step): ``solvers.inputs.resolve`` writes them
once into the ``Resolved`` (from its ``LedgerFields``), with the step's conventions (``step_assumptions``);
nothing is kept here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

from solvers import checkpoint as ckpt
from solvers.ledger_defaults import DEFAULTS
from solvers.plain import to_plain
from solvers.report_types import Assumption

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


class ScenarioLedger(Protocol):
    """What the assumption texts and ``solvers.ledger.reliability`` read: the scenario's ledger fields, never
    a step figure (``LedgerInputs`` and ``solvers.inputs.LedgerFields`` both have them)."""

    @property
    def gpus(self) -> int: ...
    @property
    def params(self) -> float: ...
    @property
    def restart_s(self) -> float: ...
    @property
    def gpus_per_node(self) -> int: ...
    @property
    def mtbf_convention(self) -> str: ...
    @property
    def gpu_mttf_h(self) -> float: ...
    @property
    def nic_mttf_h(self) -> float: ...
    @property
    def psu_mttf_h(self) -> float: ...
    @property
    def nics_per_node(self) -> int: ...
    @property
    def psus_per_node(self) -> int: ...
    @property
    def other_mttf_h(self) -> tuple[float, ...]: ...
    @property
    def optimizer(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def checkpoint_writers(self) -> int | None: ...
    @property
    def storage_per_writer_gb_s(self) -> float: ...
    @property
    def storage_write_gb_s(self) -> float: ...
    @property
    def checkpoint_interval_h(self) -> float | None: ...
    @property
    def interval_method(self) -> str: ...
    @property
    def goodput_ledger(self) -> str: ...
    @property
    def total_tokens(self) -> float | None: ...
    @property
    def job_days(self) -> float | None: ...
    @property
    def idle_fraction(self) -> float: ...
    @property
    def host_w_per_node(self) -> float: ...
    @property
    def embodied_lifetime_years(self) -> float: ...
    @property
    def grid_gco2_per_kwh(self) -> float: ...
    @property
    def amortization_years(self) -> float: ...
    @property
    def infra_multiplier(self) -> float: ...
    @property
    def maintenance_per_year(self) -> float: ...
    @property
    def cloud_usd_per_gpu_hour(self) -> float | None: ...


def step_assumptions(
    peaks: Mapping[str, float],
    precision: str,
    *,
    mla: bool = False,
    mtp: bool = False,
    head_dim: bool = False,
) -> list[Assumption]:
    """The step's conventions: how model FLOPs are counted and which peaks ``mfu`` and ``mfu_bf16`` use.
    ``mla``: the model has Multi-head Latent Attention, whose attention core counts at its own widths.
    ``mtp``: the model trains multi-token-prediction modules, counted as trained work.
    ``head_dim``: the model states its heads' width, so the attention core counts ``heads x head_dim``."""
    if mla:
        flops = "6 * active_params + 6 * layers * seq_len * heads * (qk_nope + qk_rope + v_head_dim)"
        flops_source = (
            "PaLM convention (Chowdhery et al. 2022, appendix B) with MLA's per-head query/key and value widths "
            "(DeepSeek-V3 §2.1.1), non-causal attention; recompute excluded from mfu and counted in hfu"
        )
    elif head_dim:
        flops = "6 * active_params + 12 * layers * heads * head_dim * seq_len"
        flops_source = (
            "PaLM convention (Chowdhery et al. 2022, appendix B) with the query and value width heads x head_dim "
            "in place of hidden (the model states its heads' width), non-causal attention; recompute excluded "
            "from mfu and counted in hfu"
        )
    else:
        flops = "6 * active_params + 12 * layers * hidden * seq_len"
        flops_source = (
            "PaLM convention (Chowdhery et al. 2022, appendix B), non-causal attention; recompute "
            "excluded from mfu and counted in hfu"
        )
    if mtp:
        flops = flops.replace("layers", "(layers + mtp_layers)") + " + 6 * mtp_layers * hidden * vocab"
        flops_source += (
            "; active_params holds the multi-token-prediction modules' (DeepSeek-V3 §2.2), each of which also "
            "attends and runs the shared output head once more: their work is counted as the model's, as "
            "Megatron-Core's FLOP count does"
        )
    return [
        {
            "key": "step.model_flops_per_token",
            "value": flops,
            "unit": "FLOP/token",
            "source": flops_source,
        },
        {
            "key": "step.mfu",
            "value": peaks[precision],
            "unit": "TFLOP/s",
            "source": f"dense {precision} peak of the accelerator (the training precision)",
        },
        {
            "key": "step.mfu_bf16",
            "value": peaks["bf16"],
            "unit": "TFLOP/s",
            "source": "dense BF16 peak of the accelerator (DeepSeek-V3 quotes its FP8 run this way)",
        },
    ]


def ledger_assumptions(inp: ScenarioLedger) -> list[Assumption]:
    """The conventions and inputs ``compute_ledger`` used, in the order of the report's ``assumptions``: a
    fresh list of fresh entries on every call (the report owns them)."""
    return [{"key": k, "value": v, "unit": u, "source": s} for k, v, u, s in ledger_rows(inp)]


def ledger_rows(inp: ScenarioLedger) -> list[tuple[str, Any, str, str]]:
    """``ledger_assumptions`` as (key, value, unit, source) rows (``resolve`` holds them as rows)."""
    notes: list[tuple[str, Any, str, str]] = []

    def note(key: str, value: object, unit: str, source: str) -> None:
        notes.append((key, to_plain(value), unit, source))

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
    note(
        "checkpoint.params",
        inp.params,
        "parameters",
        "the parameters a checkpoint holds: model.params plus the multi-token-prediction modules' "
        "(model.mtp_layers), which are trained, stored and checkpointed with the model",
    )
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
