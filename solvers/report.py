"""Scenario document -> report document (CONTRACT.md v1).

``solve`` resolves the scenario (``solvers.inputs``), checks the layout with the engine's rules, evaluates the
step (``solvers.engine``), runs the reliability / schedule / energy / carbon / TCO ledger
(``solvers.ledger.compute_ledger``) on that step, and composes one report: layout, step, traffic and memory
from ``StepColumns.row(i)``; reliability, schedule, energy, carbon and tco from the ledger; the assumptions
ledger of all three; warnings (a plan that does not fit in memory is a warning, not an error).

``input_hash`` is ``canonical_hash`` of the resolved scenario document, which the report also carries under
``scenario``. A report never holds NaN or infinity: one would be a solver bug and raises
``SolverInternalError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from solvers import engine
from solvers.canonical import canonical_hash
from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.inputs import SCHEMA_VERSION, Resolved, layout_from_batch, resolve
from solvers.ledger import LedgerInputs, compute_ledger, ledger_notes
from solvers.plain import ReadOnlyDict
from solvers.search.ranking import search_resolved
from solvers.specs import LayoutBatch

# Changes whenever any number that a given input produces changes (see the CHANGELOG, "solver changes").
SOLVER_VERSION = "1.2.0"

_GB = 1e9


def reason_to_error(reason: str) -> FieldError:
    """An engine rule text ``"path: message"`` as a FieldError (the whole text when it has no path)."""
    path, sep, message = reason.partition(": ")
    if sep and path and " " not in path:
        return FieldError(path=path, message=message)
    return FieldError(path="training.layout", message=reason)


def _pick_layout(resolved: Resolved) -> tuple[LayoutBatch, dict[str, Any], dict[str, Any] | None]:
    """Check and evaluate the scenario's layouts; returns (a batch of the chosen layout, its engine row as
    python scalars, the search summary or None).

    One layout: the engine's first broken rule is a ``ScenarioError`` naming its field. ``layout: auto``:
    ``solvers.search`` enumerates and evaluates every candidate with the same vectorised engine and the
    fastest layout that fits in memory is reported; the summary counts rejections by rule.
    """
    model, cluster, training = resolved.model, resolved.cluster, resolved.training
    if not resolved.layout_auto:
        row, reason = engine.evaluate_one(
            model=model, cluster=cluster, training=training, layouts=resolved.layouts
        )
        if row is None:
            raise ScenarioError([reason_to_error(reason or "training.layout: invalid layout")])
        return resolved.layouts, row, None

    result = search_resolved(resolved)  # raises ScenarioError naming the rule when nothing is feasible
    best = result.layouts.take(np.array([0]))
    columns = engine.evaluate(model=model, cluster=cluster, training=training, layouts=best)
    summary = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": result.rejected,
        "elapsed_s": result.elapsed_s,
    }
    return best, columns.row(0), summary


def _ledger(resolved: Resolved, row: Mapping[str, Any], *, shared: bool = False) -> Any:
    """The ledger of ``resolved`` at the step of ``row``.

    ``shared``: ``resolved`` is the cache's own and its ledger fields never change, so one LedgerInputs and
    the checked notes of its scenario values are kept on it, and each report passes only its step values.
    """
    step = (
        float(row["step_s"]),
        float(row["gpu_busy_fraction"]),
        float(resolved.training.global_batch_tokens),
    )
    if not shared:
        inputs = LedgerInputs(*step, **resolved.ledger_fields)
        return compute_ledger(inputs)
    kept = resolved.__dict__.get("_ledger_inputs")
    if kept is None:
        inputs = LedgerInputs(*step, **resolved.ledger_fields)
        kept = resolved.__dict__["_ledger_inputs"] = (inputs, ledger_notes(inputs))
    inputs, notes = kept
    return compute_ledger(inputs, notes=notes, step=step)


def _step_assumptions(resolved: Resolved) -> tuple[dict[str, Any], ...]:
    """The step's conventions; read-only entries kept on the (frozen, never changing) cluster spec."""
    precision = resolved.training.precision
    kept: dict[str, tuple[dict[str, Any], ...]] | None = resolved.cluster.__dict__.get("_step_notes")
    if kept is None:
        kept = resolved.cluster.__dict__["_step_notes"] = {}
    notes = kept.get(precision)
    if notes is None:
        notes = kept[precision] = _make_step_assumptions(resolved.cluster.accelerator.peak_tflops, precision)
    return notes


