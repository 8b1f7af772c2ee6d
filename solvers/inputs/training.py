"""The ``training`` part: sequence length, batch, total tokens, precision, optimizer, layout, efficiency and
checkpointing. It needs the resolved model and cluster (the GPU split, the accelerator's peaks); ``alone``
checks the part's own fields when no plan joins it to a model and a cluster yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from solvers.catalog.attention_kernels import KERNEL_FAMILIES
from solvers.catalog.fitted import (
    CONSTANT_UNITS,
    FITTED_SOURCE,
    efficiency_family_of,
    family_efficiency,
    family_of,
    fitted_constant,
)
from solvers.catalog.fitted import CONSTANTS as FITTED_CONSTANTS
from solvers.inputs import fields
from solvers.inputs.layout import parse_layout
from solvers.inputs.reader import (
    SCENARIO,
    Assumption,
    Reader,
    join,
    read_choices,
    read_numbers,
    resolve_value,
    row_default,
    row_defaults,
)
from solvers.inputs.rows import MAX_GPUS
from solvers.specs import (
    EFFECT_SWITCHES,
    PRECISIONS,
    AcceleratorSpec,
    ClusterSpec,
    EffectsSpec,
    LinkSpec,
    ModelSpec,
    OverlapSpec,
    TrainingSpec,
)

PATH = "training"

# Default global batch when the scenario gives none: ~4M tokens, the order of GPT-3 175B's 3.2M
# (Brown et al. 2020, Table 2.1) and Llama 3's first stage (4M, Llama 3 §3.4.1).
DEFAULT_BATCH_TOKENS = 4_194_304
DEFAULT_SEQ_LEN = 4096


_KEY = itemgetter(0)  # an Assumption's key
_ROWS = {row.name: row for row in fields.TABLE.children(PATH)}  # every caller parses the part at PATH
_EFFICIENCY_KEY = "cluster.accelerator.compute_efficiency"


def _given_accelerator_efficiency(r: Reader) -> bool:
    """Whether the scenario itself set ``cluster.accelerator.compute_efficiency`` (then it wins)."""
    notes = r.assumptions
    keys = list(map(_KEY, notes))  # C passes over the hundred entries noted by now, not a Python loop
    start = 0
    try:
        while True:
            found = keys.index(_EFFICIENCY_KEY, start)
            if notes[found].source == SCENARIO:
                return True
            start = found + 1
    except ValueError:  # no (further) entry of the key
        return False


# The entries of the fitted effect constants under ``training``: the same for every document (made once).
_FX_PATH = f"{PATH}.efficiency.effects"
_FITTED: Mapping[str, float] = MappingProxyType({name: fitted_constant(name) for name in FITTED_CONSTANTS})
_FITTED_NOTES: tuple[Assumption, ...] = tuple(
    Assumption(f"{_FX_PATH}.{name}", value, CONSTANT_UNITS[name], FITTED_SOURCE)
    for name, value in _FITTED.items()
)


def parse_training(
    r: Reader,
    raw: Any,
    path: str,
    *,
    model: ModelSpec | None,
    cluster: ClusterSpec | None,
    preset_seq: int | None,
) -> tuple[TrainingSpec, dict[str, Any], list[dict[str, Any]], bool, dict[str, Any]] | None:
    """(spec, explicit document, resolved layouts, layout is auto, the ledger's training fields), or None
    when a rule is broken (every broken rule is reported, the layout's too)."""
    given = r.section(raw, path)
    if given is None:
        return None
    before = len(r.errors)
    nums = read_numbers(r, given, path)
    read_choices(r, given, path, nums)
    eff_path = join(path, "efficiency")
    eff = r.section(given.get("efficiency"), eff_path) or {}
    compute_eff: float | None = read_numbers(r, eff, eff_path).get("compute")
    ov_path = join(eff_path, "overlap")
    ov_given = r.section(eff.get("overlap"), ov_path) or {}
    overlap_nums = read_numbers(r, ov_given, ov_path)
    fx_path = join(eff_path, "effects")
    fx_given = r.section(eff.get("effects"), fx_path) or {}
    fx_flags: dict[str, Any] = {}
    read_choices(r, fx_given, fx_path, fx_flags)
    ck_path = join(path, "checkpoint")
    ck_given = r.section(given.get("checkpoint"), ck_path) or {}
    ck_nums = read_numbers(r, ck_given, ck_path)
    read_choices(r, ck_given, ck_path, ck_nums)
    layout_raw = given.get("layout")
    auto = isinstance(layout_raw, str)
    if auto and layout_raw != "auto":
        r.error(join(path, "layout"), f"must be an object or the string 'auto', got '{layout_raw}'")
        return None
    if model is None or cluster is None:
        return None
    # Fields already in error fall back to their defaults below so that the layout is still checked and
    # every broken rule is reported at once; the function returns None at the end.

    seq_default = preset_seq or DEFAULT_SEQ_LEN
    seq_src = "model preset: its pre-training sequence length" if preset_seq else "convention: 4,096 tokens"
    seq_len = int(
        resolve_value(
            r,
            path,
            "seq_len",
            nums,
            preset=None,
            preset_source=None,
            default=seq_default,
            default_source=seq_src,
            unit=fields.TABLE[join(path, "seq_len")].unit,
        )
    )
    rows = _ROWS  # the part's rows by name, made once at import, not a path built and looked up per field
    precision = str(row_default(r, rows["precision"], nums))
    if precision not in cluster.accelerator.peak_tflops:
        r.error(
            join(path, "precision"),
            f"accelerator '{cluster.accelerator.name}' has no {precision} peak "
            f"(has {', '.join(sorted(cluster.accelerator.peak_tflops))})",
        )
    optimizer = str(row_default(r, rows["optimizer"], nums))
    fused_attention = bool(row_default(r, rows["fused_attention"], nums))
    fused_elementwise = bool(row_default(r, rows["fused_elementwise"], nums))
    attention_kernel = str(row_default(r, rows["attention_kernel"], nums))
    pipeline_split = str(row_default(r, rows["pipeline_split"], nums))
    zero3_exchange = str(row_default(r, rows["zero3_exchange"], nums))
    flush = row_default(r, rows["pipeline_flush_microbatches"], nums)
    tp_vocab_parallel = bool(row_default(r, rows["tp_vocab_parallel"], nums))
    pipeline_flush_microbatches = None if flush is None else int(flush)
    moe_dispatch = str(row_default(r, rows["moe_dispatch"], nums))
    capacity = row_default(r, rows["moe_capacity_factor"], nums)
    moe_capacity_factor = None if capacity is None else float(capacity)
    moe_pad_to_capacity = bool(row_default(r, rows["moe_pad_to_capacity"], nums))
    moe_force_balance = bool(row_default(r, rows["moe_force_balance"], nums))
    moe_token_dispatcher = str(row_default(r, rows["moe_token_dispatcher"], nums))
    moe_fp8_dispatch = bool(row_default(r, rows["moe_fp8_dispatch"], nums))
    moe_shared_expert_overlap = bool(row_default(r, rows["moe_shared_expert_overlap"], nums))
    fp8_param_gather = bool(row_default(r, rows["fp8_param_gather"], nums))
    if fp8_param_gather and precision != "fp8" and not r.failed_under(join(path, "precision")):
        r.error(
            join(path, "fp8_param_gather"),
            f"needs training.precision fp8 (the weights are kept in FP8 for the FP8 GEMMs), not {precision}",
        )
    if moe_fp8_dispatch and precision != "fp8" and not r.failed_under(join(path, "precision")):
        r.error(
            join(path, "moe_fp8_dispatch"),
            f"needs training.precision fp8 (the tokens are dispatched as the FP8 GEMMs' inputs), not {precision}",
        )
    if moe_pad_to_capacity and moe_capacity_factor is None:
        r.error(
            join(path, "moe_pad_to_capacity"), "needs training.moe_capacity_factor (the capacity to pad to)"
        )
    runs_on = KERNEL_FAMILIES.get(attention_kernel)
    if runs_on is not None and family_of(cluster.accelerator.catalog_ref) not in runs_on:
        r.error(
            join(path, "attention_kernel"),
            f"{attention_kernel} runs on {' and '.join(runs_on)} GPUs only, not on accelerator "
            f"'{cluster.accelerator.name}' (solvers.catalog.attention_kernels)",
        )
    total_tokens = row_default(r, rows["total_tokens"], nums)

    layouts: list[dict[str, Any]]
    if len(r.errors) > before:
        if not auto:
            parse_layout(r, layout_raw, join(path, "layout"), cluster.gpus)
        return None
    if auto:
        # The candidates are enumerated by solvers.search, the same engine run over every layout.
        r.note(join(path, "layout"), "auto", "", SCENARIO)
        layouts = []
    else:
        layout = parse_layout(r, layout_raw, join(path, "layout"), cluster.gpus)
        if layout is None:
            return None
        layouts = [layout]

    # Global batch: tokens or sequences; both must agree.
    tokens = nums.get("global_batch_tokens")
    seqs = nums.get("global_batch_seqs")
    if tokens is not None and tokens % seq_len:
        r.error(join(path, "global_batch_tokens"), f"must be a multiple of training.seq_len (={seq_len:,})")
        return None
    if tokens is not None and seqs is not None and tokens != seqs * seq_len:
        r.error(
            join(path, "global_batch_seqs"),
            f"must equal global_batch_tokens / seq_len (={tokens // seq_len:,}) when both are given",
        )
        return None
    if tokens is not None:
        batch_seqs, batch_src = tokens // seq_len, SCENARIO
    elif seqs is not None:
        batch_seqs, batch_src = int(seqs), SCENARIO
    else:
        target = max(1, DEFAULT_BATCH_TOKENS // seq_len)
        if auto:
            batch_seqs = target
        else:
            unit = layouts[0]["dp"] * layouts[0]["microbatch_seqs"]
            batch_seqs = -(-target // unit) * unit
        batch_src = (
            "convention: ~4M tokens per step (GPT-3 Table 2.1; Llama 3 §3.4.1), rounded up to a multiple of "
            "dp x microbatch_seqs"
        )
    # A batch given in sequences, or the default rounded up to dp x microbatch_seqs, is held to the limit of
    # the batch in tokens, which the report states (its document must solve again).
    max_tokens = fields.TABLE["training.global_batch_tokens"].maximum
    if batch_seqs * seq_len > max_tokens:
        culprit = "global_batch_seqs" if seqs is not None else "layout.microbatch_seqs"
        r.error(
            join(path, culprit),
            f"makes a global batch of {batch_seqs * seq_len:,} tokens ({batch_seqs:,} sequences x seq_len "
            f"{seq_len:,}), above the limit of training.global_batch_tokens ({max_tokens:,.0f})",
        )
        return None
    r.note(join(path, "global_batch_seqs"), batch_seqs, "sequences", batch_src)
    r.note(join(path, "global_batch_tokens"), batch_seqs * seq_len, "tokens", batch_src)

    switches = {name: bool(value) for name, value in row_defaults(r, fx_path, fx_flags).items()}
    any_on = any(switches.values())
    # With every effect off the constants keep their neutral values (EffectsSpec's defaults): the hand
    # calibration, unchanged.
    fitted: dict[str, Any] = dict(_FITTED) if any_on else {}
    effects = EffectsSpec(**{name: switches[name] for name in EFFECT_SWITCHES}, **fitted)
    # The effects' fitted constants are inputs of every step figure: listed like any default.
    if fitted and fx_path == _FX_PATH:
        r.assumptions.extend(_FITTED_NOTES)
    else:
        for name, value in fitted.items():
            r.note(join(fx_path, name), value, CONSTANT_UNITS[name], FITTED_SOURCE)
    if compute_eff is not None:
        efficiency, eff_src = compute_eff, SCENARIO
    elif (
        effects.any_on
        and not _given_accelerator_efficiency(r)
        and (family := efficiency_family_of(cluster.accelerator.catalog_ref)) is not None
    ):
        # The fitted large-GEMM plateau of the accelerator's calibration family: the effects model the losses the
        # hand calibration absorbs. An accelerator of no fitted family keeps its own figure (the branch below).
        efficiency = family_efficiency(family)
        eff_src = f"{FITTED_SOURCE}; calibration family {family}"
    else:
        efficiency = cluster.accelerator.compute_efficiency
        eff_src = "cluster.accelerator.compute_efficiency"
    r.note(join(eff_path, "compute"), efficiency, "fraction", eff_src)
    overlap = {name: float(value) for name, value in row_defaults(r, ov_path, overlap_nums).items()}
    checkpoint = row_defaults(r, ck_path, ck_nums)
    if len(r.errors) > before:
        return None

    spec = TrainingSpec(
        seq_len=seq_len,
        global_batch_tokens=batch_seqs * seq_len,
        precision=precision,
        optimizer=optimizer,
        compute_efficiency=efficiency,
        overlap=OverlapSpec(**overlap),
        fused_attention=fused_attention,
        fused_elementwise=fused_elementwise,
        attention_kernel=attention_kernel,
        pipeline_split=pipeline_split,
        zero3_exchange=zero3_exchange,
        moe_dispatch=moe_dispatch,
        moe_capacity_factor=moe_capacity_factor,
        moe_pad_to_capacity=moe_pad_to_capacity,
        moe_force_balance=moe_force_balance,
        moe_token_dispatcher=moe_token_dispatcher,
        moe_fp8_dispatch=moe_fp8_dispatch,
        moe_shared_expert_overlap=moe_shared_expert_overlap,
        fp8_param_gather=fp8_param_gather,
        pipeline_flush_microbatches=pipeline_flush_microbatches,
        tp_vocab_parallel=tp_vocab_parallel,
        effects=effects,
    )
    doc = {
        "seq_len": seq_len,
        "global_batch_tokens": batch_seqs * seq_len,
        "total_tokens": None if total_tokens is None else float(total_tokens),
        "precision": precision,
        "optimizer": optimizer,
        "fused_attention": fused_attention,
        "fused_elementwise": fused_elementwise,
        "attention_kernel": attention_kernel,
        "pipeline_split": pipeline_split,
        "zero3_exchange": zero3_exchange,
        "moe_dispatch": moe_dispatch,
        "moe_capacity_factor": moe_capacity_factor,
        "moe_pad_to_capacity": moe_pad_to_capacity,
        "moe_force_balance": moe_force_balance,
        "moe_token_dispatcher": moe_token_dispatcher,
        "moe_fp8_dispatch": moe_fp8_dispatch,
        "moe_shared_expert_overlap": moe_shared_expert_overlap,
        "fp8_param_gather": fp8_param_gather,
        # only a run of several flushes a step carries the key, so other runs' documents are unchanged
        **({} if flush is None else {"pipeline_flush_microbatches": pipeline_flush_microbatches}),
        **({} if tp_vocab_parallel else {"tp_vocab_parallel": False}),
        "layout": "auto" if auto else dict(layouts[0]),
        "efficiency": {"compute": efficiency, "overlap": overlap, "effects": switches},
        "checkpoint": checkpoint,
    }
    ledger = {
        "optimizer": optimizer,
        "precision": precision,
        "total_tokens": None if total_tokens is None else float(total_tokens),
        "checkpoint_interval_h": None
        if checkpoint["interval_h"] is None
        else float(checkpoint["interval_h"]),
        "checkpoint_writers": None if checkpoint["writers"] is None else int(checkpoint["writers"]),
        "interval_method": str(checkpoint["interval_method"]),
        "goodput_ledger": str(checkpoint["goodput_ledger"]),
    }
    return spec, doc, layouts, auto, ledger


def parse_training_alone(r: Reader, data: Any) -> dict[str, Any] | None:
    """Training without its model and cluster: check fields and enums; layout divisibility waits for a plan."""
    given = r.section(data, PATH)
    if given is None:
        return None
    layout = given.get("layout")
    # A stand-in cluster large enough for any layout's product keeps the GPU-count rule out of this check.
    probe_gpus = 1
    if isinstance(layout, Mapping):
        for dim in ("tp", "pp", "cp"):
            value = layout.get(dim, 1)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_GPUS:
                probe_gpus *= value
        probe_gpus = min(probe_gpus, MAX_GPUS)
        dp = layout.get("dp")
        if isinstance(dp, int) and not isinstance(dp, bool) and 1 <= dp <= MAX_GPUS:
            probe_gpus = min(probe_gpus * dp, MAX_GPUS * MAX_GPUS)
    probe_accel = AcceleratorSpec(
        name="any",
        peak_tflops={p: 1.0 for p in PRECISIONS},
        hbm_gb=1.0,
        hbm_tb_s=1.0,
        tdp_w=1.0,
        unit_price_usd=0.0,
        embodied_kgco2e=0.0,
        compute_efficiency=0.5,
    )
    link = LinkSpec(bandwidth_gb_s=1.0, latency_us=0.0)
    probe_cluster = ClusterSpec(
        accelerator=probe_accel, gpus=probe_gpus, gpus_per_node=1, scale_up=link, scale_out=link
    )
    probe_model = ModelSpec(
        name="any",
        layers=1,
        hidden=1,
        ffn_hidden=1,
        heads=1,
        kv_heads=1,
        vocab=1,
        params=1.0,
        active_params=1.0,
    )
    out = parse_training(r, given, PATH, model=probe_model, cluster=probe_cluster, preset_seq=None)
    if out is None:
        return None
    doc = out[1]
    if isinstance(doc.get("layout"), dict) and not (isinstance(layout, Mapping) and "dp" in layout):
        doc["layout"]["dp"] = None
    return doc
