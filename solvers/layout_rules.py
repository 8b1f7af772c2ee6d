"""The engine's layout rules: which layouts are valid, and the first rule an invalid one breaks, with a
message naming its field.

Memory is not a rule (CONTRACT.md: a plan that does not fit is a warning). ``rule_masks`` runs on a
``LayoutBatch`` (numpy columns, the search) or on one ``Layout`` (python scalars, a single solve) alike, as
``solvers.engine._step`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers import pipeline
from solvers.compute import Num, logical_not, maximum, per_op_defined
from solvers.layout import Layout
from solvers.specs import (
    PRECISIONS,
    RECOMPUTE_CODE,
    RECOMPUTE_POLICIES,
    SCHEDULE_CODE,
    SCHEDULES,
    BoolArray,
    ClusterSpec,
    IntArray,
    LayoutBatch,
    ModelSpec,
    TrainingSpec,
)

_INTERLEAVED = SCHEDULE_CODE["interleaved"]
_DUALPIPE = SCHEDULE_CODE["dualpipe"]
_PER_OP = RECOMPUTE_CODE["per_op"]


def layout_rule_codes(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layouts: LayoutBatch
) -> tuple[IntArray, tuple[str, ...]]:
    """Per layout the index of the first rule it breaks (0 = valid) and the rule names, vectorised.

    The search counts rejections by reason from these codes without formatting a message per layout;
    ``check_layouts`` turns them into messages.
    """
    names = ("ok", *_RULES)
    if len(layouts) == 1:
        masks = rule_masks(model=model, cluster=cluster, training=training, lay=Layout.of(layouts))
        code = next((index + 1 for index, bad in enumerate(masks) if bad), 0)
        return np.array([code], dtype=np.int64), names
    masks = rule_masks(model=model, cluster=cluster, training=training, lay=layouts)
    codes = np.zeros(len(layouts), dtype=np.int64)
    for index in range(len(masks) - 1, -1, -1):
        codes = np.where(masks[index], index + 1, codes)
    return codes, names


def check_layouts(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layouts: LayoutBatch
) -> tuple[BoolArray, list[str | None]]:
    """Per layout: valid, or the first rule broken as ``"path: message"``.

    Memory is not a rule (CONTRACT.md: a plan that does not fit is a warning). Example message:
    ``"training.layout.tp: tp*cp*pp (=96) must divide gpus (=16384)"``.
    """
    codes, _ = layout_rule_codes(model=model, cluster=cluster, training=training, layouts=layouts)
    ok = codes == 0
    messages: list[str | None] = [None] * len(layouts)
    for i in np.flatnonzero(codes):
        messages[int(i)] = rule_message(
            int(codes[i]), Layout.of(layouts, int(i)), model=model, cluster=cluster, training=training
        )
    return ok, messages


_RULES: tuple[str, ...] = (
    "layout_positive",
    "tp_cp_pp_divides_gpus",
    "product_equals_gpus",
    "tp_divides_heads",
    "pp_within_layers",
    "cp_divides_seq_len",
    "batch_multiple_of_seq_len",
    "batch_divides_dp_micro",
    "ep_dense_model",
    "ep_divides_dp_cp",
    "ep_divides_experts",
    "expert_tp_fits",
    "schedule_code",
    "recompute_code",
    "zero_stage_range",
    "virtual_stages_interleaved_only",
    "interleaved_needs_pp",
    "interleaved_layers",
    "interleaved_microbatches",
    "dualpipe_even_pp",
    "dualpipe_microbatches",
    "precision_peak",
    "per_op_llama_block",
)


def rule_masks(*, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, lay: Any) -> list[Num]:
    gpus = cluster.gpus
    tp, pp, cp, ep, dp = lay.tp, lay.pp, lay.cp, lay.ep, lay.dp
    b, v, etp = lay.microbatch_seqs, lay.virtual_stages, lay.expert_tp
    positive = (tp >= 1) & (pp >= 1) & (cp >= 1) & (ep >= 1) & (dp >= 1) & (b >= 1) & (v >= 1) & (etp >= 1)
    t = maximum(tp, 1)
    p = maximum(pp, 1)
    c = maximum(cp, 1)
    d = maximum(dp, 1)
    e = maximum(ep, 1)
    mb = maximum(b, 1)
    vv = maximum(v, 1)
    et = maximum(etp, 1)
    mp = t * c * p
    seq_len = training.seq_len
    seqs = training.global_batch_tokens // seq_len
    micro = seqs // (d * mb)
    first, last = pipeline.flush_sizes(microbatches=micro, f=training.pipeline_flush_microbatches)
    dense = model.moe is None
    experts = 1 if model.moe is None else model.moe.experts
    interleaved = lay.schedule == _INTERLEAVED
    dualpipe = lay.schedule == _DUALPIPE
    return [
        logical_not(positive),
        gpus % mp != 0,
        mp * d != gpus,
        model.heads % t != 0,
        p > model.layers,
        seq_len % c != 0,
        training.global_batch_tokens % seq_len != 0,
        seqs % (d * mb) != 0,
        (e > 1) & dense,
        (d * c) % e != 0,
        experts % e != 0,
        (t * c * d) % (e * et) != 0,
        (lay.schedule < 0) | (lay.schedule >= len(SCHEDULES)),
        (lay.recompute < 0) | (lay.recompute >= len(RECOMPUTE_POLICIES)),
        (lay.zero_stage < 0) | (lay.zero_stage > 3),
        (vv > 1) & logical_not(interleaved),
        interleaved & (p < 2),
        interleaved & (p * vv > model.layers + pipeline.STANDALONE_CHUNKS),
        interleaved & ((first % p != 0) | (last % p != 0)),
        dualpipe & ((p < 2) | (p % 2 != 0)),
        dualpipe & ((first < 2 * p) | (first % 2 != 0) | (last < 2 * p) | (last % 2 != 0)),
        training.precision not in cluster.accelerator.peak_tflops,
        (lay.recompute == _PER_OP) & (not per_op_defined(model)),
    ]


def rule_message(
    code: int, lay: Layout, *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec
) -> str:
    tp, pp, cp, ep, dp = lay.tp, lay.pp, lay.cp, lay.ep, lay.dp
    b, v, etp = lay.microbatch_seqs, lay.virtual_stages, lay.expert_tp
    gpus = cluster.gpus
    seqs = training.global_batch_tokens // training.seq_len
    micro = seqs // max(dp * b, 1)
    rule = _RULES[code - 1]
    path = "training.layout."
    if rule == "layout_positive":
        values = {
            "tp": tp,
            "pp": pp,
            "cp": cp,
            "ep": ep,
            "dp": dp,
            "microbatch_seqs": b,
            "virtual_stages": v,
            "expert_tp": etp,
        }
        name = next(k for k, val in values.items() if val < 1)
        return f"{path}{name}: must be >= 1 (got {values[name]})"
    if rule == "tp_cp_pp_divides_gpus":
        return f"{path}tp: tp*cp*pp (={tp * cp * pp}) must divide gpus (={gpus})"
    if rule == "product_equals_gpus":
        return f"{path}dp: tp*cp*pp*dp (={tp * cp * pp * dp}) must equal gpus (={gpus})"
    if rule == "tp_divides_heads":
        return f"{path}tp: must divide model.heads (={model.heads}), got {tp}"
    if rule == "pp_within_layers":
        return f"{path}pp: must not exceed model.layers (={model.layers}), got {pp}"
    if rule == "cp_divides_seq_len":
        return f"{path}cp: must divide training.seq_len (={training.seq_len}), got {cp}"
    if rule == "batch_multiple_of_seq_len":
        return (
            f"training.global_batch_tokens: must be a multiple of training.seq_len (={training.seq_len}), "
            f"got {training.global_batch_tokens}"
        )
    if rule == "batch_divides_dp_micro":
        return (
            f"{path}microbatch_seqs: global batch (={seqs} sequences) must divide into dp (={dp}) x "
            f"microbatch_seqs (={b})"
        )
    if rule == "ep_dense_model":
        return f"{path}ep: must be 1 for a dense model (model.moe is not set), got {ep}"
    if rule == "ep_divides_dp_cp":
        return f"{path}ep: must divide dp*cp (={dp * cp}), got {ep}"
    if rule == "ep_divides_experts":
        experts = 0 if model.moe is None else model.moe.experts
        return f"{path}ep: must divide model.moe.experts (={experts}), got {ep}"
    if rule == "expert_tp_fits":
        return f"{path}expert_tp: ep*expert_tp (={ep * etp}) must divide tp*cp*dp (={tp * cp * dp})"
    if rule == "schedule_code":
        return f"{path}schedule: must be one of {', '.join(SCHEDULES)}"
    if rule == "recompute_code":
        return f"{path}recompute: must be one of {', '.join(RECOMPUTE_POLICIES)}"
    if rule == "zero_stage_range":
        return f"{path}zero_stage: must be 0, 1, 2 or 3, got {lay.zero_stage}"
    if rule == "virtual_stages_interleaved_only":
        return f"{path}virtual_stages: must be 1 unless schedule is interleaved, got {v}"
    if rule == "interleaved_needs_pp":
        return f"{path}schedule: interleaved needs pp >= 2, got pp {pp}"
    if rule == "interleaved_layers":
        return (
            f"{path}virtual_stages: pp*virtual_stages (={pp * v}) must not exceed model.layers + 2 "
            f"(={model.layers + pipeline.STANDALONE_CHUNKS}): every model chunk holds a layer, or the embedding "
            "or the output layer alone (Llama 3 §3.3.2)"
        )
    flush = training.pipeline_flush_microbatches
    first, last = pipeline.flush_sizes(microbatches=micro, f=flush)
    flushed = (
        ""
        if flush is None or flush >= micro
        else (
            f" in each flush of training.pipeline_flush_microbatches (={flush}: flushes of {first} and {last})"
        )
    )
    if rule == "interleaved_microbatches":
        return (
            f"{path}microbatch_seqs: the interleaved schedule needs microbatches (={micro}) divisible by pp "
            f"(={pp}){flushed} (Narayanan et al. SC'21 §2.2.2)"
        )
    if rule == "dualpipe_even_pp":
        return f"{path}pp: dualpipe needs an even pp >= 2, got {pp}"
    if rule == "dualpipe_microbatches":
        return (
            f"{path}microbatch_seqs: dualpipe needs an even number of microbatches (={micro}) >= 2*pp "
            f"(={2 * pp}){flushed} (deepseek-ai/DualPipe)"
        )
    if rule == "per_op_llama_block":
        return (
            f"{path}recompute: per_op (torchtitan's op-level selective checkpointing) is defined for a dense "
            "model with a gated MLP and multi-head or grouped-query attention, whose blocks call their matmuls "
            "as a Llama block does; this model has "
            + (
                "mixture-of-experts layers"
                if model.moe is not None
                else "multi-head latent attention"
                if model.mla is not None
                else "an MLP without a gate"
            )
        )
    known = ", ".join(sorted(cluster.accelerator.peak_tflops))
    return (
        f"training.precision: {cluster.accelerator.name} has no dense {training.precision} peak "
        f"(known: {known}); one of {', '.join(PRECISIONS)}"
    )