def _make_step_assumptions(peaks: Mapping[str, float], precision: str) -> tuple[dict[str, Any], ...]:
    entries: list[dict[str, Any]] = [
        {
            "key": "step.model_flops_per_token",
            "value": "6 * active_params + 12 * layers * hidden * seq_len",
            "unit": "FLOP/token",
            "source": "PaLM convention (Chowdhery et al. 2022, appendix B), non-causal attention; recompute "
            "excluded from mfu and counted in hfu",
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
    return tuple(ReadOnlyDict(entry) for entry in entries)  # read-only, like every other assumption entry


def compose_report(
    *,
    resolved: Resolved,
    layout: Mapping[str, Any],
    row: Mapping[str, Any],
    ledger: Any,
    search: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report document from a resolved scenario, one engine row and its ledger result.

    ``row`` holds python scalars (``evaluate_one`` or ``StepColumns.row``); anything else in the engine's
    blocks is caught and converted by ``_checked``. The report takes ``resolved``'s document as it is and a
    copy of its assumptions list (a Resolved from ``resolve`` is the caller's own).
    """
    return _compose(
        resolved,
        _exact_layout(layout),
        row,
        ledger,
        search,
        document=resolved.document,
        assumptions=list(resolved.assumptions),
    )


_LAYOUT_INTS = ("tp", "pp", "cp", "ep", "dp", "microbatch_seqs", "virtual_stages", "zero_stage", "expert_tp")
_LAYOUT_BOOLS = ("sequence_parallel", "fsdp_reshard_after_forward")


def _exact_layout(layout: Mapping[str, Any]) -> dict[str, Any]:
    """A resolved layout with python ints and bools (``layout_from_batch`` gives them already)."""
    out = dict(layout)
    for name in _LAYOUT_INTS:
        out[name] = int(layout[name])
    for name in _LAYOUT_BOOLS:
        out[name] = bool(layout[name])
    return out


def _compose(
    resolved: Resolved,
    layout: Mapping[str, Any],
    row: Mapping[str, Any],
    ledger: Any,
    search: Mapping[str, Any] | None,
    *,
    document: dict[str, Any],
    assumptions: list[dict[str, Any]],
) -> dict[str, Any]:
    # ``document`` and the ``assumptions`` list become the report's own (the list is extended in place).
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
    warnings.extend(ledger.warnings)  # texts the ledger wrote

    assumptions.extend(_step_assumptions(resolved))
    assumptions.extend(ledger.assumptions)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "solver_version": SOLVER_VERSION,
        "input_hash": resolved.input_hash or canonical_hash(document),
        "layout": {  # python ints and bools: layout_from_batch's, or _exact_layout's
            "tp": layout["tp"],
            "pp": layout["pp"],
            "cp": layout["cp"],
            "ep": layout["ep"],
            "dp": layout["dp"],
            "microbatch_seqs": layout["microbatch_seqs"],
            "microbatches": row["microbatches"],
            "schedule": layout["schedule"],
            "virtual_stages": layout["virtual_stages"],
            "zero_stage": layout["zero_stage"],
            "recompute": layout["recompute"],
            "sequence_parallel": layout["sequence_parallel"],
            "fsdp_reshard_after_forward": layout["fsdp_reshard_after_forward"],
            "expert_tp": layout["expert_tp"],
            "grad_reduce_dtype": layout["grad_reduce_dtype"],
        },
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
    return _checked(report, row)


def _checked(report: dict[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` unchanged when the engine's row holds plain finite JSON values; otherwise the slow walk
    converts numpy scalars and names the first non-finite field (``SolverInternalError``).

    The engine's blocks (step, traffic, memory) are made of the row's values and of ints, bools and names of
    the layout, so one flat look at the row covers them. The rest was checked where it was made: ``resolve``
    refused every non-finite input and checked its assumptions once, the ledger checks every block it
    returns and its assumptions once per set of inputs, and the step assumptions are accelerator peaks that
    ``resolve`` checked.
    """
    if type(row) is dict:
        values = row.values()
        # Python numbers only, and a finite sum: one NaN or infinity makes the sum NaN or infinite. (A sum
        # that overflows merely sends a finite row down the exact walk below.)
        if set(map(type, values)) <= _ROW_NUMBER_TYPES and math.isfinite(sum(values)):
            return report
    return _plain_checked(report, "")


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


def solve_resolved(resolved: Resolved) -> dict[str, Any]:
    """The report of an already resolved scenario (the report takes its document and assumptions)."""
    return _report(resolved, document=resolved.document, assumptions=list(resolved.assumptions))


def solve(document: Any) -> dict[str, Any]:
    """Scenario document (dict) -> report document (dict); ``ScenarioError`` names the field for bad input.

    Example: ``solve({"model": {"preset": "llama3-8b"}, "cluster": {"node": "dgx-h100", "gpus": 64}})``
    returns a report whose ``step.step_s`` is the time of one optimizer step of a ~4M-token batch.
    """
    return solve_resolved(resolve(document))


def _report(
    resolved: Resolved, *, document: dict[str, Any], assumptions: list[dict[str, Any]], shared: bool = False
) -> dict[str, Any]:
    layouts, row, search = _pick_layout(resolved)
    ledger = _ledger(resolved, row, shared=shared)
    return _compose(
        resolved,
        layout_from_batch(layouts, 0),
        row,
        ledger,
        search,
        document=document,
        assumptions=assumptions,
    )


def solve_many(documents: Iterable[Any]) -> list[dict[str, Any]]:
    """One result per document, in order: a report, or ``{"error": {"path", "message", "errors"}}``."""
    out: list[dict[str, Any]] = []
    for document in documents:
        try:
            out.append(solve(document))
        except ScenarioError as exc:
            out.append({"error": exc.as_dict()})
    return out
