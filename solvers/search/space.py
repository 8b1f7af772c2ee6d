"""The candidate space of a layout search: every layout of one scenario as ONE ``LayoutBatch``.

``enumerate_layouts`` builds the whole space with numpy (repeat / gather, no loop over layouts), discarding
the layouts that break a divisibility, batch or schedule rule and counting them by rule; ``count_layouts``
gives the count alone (milliseconds), so a caller can refuse a space before anything is built. The ranking
of what survives is ``solvers.search.ranking``.

Axes (``SearchSpace``; each can be narrowed in the document under ``search.space``):
  tp        divisors of gpus_per_node, then whole nodes x 2^k up to ``MAX_TP_NODES`` nodes; must divide heads
  cp        1 and powers of two while each rank keeps >= ``MIN_TOKENS_PER_CP_RANK`` tokens; cp divides seq_len
  pp        divisors of the GPU count up to the layer count (uneven stages allowed: 126 layers on 16 stages,
            CONTRACT.md), plus divisors of the layer count (even stages) up to ``MAX_PP``
  ep        MoE only: divisors of the expert count; must divide dp*cp (Megatron convention, CONTRACT.md)
  expert_tp MoE only: experts use tp, or no tensor parallelism (DeepSeek-V3 §3.2 runs experts without TP)
  dp        derived: gpus / (tp*cp*pp)
  microbatch_seqs  powers of two up to ``MAX_MICROBATCH_SEQS``; dp*microbatch_seqs must divide the batch
  schedule  gpipe, 1f1b, zero_bubble, dualpipe, interleaved x ``VIRTUAL_STAGES`` (pp > 1 only)
  sequence_parallel (tp > 1 only), zero_stage 0..3 (3 with and without resharding), recompute, grad dtype
            (never less precise than the scenario's own layout states: ``stated_numerics``)

Limits: at most ``MAX_LAYOUTS_PER_SEARCH`` layouts are materialised; the count is known after the cheap
structural stage and a larger space is refused with a ``ScenarioError`` naming ``search.space`` before the
batch is built or anything is evaluated.

Example: Llama 3 405B on 16,384 H100 with a 16M-token batch of 8,192-token sequences has 745,800 candidate
layouts, of which 179,310 pass the rules and are evaluated (``tests/solvers/test_search.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.pipeline import STANDALONE_CHUNKS
from solvers.specs import (
    GRAD_REDUCE_DTYPES,
    RECOMPUTE_CODE,
    RECOMPUTE_POLICIES,
    SCHEDULE_CODE,
    SCHEDULES,
    SEARCHED_RECOMPUTE,
    BoolArray,
    ClusterSpec,
    IntArray,
    LayoutBatch,
    ModelSpec,
    TrainingSpec,
)

# ---------------------------------------------------------------------------------------------------------
# limits and defaults (documented in the module docstring and the search report)
# ---------------------------------------------------------------------------------------------------------

MAX_LAYOUTS_PER_SEARCH = 2_000_000  # materialised layouts (about 150 MB of layout arrays at the limit)
MAX_TP_NODES = 4  # tensor parallelism may span up to this many nodes (over the scale-out fabric)
MAX_PP = 128
MAX_CP = 64
MIN_TOKENS_PER_CP_RANK = 512  # below this a CP rank's attention chunk is too small to be worth its exchange
MAX_EP = 1024
MAX_MICROBATCH_SEQS = 8
VIRTUAL_STAGES: tuple[int, ...] = (2, 4, 8)  # interleaved model chunks per stage (Narayanan et al. 2021 §2.2)
MAX_AXIS_VALUES = 64  # values one axis of search.space may list
MAX_AXIS_INTEGER = 1 << 20  # keeps products of axis values far from int64 overflow

SPACE_AXES: tuple[str, ...] = (
    "tp",
    "cp",
    "pp",
    "ep",
    "expert_tp",
    "microbatch_seqs",
    "schedule",
    "virtual_stages",
    "sequence_parallel",
    "zero_stage",
    "fsdp_reshard_after_forward",
    "recompute",
    "grad_reduce_dtype",
)

# Reasons a layout is discarded, as "field path: rule" (the engine's own rules are added as it reports them).
R_SPLIT = "training.layout.tp: tp*cp*pp must divide cluster.gpus"
R_HEADS = "training.layout.tp: tp must divide model.heads"
R_CP_SEQ = "training.layout.cp: cp must divide training.seq_len"
R_PP_LAYERS = "training.layout.pp: pp must not exceed model.layers"
R_EP_EXPERTS = "training.layout.ep: ep must divide model.moe.experts"
R_EP_GROUP = "training.layout.ep: ep must divide dp*cp"
R_BATCH = "training.layout.microbatch_seqs: dp*microbatch_seqs must divide the global batch (sequences)"
R_VIRTUAL = "training.layout.virtual_stages: pp*virtual_stages must not exceed model.layers + 2"
R_INTERLEAVED = "training.layout.schedule: interleaved needs microbatches divisible by pp"
R_INTERLEAVED_PP = "training.layout.schedule: interleaved needs pp >= 2"
R_DUALPIPE = "training.layout.schedule: dualpipe needs an even pp and at least 2*pp microbatches, in pairs"


# ---------------------------------------------------------------------------------------------------------
# the space
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchSpace:
    """Candidate values of each layout axis. ``ep`` and ``expert_tp`` apply to MoE models only (a dense
    model uses ep = 1 and expert_tp = tp); ``expert_tp`` 0 means "the same as tp"; ``virtual_stages`` are
    the interleaved schedule's chunks per stage; ``fsdp_reshard_after_forward`` applies to ZeRO-3 only."""

    tp: tuple[int, ...]
    cp: tuple[int, ...]
    pp: tuple[int, ...]
    ep: tuple[int, ...]
    expert_tp: tuple[int, ...]
    microbatch_seqs: tuple[int, ...]
    schedule: tuple[str, ...]
    virtual_stages: tuple[int, ...]
    sequence_parallel: tuple[bool, ...]
    zero_stage: tuple[int, ...]
    fsdp_reshard_after_forward: tuple[bool, ...]
    recompute: tuple[str, ...]
    grad_reduce_dtype: tuple[str, ...]

    def as_dict(self) -> dict[str, list[Any]]:
        return {f.name: list(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _divisors(n: int, *, up_to: int) -> list[int]:
    return [d for d in range(1, min(n, up_to) + 1) if n % d == 0]


def _powers_of_two(up_to: int) -> list[int]:
    out, v = [], 1
    while v <= up_to:
        out.append(v)
        v *= 2
    return out


def default_space(
    *,
    model: ModelSpec,
    cluster: ClusterSpec,
    training: TrainingSpec,
    stated_layout: Mapping[str, Any] | None = None,
) -> SearchSpace:
    """The default candidate values of every axis for one scenario (see the module docstring).

    ``stated_layout`` is the scenario's own ``training.layout`` mapping, if it gives one: the search keeps
    the numerics it states (``stated_numerics``), so a stated FP32 gradient reduction is not traded for a
    BF16 one.

    Example: Llama 3 405B (126 layers, 128 heads) on 16,384 H100 in 8-GPU nodes with 8,192-token sequences:
    tp 1, 2, 4, 8, 16, 32; cp 1, 2, 4, 8, 16; pp 1, 2, 4, 8, 16, 32, 64 (divide 16,384) and 3, 6, 7, 9, 14,
    18, 21, 42, 63, 126 (divide 126; rejected later since they do not divide 16,384).
    """
    gpn = cluster.gpus_per_node
    tps = set(_divisors(gpn, up_to=gpn))
    nodes = 2
    while nodes <= MAX_TP_NODES:
        tps.add(gpn * nodes)
        nodes *= 2
    tps = {t for t in tps if t <= cluster.gpus}
    cps = [c for c in _powers_of_two(MAX_CP) if c == 1 or training.seq_len // c >= MIN_TOKENS_PER_CP_RANK]
    pps = set(_divisors(cluster.gpus, up_to=min(model.layers, MAX_PP)))
    pps |= set(_divisors(model.layers, up_to=min(MAX_PP, cluster.gpus)))
    if model.moe is not None:
        eps = _divisors(model.moe.experts, up_to=MAX_EP)
        etps = [0, 1]
    else:
        eps, etps = [1], [0]
    batch_seqs = training.global_batch_tokens // training.seq_len
    mbs = [m for m in _powers_of_two(MAX_MICROBATCH_SEQS) if batch_seqs % m == 0]
    return SearchSpace(
        tp=tuple(sorted(tps)),
        cp=tuple(cps),
        pp=tuple(sorted(pps)),
        ep=tuple(eps),
        expert_tp=tuple(etps),
        microbatch_seqs=tuple(mbs) or (1,),
        schedule=("1f1b", "gpipe", "interleaved", "zero_bubble", "dualpipe"),
        virtual_stages=VIRTUAL_STAGES,
        sequence_parallel=(False, True),
        zero_stage=(0, 1, 2, 3),
        fsdp_reshard_after_forward=(True, False),
        recompute=searched_recompute(stated_layout),
        grad_reduce_dtype=stated_numerics(stated_layout),
    )


def searched_recompute(stated_layout: Any) -> tuple[str, ...]:
    """The recompute policies a default search tries: ``none``, ``selective`` and ``full``, and ``per_op`` too when
    the scenario's own layout states it. ``per_op`` is one framework's policy (torchtitan's op-level selective
    checkpointing), so it is a candidate only for a scenario that already runs that framework; the other three are
    tried as before (``search.space.recompute`` still overrides). Example: {"recompute": "per_op"} -> ("none",
    "selective", "full", "per_op"); None -> ("none", "selective", "full")."""
    if isinstance(stated_layout, Mapping) and stated_layout.get("recompute") == "per_op":
        return (*SEARCHED_RECOMPUTE, "per_op")
    return SEARCHED_RECOMPUTE


def stated_numerics(stated_layout: Any) -> tuple[str, ...]:
    """The gradient-reduction dtypes a default search may use: none less precise than the scenario states.

    A search chooses how the work is split and scheduled; the gradient reduction's dtype changes the
    arithmetic of training instead, as ``training.precision`` does (which no search changes). Llama 3 reduces
    gradients in FP32 "for numerical stability" (Llama 3 §3.3.2), so a search of that run that returned a
    BF16 reduction would buy speed with a numerics change the scenario ruled out. A layout that states
    ``grad_reduce_dtype: fp32`` keeps it; otherwise (BF16 stated, or no layout) both are candidates, as before.
    ``search.space.grad_reduce_dtype`` still overrides. Example: {"grad_reduce_dtype": "fp32"} -> ("fp32",);
    None -> ("bf16", "fp32").
    """
    if isinstance(stated_layout, Mapping) and stated_layout.get("grad_reduce_dtype") == "fp32":
        return ("fp32",)
    return GRAD_REDUCE_DTYPES


def stated_layout(scenario: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The scenario's own ``training.layout`` when it is a mapping (a given layout), else None (``auto``)."""
    training = scenario.get("training")
    layout = training.get("layout") if isinstance(training, Mapping) else None
    return layout if isinstance(layout, Mapping) else None


def space_from_document(raw: Any, *, default: SearchSpace, path: str = "search.space") -> SearchSpace:
    """``default`` with the axes the document lists under ``search.space`` replaced (each a list).

    Bad input raises ``ScenarioError`` naming the item, e.g. ``search.space.tp[1]: must be a positive
    integer, got 0``.
    """
    if raw is None:
        return default
    if not isinstance(raw, Mapping):
        raise ScenarioError.single(path, "must be a mapping of axis -> list of values")
    errors: list[FieldError] = []
    values: dict[str, tuple[Any, ...]] = {}
    for key, items in raw.items():
        axis_path = f"{path}.{key}"
        if key not in SPACE_AXES:
            errors.append(FieldError(axis_path, f"unknown axis; expected one of {', '.join(SPACE_AXES)}"))
            continue
        if not isinstance(items, list) or not items:
            errors.append(FieldError(axis_path, "must be a non-empty list"))
            continue
        if len(items) > MAX_AXIS_VALUES:
            errors.append(FieldError(axis_path, f"lists at most {MAX_AXIS_VALUES} values, got {len(items)}"))
            continue
        parsed: list[Any] = []
        for i, item in enumerate(items):
            item_path = f"{axis_path}[{i}]"
            error = _axis_item_error(key, item)
            if error:
                errors.append(FieldError(item_path, error))
            else:
                parsed.append(item)
        values[key] = tuple(dict.fromkeys(parsed))
    if errors:
        raise ScenarioError(errors)
    return dataclasses.replace(default, **values)


def _axis_item_error(axis: str, item: Any) -> str | None:
    if axis in ("sequence_parallel", "fsdp_reshard_after_forward"):
        return None if isinstance(item, bool) else f"must be true or false, got {item!r}"
    if axis == "schedule":
        return None if item in SCHEDULES else f"must be one of {', '.join(SCHEDULES)}, got {item!r}"
    if axis == "recompute":
        return (
            None
            if item in RECOMPUTE_POLICIES
            else f"must be one of {', '.join(RECOMPUTE_POLICIES)}, got {item!r}"
        )
    if axis == "grad_reduce_dtype":
        return (
            None
            if item in GRAD_REDUCE_DTYPES
            else f"must be one of {', '.join(GRAD_REDUCE_DTYPES)}, got {item!r}"
        )
    if isinstance(item, bool) or not isinstance(item, int):
        return f"must be an integer, got {item!r}"
    if axis == "zero_stage":
        return None if 0 <= item <= 3 else f"must be 0, 1, 2 or 3, got {item}"
    if item > MAX_AXIS_INTEGER:
        return f"must be at most {MAX_AXIS_INTEGER:,}, got {item:,}"
    if axis == "expert_tp":
        return None if item >= 0 else f"must be 0 (= tp) or a positive integer, got {item}"
    if axis == "virtual_stages":
        return None if item >= 2 else f"must be at least 2 (interleaved chunks per stage), got {item}"
    return None if item >= 1 else f"must be a positive integer, got {item}"


# ---------------------------------------------------------------------------------------------------------
# enumeration
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Enumeration:
    """All layouts of a space that pass the divisibility, batch and schedule rules, as one batch.

    ``candidates`` counts every layout of the space (without the moot duplicates: no schedule choice when
    pp = 1, no sequence parallelism or expert_tp choice when tp = 1); ``rejected`` counts the discarded ones
    by rule, so ``candidates == len(layouts) + sum(rejected.values())``.
    """

    layouts: LayoutBatch
    candidates: int
    rejected: dict[str, int]


def _expand(cols: dict[str, IntArray], counts: IntArray) -> tuple[dict[str, IntArray], IntArray]:
    """Repeat row i of every column counts[i] times; also return each copy's index 0..counts[i]-1."""
    parent = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    option = np.arange(parent.shape[0], dtype=np.int64) - first[parent]
    return {k: v[parent] for k, v in cols.items()}, option


def _keep(
    cols: dict[str, IntArray],
    rules: Sequence[tuple[str, BoolArray]],
    weight: IntArray,
    rejected: dict[str, int],
) -> dict[str, IntArray]:
    """Drop the rows that break a rule; each counts ``weight`` layouts under the first rule it breaks."""
    alive = np.ones(weight.shape[0], dtype=np.bool_)
    for reason, broken in rules:
        hit = alive & broken
        count = int(weight[hit].sum())
        if count:
            rejected[reason] = rejected.get(reason, 0) + count
        alive &= ~broken
    return {k: v[alive] for k, v in cols.items()}


def _schedule_options(space: SearchSpace) -> tuple[IntArray, IntArray, int]:
    """(schedule code, virtual stages) pairs for pp > 1, and the index of the pair a pp-1 layout takes: the
    first whose schedule runs on one stage (interleaved and DualPipe need at least 2), else the first."""
    pairs: list[tuple[int, int]] = []
    for name in space.schedule:
        if name == "interleaved":
            pairs.extend((SCHEDULE_CODE[name], v) for v in space.virtual_stages)
        else:
            pairs.append((SCHEDULE_CODE[name], 1))
    multi_stage = (SCHEDULE_CODE["interleaved"], SCHEDULE_CODE["dualpipe"])
    single = next((i for i, (code, _) in enumerate(pairs) if code not in multi_stage), 0)
    codes = np.array([p[0] for p in pairs], dtype=np.int64)
    return codes, np.array([p[1] for p in pairs], dtype=np.int64), single


def _tail_table(space: SearchSpace, *, tp_one: bool) -> dict[str, np.ndarray]:
    """Every (sequence_parallel, zero_stage, reshard, recompute, grad dtype) combination, as columns."""
    sps = (False,) if tp_one else space.sequence_parallel
    zeros = [
        (z, r) for z in space.zero_stage for r in (space.fsdp_reshard_after_forward if z == 3 else (True,))
    ]
    rows = [
        (sp, z, r, RECOMPUTE_CODE[rc], g == "fp32")
        for sp in sps
        for z, r in zeros
        for rc in space.recompute
        for g in space.grad_reduce_dtype
    ]
    return {
        "sequence_parallel": np.array([r[0] for r in rows], dtype=np.bool_),
        "zero_stage": np.array([r[1] for r in rows], dtype=np.int64),
        "fsdp_reshard_after_forward": np.array([r[2] for r in rows], dtype=np.bool_),
        "recompute": np.array([r[3] for r in rows], dtype=np.int64),
        "grad_reduce_fp32": np.array([r[4] for r in rows], dtype=np.bool_),
    }


def count_layouts(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, space: SearchSpace
) -> int:
    """How many layouts ``enumerate_layouts`` would build, without building them (milliseconds), so that
    a caller can refuse a search over ``MAX_LAYOUTS_PER_SEARCH`` before queueing it."""
    counted = _enumerate(
        model=model, cluster=cluster, training=training, space=space, max_layouts=0, build=False
    )
    return counted if isinstance(counted, int) else len(counted.layouts)


def enumerate_layouts(
    *,
    model: ModelSpec,
    cluster: ClusterSpec,
    training: TrainingSpec,
    space: SearchSpace,
    max_layouts: int = MAX_LAYOUTS_PER_SEARCH,
) -> Enumeration:
    """Every layout of ``space`` that passes the divisibility, batch and schedule rules, as one LayoutBatch.

    Built stage by stage with numpy (structural tp x cp x pp grid, then ep and expert_tp, microbatch size,
    schedule and virtual stages, then the product of the remaining axes); each stage drops the rows that
    break its rules before the next multiplies them, and a dropped row counts as every layout it would have
    become. Rules: tp*cp*pp | gpus; tp | heads; cp | seq_len; pp <= layers; ep | experts and ep | dp*cp
    (CONTRACT.md); dp*microbatch_seqs | batch sequences; interleaved: pp >= 2, pp*v <= layers and pp | microbatches
    (Megatron-LM's interleaved 1F1B); dualpipe: even pp and an even number of microbatches >= 2*pp
    (DeepSeek-V3 §3.2.1).
    Raises ``ScenarioError`` at ``search.space`` when more than ``max_layouts`` layouts would be built.
    Example: Llama 3 8B on 64 H100 in 8-GPU nodes, 256 sequences of 4,096 tokens, default space:
    190,080 candidates, 69,390 layouts built; 114,120 rejected because tp*cp*pp does not divide 64.
    """
    built = _enumerate(
        model=model, cluster=cluster, training=training, space=space, max_layouts=max_layouts, build=True
    )
    if isinstance(built, int):
        raise SolverInternalError("search enumeration returned a count where it was asked for layouts")
    return built


def _enumerate(
    *,
    model: ModelSpec,
    cluster: ClusterSpec,
    training: TrainingSpec,
    space: SearchSpace,
    max_layouts: int,
    build: bool,
) -> Enumeration | int:
    gpus = cluster.gpus
    layers = model.layers
    batch_seqs = training.global_batch_tokens // training.seq_len
    rejected: dict[str, int] = {}
    moe = model.moe is not None
    sched_code, sched_v, single_stage = _schedule_options(space)
    tail_full = _tail_table(space, tp_one=False)
    tail_tp1 = _tail_table(space, tp_one=True)
    n_sched = int(sched_code.shape[0])
    n_tail_full = int(tail_full["zero_stage"].shape[0])
    n_tail_tp1 = int(tail_tp1["zero_stage"].shape[0])
    eps = np.array(space.ep if moe else (1,), dtype=np.int64)
    etps = np.array(space.expert_tp if moe else (0,), dtype=np.int64)
    mbs = np.array(space.microbatch_seqs, dtype=np.int64)

    def m_tail(tp: IntArray) -> IntArray:
        return np.where(tp == 1, n_tail_tp1, n_tail_full).astype(np.int64)

    def m_sched(pp: IntArray) -> IntArray:
        return np.where(pp == 1, 1, n_sched).astype(np.int64)

    def m_experts(tp: IntArray) -> IntArray:
        return (eps.shape[0] * np.where(tp == 1, 1, etps.shape[0])).astype(np.int64)

    # Stage A: tp x cp x pp.
    tp, cp, pp = (
        a.ravel().astype(np.int64)
        for a in np.meshgrid(
            np.array(space.tp, dtype=np.int64),
            np.array(space.cp, dtype=np.int64),
            np.array(space.pp, dtype=np.int64),
            indexing="ij",
        )
    )
    cols: dict[str, IntArray] = {"tp": tp, "cp": cp, "pp": pp}
    below = m_experts(tp) * mbs.shape[0] * m_sched(pp) * m_tail(tp)
    candidates = int(below.sum())
    mp = tp * cp * pp
    cols = _keep(
        cols,
        [
            (R_SPLIT, gpus % mp != 0),
            (R_HEADS, model.heads % tp != 0),
            (R_CP_SEQ, training.seq_len % cp != 0),
            (R_PP_LAYERS, pp > layers),
        ],
        below,
        rejected,
    )
    cols["dp"] = gpus // (cols["tp"] * cols["cp"] * cols["pp"])

    # Stage B: ep x expert_tp (expert_tp has one value when tp = 1).
    counts = m_experts(cols["tp"])
    cols, option = _expand(cols, counts)
    n_etp = np.where(cols["tp"] == 1, 1, etps.shape[0])
    cols["ep"] = eps[option // n_etp]
    etp = etps[option % n_etp]
    cols["expert_tp"] = np.where((etp == 0) | (cols["tp"] == 1), cols["tp"], etp)
    below = mbs.shape[0] * m_sched(cols["pp"]) * m_tail(cols["tp"])
    rules: list[tuple[str, BoolArray]] = []
    if model.moe is not None:
        experts = model.moe.experts
        rules = [
            (R_EP_EXPERTS, experts % cols["ep"] != 0),
            (R_EP_GROUP, (cols["dp"] * cols["cp"]) % cols["ep"] != 0),
        ]
    cols = _keep(cols, rules, below, rejected)

    # Stage C: microbatch size.
    cols, option = _expand(cols, np.full(cols["tp"].shape[0], mbs.shape[0], dtype=np.int64))
    cols["microbatch_seqs"] = mbs[option]
    below = m_sched(cols["pp"]) * m_tail(cols["tp"])
    cols = _keep(cols, [(R_BATCH, batch_seqs % (cols["dp"] * cols["microbatch_seqs"]) != 0)], below, rejected)
    microbatches = batch_seqs // (cols["dp"] * cols["microbatch_seqs"])
    cols["microbatches"] = microbatches

    # Stage D: schedule and virtual stages (pp > 1 only).
    cols, option = _expand(cols, m_sched(cols["pp"]))
    option = np.where(cols["pp"] == 1, single_stage, option)
    cols["schedule"] = sched_code[option]
    cols["virtual_stages"] = sched_v[option]
    below = m_tail(cols["tp"])
    p, m, sched = cols["pp"], cols["microbatches"], cols["schedule"]
    interleaved = sched == SCHEDULE_CODE["interleaved"]
    dualpipe = sched == SCHEDULE_CODE["dualpipe"]
    cols = _keep(
        cols,
        [
            # at pp 1 a row takes the space's first one-stage schedule; with none listed, it is refused
            (R_INTERLEAVED_PP, interleaved & (p < 2)),
            (R_VIRTUAL, interleaved & (p * cols["virtual_stages"] > layers + STANDALONE_CHUNKS)),
            (R_INTERLEAVED, interleaved & (m % p != 0)),
            (R_DUALPIPE, dualpipe & ((p % 2 != 0) | (m < 2 * p) | (m % 2 != 0))),
        ],
        below,
        rejected,
    )

    # The size is known now: refuse before the big product is built.
    total = int(m_tail(cols["tp"]).sum())
    if not build:
        return total
    if total > max_layouts:
        raise ScenarioError.single(
            "search.space",
            f"{total:,} layouts exceed the limit of {max_layouts:,} per search; narrow an axis "
            "(e.g. search.space.microbatch_seqs, search.space.schedule or search.space.zero_stage)",
        )

    # Stage E: sequence parallelism x ZeRO x recompute x gradient dtype.
    cols, option = _expand(cols, m_tail(cols["tp"]))
    tp1 = cols["tp"] == 1
    tail: dict[str, np.ndarray] = {}
    for key in tail_full:
        tail[key] = np.where(tp1, tail_tp1[key][np.minimum(option, n_tail_tp1 - 1)], tail_full[key][option])
    layouts = LayoutBatch(
        tp=cols["tp"],
        pp=cols["pp"],
        cp=cols["cp"],
        ep=cols["ep"],
        dp=cols["dp"],
        microbatch_seqs=cols["microbatch_seqs"],
        schedule=cols["schedule"],
        virtual_stages=cols["virtual_stages"],
        sequence_parallel=tail["sequence_parallel"].astype(np.bool_),
        zero_stage=tail["zero_stage"].astype(np.int64),
        fsdp_reshard_after_forward=tail["fsdp_reshard_after_forward"].astype(np.bool_),
        expert_tp=cols["expert_tp"],
        recompute=tail["recompute"].astype(np.int64),
        grad_reduce_fp32=tail["grad_reduce_fp32"].astype(np.bool_),
    )
    if len(layouts) + sum(rejected.values()) != candidates:
        raise SolverInternalError("search enumeration lost count of its candidate layouts")
    return Enumeration(layouts=layouts, candidates=candidates, rejected=rejected)


# ---------------------------------------------------------------------------------------------------------
# batch helpers
# ---------------------------------------------------------------------------------------------------------


def take(batch: LayoutBatch, index: IntArray | slice) -> LayoutBatch:
    """The layouts of ``batch`` at ``index`` (``LayoutBatch.take``)."""
    return batch.take(index)
