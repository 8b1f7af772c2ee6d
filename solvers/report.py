"""A report document (CONTRACT.md v1) composed from its parts; nothing is computed here but the warnings.

``compose`` takes a resolved scenario, its layout, the engine's row for that layout (python scalars) and the
ledger on that row, and lays them out as the report: layout, step, traffic and memory from the row;
reliability, schedule, energy, carbon and tco from the ledger; the assumptions of the scenario, the step and
the ledger; warnings (a plan that does not fit in memory is a warning, not an error). The entry points that
produce the parts are in ``solvers.entry``.

``input_hash`` is ``canonical_hash`` of the resolved scenario document, which the report also carries under
``scenario``. A report never holds NaN or infinity: one would be a solver bug and raises
``SolverInternalError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from solvers import collectives, version
from solvers.canonical import canonical_hash
from solvers.errors import SolverInternalError, reason_to_error
from solvers.inputs import SCHEMA_VERSION, Resolved
from solvers.inputs.fields import TABLE
from solvers.inputs.reader import SCENARIO
from solvers.layout import Layout
from solvers.ledger import LedgerResult
from solvers.ledger_assumptions import step_assumptions
from solvers.ranges import figure_ranges, range_assumptions
from solvers.report_types import Assumption, LayoutBlock, Report, SearchSummary

__all__ = ["compose", "compose_report", "reason_to_error", "step_assumptions"]

_GB = 1e9


def compose_report(
    *,
    resolved: Resolved,
    layout: Mapping[str, Any],
    row: Mapping[str, Any],
    ledger: LedgerResult,
    search: Mapping[str, Any] | None = None,
    ranges: bool = True,
) -> Report:
    """The report from a resolved scenario, one layout given as a mapping with the document's spellings
    (``solvers.inputs.layout_from_batch``), its engine row and its ledger (the search's best layout);
    ``ranges`` as in ``compose``."""
    block: LayoutBlock = {
        "tp": int(layout["tp"]),
        "pp": int(layout["pp"]),
        "cp": int(layout["cp"]),
        "ep": int(layout["ep"]),
        "dp": int(layout["dp"]),
        "microbatch_seqs": int(layout["microbatch_seqs"]),
        "microbatches": row["microbatches"],
        "schedule": str(layout["schedule"]),
        "virtual_stages": int(layout["virtual_stages"]),
        "zero_stage": int(layout["zero_stage"]),
        "recompute": str(layout["recompute"]),
        "sequence_parallel": bool(layout["sequence_parallel"]),
        "fsdp_reshard_after_forward": bool(layout["fsdp_reshard_after_forward"]),
        "expert_tp": int(layout["expert_tp"]),
        "grad_reduce_dtype": str(layout["grad_reduce_dtype"]),
    }
    return _compose(resolved, block, row, ledger, None if search is None else dict(search), ranges)


def compose(
    resolved: Resolved,
    layout: Layout,
    row: Mapping[str, Any],
    ledger: LedgerResult,
    search: SearchSummary | None = None,
    ranges: bool = True,
    *,
    document: dict[str, Any] | None = None,
) -> Report:
    """The report of ``resolved`` at ``layout``, from the engine's ``row`` (python scalars) and ``ledger``.
    ``ranges`` adds the figures' ``ranges``, ``ranges_method`` and one assumption entry per sampled input
    (``solvers.ranges``); False leaves them out (the rest of the report is the same bits either way).

    The report owns every dict and list in it: ``resolved`` gives a new document and new assumption entries
    on each read, and stays as it was. ``document``: the resolved document when the caller has a new one that
    nothing else holds (``solve``), which the report then takes instead of reading ``resolved.document``.
    """
    return _compose(resolved, layout.block(row["microbatches"]), row, ledger, search, ranges, document)


def _stated_keys(resolved: Resolved) -> set[str]:
    """The fields the scenario gave (their assumption entries' source is the scenario): one pass over the
    hundred-odd entries, read by every check of a report."""
    # indexed, not unpacked: unpacking a named tuple takes the slow generic path (half this set's time)
    return {note[0] for note in resolved.notes if note[3] == SCENARIO}


# the training fields that say how routed tokens are sent and load the experts (training.moe_*)
_ROUTING_PATHS = tuple(f"training.{name}" for name in TABLE.keys("training") if name.startswith("moe_"))


def _routing_warnings(resolved: Resolved, layout: LayoutBlock, stated_keys: set[str]) -> list[str]:
    """What a report should say about how routed tokens are priced (docs/CONVENTIONS.md, "MoE dispatch across
    nodes" and "Expert load"): a default dispatch under a node-limited router whose experts span nodes, a device
    limit the dispatch does not read, routing
    fields on a model without experts, a shared-expert overlap without shared experts, and a capacity that drops
    tokens even at an even load."""
    moe, training = resolved.model.moe, resolved.training
    if moe is None:
        stated = [path for path in _ROUTING_PATHS if path in stated_keys]
        return [f"{', '.join(stated)}: the model has no experts, so this changes nothing"] if stated else []
    out = []
    members = collectives.members_per_node(
        group_size=int(layout["ep"]),
        stride=int(layout["expert_tp"]),
        gpus_per_node=resolved.cluster.gpus_per_node,
    )
    spans_nodes = members < int(layout["ep"])
    if spans_nodes and moe.max_nodes_per_token is not None and "training.moe_dispatch" not in stated_keys:
        out.append(
            f"training.moe_dispatch: the router sends a token to at most {moe.max_nodes_per_token} nodes "
            f"(model.moe.max_nodes_per_token) and the {layout['ep']} expert ranks span nodes, but each routed copy "
            "is priced across the NIC on its own (per_expert, the default); a dispatcher that sends one copy per "
            "node and forwards it over the scale-up link (DeepSeek-V3 §3.2.2, DeepEP) is per_node"
        )
    if moe.max_gpus_per_token is not None and training.moe_dispatch != "per_node":
        out.append(
            f"model.moe.max_gpus_per_token: read only with training.moe_dispatch per_node (one copy per target GPU); "
            f"under {training.moe_dispatch} every routed copy is sent on its own, so this changes nothing"
        )
    if training.moe_shared_expert_overlap and not moe.shared_experts:
        out.append(
            "training.moe_shared_expert_overlap: the model has no shared experts (model.moe.shared_experts is 0), "
            "so this changes nothing"
        )
    capacity = training.moe_capacity_factor
    if capacity is not None and capacity < 1.0:
        out.append(
            f"training.moe_capacity_factor: {capacity:g} is below 1, so every expert drops tokens even at an "
            f"even load and computes at most {capacity:g} of the mean"
        )
    return out


def _compose(
    resolved: Resolved,
    layout: LayoutBlock,
    row: Mapping[str, Any],
    ledger: LedgerResult,
    search: Mapping[str, Any] | None,
    ranges: bool,
    document: dict[str, Any] | None = None,
) -> Report:
    warnings = list(resolved.warnings)
    fits = bool(row["fits"])
    roofline = bool(row.get("roofline_bound", False))
    if not fits:
        warnings.append(
            f"memory: the plan needs {float(row['total_bytes']) / _GB:,.1f} GB per GPU and the accelerator "
            f"holds {float(row['capacity_bytes']) / _GB:,.1f} GB (memory.fits is false); consider more "
            "pipeline or tensor parallelism, a higher ZeRO stage or activation recomputation"
        )
    if roofline:
        warnings.append(
            "compute: per-GPU matrices are small enough that HBM bandwidth, not math, bounds some of the "
            "step (step.roofline_bound)"
        )
    stated_keys = _stated_keys(resolved)
    if (
        layout["zero_stage"] >= 3
        and layout["microbatches"] > 1
        and "training.zero3_exchange" not in stated_keys
    ):
        warnings.append(
            f"training.zero3_exchange: ZeRO-3 over {layout['microbatches']} microbatches a step is priced with one "
            "data-parallel exchange a step (once_per_step, the default and the cheaper reading); a framework that "
            "gathers and reduce-scatters in every microbatch needs every_microbatch (which frameworks do: the "
            "assumption entry of training.zero3_exchange)"
        )
    if resolved.training.fp8_param_gather and layout["zero_stage"] == 0:
        warnings.append(
            "training.fp8_param_gather: ZeRO-0 all-reduces the gradients and gathers no weights, so this changes "
            "nothing (Megatron-Core refuses --fp8-param-gather without its distributed optimizer or FSDP)"
        )
    warnings.extend(_routing_warnings(resolved, layout, stated_keys))
    support = None if search is None else search.get("support")
    if support is not None and support.get("within_validated") is False:
        # the search's own words (CONTRACT.md "Support"), where a reader of the report's warnings looks
        warnings.append(
            "layout: the chosen layout lies outside the validated runs, so its figures extrapolate the step model "
            f"beyond the published runs it was checked against (search.support): {'; '.join(support['reasons'])}"
        )
    warnings.extend(ledger.warnings)  # texts the ledger wrote
    if document is None:
        document = resolved.document
    # The scenario's, the step's and the ledger's entries: all of them depend on the scenario only, and
    # ``resolve`` wrote them once (``ledger.assumptions`` are the same entries when the ledger made them).
    assumptions: list[Assumption] = resolved.report_assumptions  # type: ignore[assignment]
    report: Report = {
        "schema_version": SCHEMA_VERSION,
        "solver_version": version.SOLVER_VERSION,
        "input_hash": resolved.input_hash or canonical_hash(document),
        "layout": layout,
        "step": {
            "model_flops_per_token": row["model_flops_per_token"],
            "compute_s": row["compute_s"],
            "comm_s": {
                "tp": row["comm_s_tp"],
                "cp": row["comm_s_cp"],
                "pp": row["comm_s_pp"],
                "dp": row["comm_s_dp"],
                "ep": row["comm_s_ep"],
            },
            "exposed_comm_s": {
                "tp": row["exposed_comm_s_tp"],
                "cp": row["exposed_comm_s_cp"],
                "pp": row["exposed_comm_s_pp"],
                "dp": row["exposed_comm_s_dp"],
                "ep": row["exposed_comm_s_ep"],
            },
            "bubble_s": row["bubble_s"],
            "bubble_fraction": row["bubble_fraction"],
            "step_s": row["step_s"],
            "tokens_per_s": row["tokens_per_s"],
            "mfu": row["mfu"],
            "mfu_bf16": row["mfu_bf16"],
            "hfu": row["hfu"],
            "gpu_busy_fraction": row["gpu_busy_fraction"],
            "roofline_bound": roofline,
        },
        "traffic": {
            "bytes_per_gpu": {
                "tp": row["bytes_per_gpu_tp"],
                "cp": row["bytes_per_gpu_cp"],
                "pp": row["bytes_per_gpu_pp"],
                "dp": row["bytes_per_gpu_dp"],
                "ep": row["bytes_per_gpu_ep"],
            },
            "nic_duty_cycle": row["nic_duty_cycle"],
            "burst_bytes": row["burst_bytes"],
        },
        "memory": {
            "weights_bytes": row["weights_bytes"],
            "grads_bytes": row["grads_bytes"],
            "optimizer_bytes": row["optimizer_bytes"],
            "activations_bytes": row["activations_bytes"],
            "total_bytes": row["total_bytes"],
            "capacity_bytes": row["capacity_bytes"],
            "fits": fits,
        },
        # compute_ledger made these dicts for this report alone
        "reliability": ledger.reliability,
        "schedule": ledger.schedule,
        "energy": ledger.energy,
        "carbon": ledger.carbon,
        "tco": ledger.tco,
        "assumptions": assumptions,
        "warnings": warnings,
        "scenario": document,
    }
    if search is not None:
        report["search"] = dict(search)
    if ranges:
        # Python floats, checked finite where they were made (CONTRACT.md v1.1, additive).
        report["ranges"], report["ranges_method"] = figure_ranges(resolved, row)
        assumptions.extend(range_assumptions())
    return _checked(report, row)


def _checked(report: Report, row: Mapping[str, Any]) -> Report:
    """``report`` unchanged when the engine's row holds plain finite JSON values; otherwise the slow walk
    converts numpy scalars and names the first non-finite field (``SolverInternalError``).

    The engine's blocks (step, traffic, memory) are made of the row's values and of ints, bools and names of
    the layout, so one flat look at the row covers them. The rest was checked where it was made: ``resolve``
    refused every non-finite input and checked its assumptions, the ledger checks every block it returns
    (its assumptions hold the parser-checked inputs), and the step assumptions are accelerator peaks that
    ``resolve`` checked.
    """
    if type(row) is dict:
        values = row.values()
        # Python numbers only, and a finite sum: one NaN or infinity makes the sum NaN or infinite. (A sum
        # that overflows merely sends a finite row down the exact walk below.)
        if set(map(type, values)) <= _ROW_NUMBER_TYPES and math.isfinite(sum(values)):
            return report
    checked: Report = _plain_checked(report, "")
    return checked


_ROW_NUMBER_TYPES = frozenset({float, int, bool})


def _plain_checked(value: Any, path: str) -> Any:
    """Python scalars only, and no NaN or infinity anywhere (``SolverInternalError`` names the path)."""
    if isinstance(value, Mapping):
        return {str(k): _plain_checked(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_checked(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _plain_checked(value.item(), path)
        return [_plain_checked(v, f"{path}[{i}]") for i, v in enumerate(value.tolist())]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise SolverInternalError(f"report field {path} is {value!r}")
    return value
