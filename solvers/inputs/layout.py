"""``training.layout``: one parallel layout (tp, pp, cp, ep, dp, schedule, ...) and its array form.

``parse_layout`` checks the fields and the GPU split (tp*cp*pp divides gpus, dp is what remains);
``layout_batch`` / ``layout_from_batch`` convert resolved layout dicts to and from a ``LayoutBatch``.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np

from solvers.inputs import fields
from solvers.inputs.reader import SCENARIO, Reader, join, read_choices, read_numbers, row_default
from solvers.layout import Layout
from solvers.specs import RECOMPUTE_CODE, RECOMPUTE_POLICIES, SCHEDULE_CODE, SCHEDULES, LayoutBatch


def parse_layout(r: Reader, raw: Any, path: str, gpus: int) -> dict[str, Any] | None:
    given = r.section(raw, path)
    if given is None:
        return None
    before = len(r.errors)
    nums = read_numbers(r, given, path)
    read_choices(r, given, path, nums)
    if len(r.errors) > before:
        return None
    out: dict[str, Any] = {}
    for row in fields.TABLE.children(path):
        if row.name in ("dp", "expert_tp"):
            continue
        # recorded without a unit (microbatch_seqs included), as reports have always carried them
        out[row.name] = row_default(r, row, nums, unit="")
    model_parallel = out["tp"] * out["pp"] * out["cp"]
    if gpus % model_parallel:
        r.error(
            join(path, "tp"),
            f"tp*cp*pp (={model_parallel:,}) must divide gpus (={gpus:,})",
        )
        return None
    dp = gpus // model_parallel
    if nums.get("dp") is not None and nums["dp"] != dp:
        r.error(join(path, "dp"), f"must equal gpus / (tp*cp*pp) (={dp:,}), got {nums['dp']:,}")
        return None
    r.note(join(path, "dp"), dp, "", SCENARIO if nums.get("dp") is not None else "gpus / (tp*cp*pp)")
    out["dp"] = dp
    expert_tp = nums.get("expert_tp")
    r.note(
        join(path, "expert_tp"),
        expert_tp if expert_tp is not None else out["tp"],
        "",
        SCENARIO if expert_tp is not None else "CONTRACT.md v1: experts use tp unless expert_tp is given",
    )
    out["expert_tp"] = int(expert_tp) if expert_tp is not None else int(out["tp"])
    return out


_LAYOUT_INT_FIELDS: tuple[str, ...] = (
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "microbatch_seqs",
    "virtual_stages",
    "zero_stage",
    "expert_tp",
)


def layout_batch(layouts: list[dict[str, Any]]) -> LayoutBatch:
    """Parallel arrays from resolved layout dicts (every LAYOUT_KEYS field explicit, dp resolved), read-only.

    One int64 and one bool matrix, one row per layout, made read-only before each field is taken as a column
    of them: two array constructions instead of fourteen, and the fields are read-only views without a flag
    set on each of them (``resolve`` holds the batch; nothing may change it).
    """
    int_rows = [
        [int(lay[field]) for field in _LAYOUT_INT_FIELDS]
        + [SCHEDULE_CODE[lay["schedule"]], RECOMPUTE_CODE[lay["recompute"]]]
        for lay in layouts
    ]
    flag_rows = [
        [
            bool(lay["sequence_parallel"]),
            bool(lay["fsdp_reshard_after_forward"]),
            lay["grad_reduce_dtype"] == "fp32",
        ]
        for lay in layouts
    ]
    return _batch(int_rows, flag_rows)


def layout_batch_of(layout: Layout | None) -> LayoutBatch:
    """``layout_batch([lay])`` for the one resolved layout ``layout_of(lay)`` gives; the empty batch for
    None (``layout: auto``). The same arrays, made from the ``Layout``'s python scalars."""
    if layout is None:
        return _batch([], [])
    int_rows = [
        [getattr(layout, field) for field in _LAYOUT_INT_FIELDS] + [layout.schedule, layout.recompute]
    ]
    flag_rows = [[layout.sequence_parallel, layout.fsdp_reshard_after_forward, layout.grad_reduce_fp32]]
    return _batch(int_rows, flag_rows)


def _batch(int_rows: list[list[int]], flag_rows: list[list[bool]]) -> LayoutBatch:
    n = len(int_rows)
    ints = np.array(int_rows, dtype=np.int64).reshape(n, len(_LAYOUT_INT_FIELDS) + 2)
    flags = np.array(flag_rows, dtype=np.bool_).reshape(n, 3)
    ints.flags.writeable = False
    flags.flags.writeable = False
    columns, bits = ints.T, flags.T
    named = dict(zip(_LAYOUT_INT_FIELDS, columns, strict=False))
    return LayoutBatch(
        tp=named["tp"],
        pp=named["pp"],
        cp=named["cp"],
        ep=named["ep"],
        dp=named["dp"],
        microbatch_seqs=named["microbatch_seqs"],
        schedule=columns[len(_LAYOUT_INT_FIELDS)],
        virtual_stages=named["virtual_stages"],
        sequence_parallel=bits[0],
        zero_stage=named["zero_stage"],
        fsdp_reshard_after_forward=bits[1],
        expert_tp=named["expert_tp"],
        recompute=columns[len(_LAYOUT_INT_FIELDS) + 1],
        grad_reduce_fp32=bits[2],
    )


def layout_of(lay: dict[str, Any]) -> Layout:
    """A resolved layout dict as a ``Layout`` (python scalars): ``Layout.of(layout_batch([lay]))`` without
    the arrays, for a single solve."""
    return Layout(
        tp=int(lay["tp"]),
        pp=int(lay["pp"]),
        cp=int(lay["cp"]),
        ep=int(lay["ep"]),
        dp=int(lay["dp"]),
        microbatch_seqs=int(lay["microbatch_seqs"]),
        schedule=SCHEDULE_CODE[lay["schedule"]],
        virtual_stages=int(lay["virtual_stages"]),
        sequence_parallel=bool(lay["sequence_parallel"]),
        zero_stage=int(lay["zero_stage"]),
        fsdp_reshard_after_forward=bool(lay["fsdp_reshard_after_forward"]),
        expert_tp=int(lay["expert_tp"]),
        recompute=RECOMPUTE_CODE[lay["recompute"]],
        grad_reduce_fp32=lay["grad_reduce_dtype"] == "fp32",
    )


def layout_from_batch(batch: LayoutBatch, i: int) -> dict[str, Any]:
    """Row ``i`` of a LayoutBatch as a resolved layout dict (the inverse of ``layout_batch``)."""
    if i == 0 and len(batch) == 1:
        one = batch.single  # python scalars
    else:
        one = SimpleNamespace(**{f.name: getattr(batch, f.name)[i].item() for f in dataclasses.fields(batch)})
    return {
        "tp": one.tp,
        "pp": one.pp,
        "cp": one.cp,
        "ep": one.ep,
        "dp": one.dp,
        "microbatch_seqs": one.microbatch_seqs,
        "schedule": SCHEDULES[one.schedule],
        "virtual_stages": one.virtual_stages,
        "sequence_parallel": one.sequence_parallel,
        "zero_stage": one.zero_stage,
        "fsdp_reshard_after_forward": one.fsdp_reshard_after_forward,
        "expert_tp": one.expert_tp,
        "recompute": RECOMPUTE_POLICIES[one.recompute],
        "grad_reduce_dtype": "fp32" if one.grad_reduce_fp32 else "bf16",
    }
