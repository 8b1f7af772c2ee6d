"""Design-space search: every valid layout of one scenario, evaluated by the same vectorised engine.

``enumerate_layouts`` builds the whole space as ONE ``LayoutBatch`` with numpy (repeat / gather, no loop
over layouts), discarding the layouts that break a divisibility, batch or schedule rule and counting them by
rule. ``search_resolved`` checks the survivors with the engine's own rules (``engine.check_layouts``),
evaluates them with ``engine.evaluate`` (the very code a single solve runs, in chunks of
``EVAL_CHUNK_LAYOUTS``), drops those that do not fit in memory, prices the rest with the ledger over arrays
(``ledger.compute_ledger``) when the objective is a cost or carbon figure, ranks them, and finds the Pareto
front over two or three objectives (``solvers.pareto``).

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

Limits: at most ``MAX_LAYOUTS_PER_SEARCH`` layouts are materialised; the count is known after the cheap
structural stage and a larger space is refused with a ``ScenarioError`` naming ``search.space`` before the
batch is built or anything is evaluated.

Example: Llama 3 405B on 16,384 H100 with a 16M-token batch of 8,192-token sequences has 745,800 candidate
layouts, of which 179,310 pass the rules and are evaluated (in about 0.2 s of engine time on one core); the
best that fits is at least as fast as the published TP8 CP1 PP16 DP128 (``tests/solvers/test_search.py``,
``bench/bench_search.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.pareto import MAX_OBJECTIVES, MIN_OBJECTIVES, pareto_indices
from solvers.pipeline import STANDALONE_CHUNKS
from solvers.specs import (
    GRAD_REDUCE_DTYPES,
    RECOMPUTE_CODE,
    RECOMPUTE_POLICIES,
    SCHEDULE_CODE,
    SCHEDULES,
    BoolArray,
    ClusterSpec,
    FloatArray,
    IntArray,
    LayoutBatch,
    ModelSpec,
    TrainingSpec,
)

if TYPE_CHECKING:
    from solvers.schema import Resolved

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
DEFAULT_TOP = 5
MAX_TOP = 100
MAX_PARETO_ROWS = 100  # front rows listed in the search output (the size of the whole front is reported)
EVAL_CHUNK_LAYOUTS = 8_192  # layouts per engine call: its temporaries stay in cache (measured fastest)

OBJECTIVES: tuple[str, ...] = ("step_s", "usd_per_million_tokens", "total_usd", "total_kgco2e")
# Metrics a Pareto front may use: the objectives plus a few figures users trade against them.
PARETO_METRICS: tuple[str, ...] = (
    *OBJECTIVES,
    "wall_clock_days",
    "facility_kwh",
    "water_l",
    "memory_bytes",
)
DEFAULT_PARETO: tuple[str, ...] = ("step_s", "usd_per_million_tokens", "total_kgco2e")
_LEDGER_METRICS = frozenset(PARETO_METRICS) - {"step_s", "memory_bytes"}

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
R_DUALPIPE = "training.layout.schedule: dualpipe needs an even pp and at least 2*pp microbatches, in pairs"
R_MEMORY = "memory.fits: needs more memory per GPU than the accelerator holds"


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


def default_space(*, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec) -> SearchSpace:
    """The default candidate values of every axis for one scenario (see the module docstring).

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
        recompute=RECOMPUTE_POLICIES,
        grad_reduce_dtype=GRAD_REDUCE_DTYPES,
    )


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


def _schedule_options(space: SearchSpace) -> tuple[IntArray, IntArray]:
    """(schedule code, virtual stages) pairs for pp > 1; the first pair is the one used when pp = 1."""
    pairs: list[tuple[int, int]] = []
    for name in space.schedule:
        if name == "interleaved":
            pairs.extend((SCHEDULE_CODE[name], v) for v in space.virtual_stages)
        else:
            pairs.append((SCHEDULE_CODE[name], 1))
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


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
    (CONTRACT.md); dp*microbatch_seqs | batch sequences; interleaved: pp*v <= layers and pp | microbatches
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
    sched_code, sched_v = _schedule_options(space)
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
    cols["schedule"] = sched_code[option]
    cols["virtual_stages"] = sched_v[option]
    below = m_tail(cols["tp"])
    p, m, sched = cols["pp"], cols["microbatches"], cols["schedule"]
    interleaved = sched == SCHEDULE_CODE["interleaved"]
    dualpipe = sched == SCHEDULE_CODE["dualpipe"]
    cols = _keep(
        cols,
        [
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


def layout_dict(batch: LayoutBatch, i: int) -> dict[str, Any]:
    """Row ``i`` of a LayoutBatch as a layout mapping with the document's spellings."""
    from solvers.schema import layout_from_batch

    return layout_from_batch(batch, i)


_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?(e[+-]?\d+)?")


def reason_key(reason: str) -> str:
    """An engine rule text with its numbers blanked, so that one rule counts as one reason."""
    return _NUMBER.sub("N", reason.strip())


# ---------------------------------------------------------------------------------------------------------
# search
# ---------------------------------------------------------------------------------------------------------

Progress = Callable[[int, int], None]  # (layouts evaluated so far, layouts to evaluate)


@dataclass(frozen=True)
class SearchResult:
    """A ranked search: ``layouts`` holds the feasible layouts, best first, and ``metrics`` their figures.

    ``metrics`` always has ``step_s``, ``gpu_busy_fraction`` and ``memory_bytes`` (per-GPU total), and
    the ledger figures (``usd_per_million_tokens``, ``total_usd``, ``total_kgco2e``, ``wall_clock_days``,
    ``facility_kwh``, ``water_l``) when the objective or the Pareto front needs them. ``pareto`` indexes
    ``layouts`` (ordered by the first Pareto objective).
    """

    objective: str
    candidates: int
    evaluated: int
    feasible: int
    rejected: dict[str, int]
    elapsed_s: float
    layouts: LayoutBatch
    metrics: dict[str, FloatArray]
    pareto_objectives: tuple[str, ...]
    pareto: IntArray
    space: SearchSpace


def check_objectives(*, objective: str, pareto: Sequence[str], path: str = "search") -> tuple[str, ...]:
    """Validate the ranking objective and the Pareto metrics; returns the Pareto metrics as a tuple."""
    errors: list[FieldError] = []
    if objective not in OBJECTIVES:
        errors.append(
            FieldError(f"{path}.objective", f"must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        )
    names = tuple(pareto)
    if not MIN_OBJECTIVES <= len(names) <= MAX_OBJECTIVES:
        errors.append(
            FieldError(
                f"{path}.pareto", f"lists {MIN_OBJECTIVES} or {MAX_OBJECTIVES} metrics, got {len(names)}"
            )
        )
    for i, name in enumerate(names):
        if name not in PARETO_METRICS:
            errors.append(
                FieldError(f"{path}.pareto[{i}]", f"must be one of {', '.join(PARETO_METRICS)}, got {name!r}")
            )
    if len(set(names)) != len(names):
        errors.append(FieldError(f"{path}.pareto", "lists a metric twice"))
    if errors:
        raise ScenarioError(errors)
    return names


def ledger_metrics(
    *, ledger_fields: Mapping[str, Any], tokens_per_step: float, step_s: FloatArray, busy: FloatArray
) -> dict[str, FloatArray]:
    """Cost, carbon and schedule figures of many layouts in one ``compute_ledger`` call over arrays."""
    from solvers.ledger import LedgerInputs, compute_ledger

    if step_s.shape[0] == 0:
        return {name: np.zeros(0) for name in _LEDGER_METRICS}
    result = compute_ledger(
        LedgerInputs(step_s=step_s, gpu_busy_fraction=busy, tokens_per_step=tokens_per_step, **ledger_fields)
    )

    def col(value: Any) -> FloatArray:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), step_s.shape)

    return {
        "usd_per_million_tokens": col(result.tco["usd_per_million_tokens"]),
        "total_usd": col(result.tco["total_usd"]),
        "total_kgco2e": col(result.carbon["total_kgco2e"]),
        "wall_clock_days": col(result.schedule["wall_clock_days"]),
        "facility_kwh": col(result.energy["facility_kwh"]),
        "water_l": col(result.carbon["water_l"]),
    }


def search_resolved(
    resolved: Resolved,
    *,
    objective: str = "step_s",
    pareto: Sequence[str] = DEFAULT_PARETO,
    space: SearchSpace | None = None,
    max_layouts: int = MAX_LAYOUTS_PER_SEARCH,
    progress: Progress | None = None,
) -> SearchResult:
    """Search every layout of a resolved scenario (``solvers.schema.Resolved``) and rank the feasible ones.

    Steps: ``enumerate_layouts``; the engine's rules (``engine.layout_rule_codes``, the rules a single
    solve applies) count the rest by reason; ``engine.evaluate`` in chunks of ``EVAL_CHUNK_LAYOUTS``;
    layouts that do not fit in memory are dropped (counted under ``memory.fits``); the ledger prices the
    feasible ones when needed; rank by the objective, ties by step time, then memory per GPU, then
    enumeration order; Pareto front over ``pareto`` (2 or 3 metrics, all minimised).
    Raises ``ScenarioError`` when no layout is valid or none fits.
    """
    from solvers import engine

    started = time.perf_counter()
    pareto_names = check_objectives(objective=objective, pareto=pareto)
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    if space is None:
        space = default_space(**specs)
    enum = enumerate_layouts(**specs, space=space, max_layouts=max_layouts)
    rejected = dict(enum.rejected)

    codes, _names = engine.layout_rule_codes(**specs, layouts=enum.layouts)
    ok = codes == 0
    if not bool(ok.all()):
        for code in np.unique(codes[~ok]):
            first = int(np.flatnonzero(codes == code)[0])
            _, messages = engine.check_layouts(**specs, layouts=take(enum.layouts, np.array([first])))
            key = reason_key(messages[0] or f"training.layout: engine rule {int(code)}")
            rejected[key] = rejected.get(key, 0) + int(np.count_nonzero(codes == code))
    valid = enum.layouts if bool(ok.all()) else take(enum.layouts, np.flatnonzero(ok))
    n = len(valid)
    if n == 0:
        common = max(rejected.items(), key=lambda kv: kv[1])[0] if rejected else "empty search space"
        raise ScenarioError.single(
            "training.layout",
            f"auto: none of {enum.candidates:,} candidate layouts is valid; most common rule: {common}",
        )

    step_s = np.empty(n)
    busy = np.empty(n)
    memory_bytes = np.empty(n)
    fits = np.empty(n, dtype=np.bool_)
    capacity_bytes = 0.0
    for start in range(0, n, EVAL_CHUNK_LAYOUTS):
        stop = min(n, start + EVAL_CHUNK_LAYOUTS)
        columns = engine.evaluate(**specs, layouts=take(valid, slice(start, stop)))
        step_s[start:stop] = columns.step_s
        busy[start:stop] = columns.gpu_busy_fraction
        memory_bytes[start:stop] = columns.total_bytes
        fits[start:stop] = columns.fits
        capacity_bytes = float(columns.capacity_bytes[0])
        if progress is not None:
            progress(stop, n)
    feasible_index = np.flatnonzero(fits)
    if n - feasible_index.size:
        rejected[R_MEMORY] = n - int(feasible_index.size)
    if feasible_index.size == 0:
        raise ScenarioError.single(
            "training.layout",
            f"auto: none of {n:,} valid layouts fits in memory (smallest needs "
            f"{float(memory_bytes.min()) / 1e9:,.1f} GB per GPU, the accelerator holds {capacity_bytes / 1e9:,.1f} GB)",
        )

    metrics: dict[str, FloatArray] = {
        "step_s": step_s[feasible_index],
        "gpu_busy_fraction": busy[feasible_index],
        "memory_bytes": memory_bytes[feasible_index],
    }
    if objective in _LEDGER_METRICS or any(name in _LEDGER_METRICS for name in pareto_names):
        metrics.update(
            ledger_metrics(
                ledger_fields=resolved.ledger_fields,
                tokens_per_step=float(resolved.training.global_batch_tokens),
                step_s=metrics["step_s"],
                busy=metrics["gpu_busy_fraction"],
            )
        )
    order = np.lexsort(
        (np.arange(feasible_index.size), metrics["memory_bytes"], metrics["step_s"], metrics[objective])
    )
    ranked = take(valid, feasible_index[order])
    metrics = {name: np.ascontiguousarray(values[order]) for name, values in metrics.items()}
    front = pareto_indices(np.column_stack([metrics[name] for name in pareto_names]))
    return SearchResult(
        objective=objective,
        candidates=enum.candidates,
        evaluated=n,
        feasible=int(feasible_index.size),
        rejected=dict(sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
        elapsed_s=time.perf_counter() - started,
        layouts=ranked,
        metrics=metrics,
        pareto_objectives=pareto_names,
        pareto=front,
        space=space,
    )


# ---------------------------------------------------------------------------------------------------------
# explaining a difference
# ---------------------------------------------------------------------------------------------------------

# step_s = compute_s + bubble_s + sum of exposed exchanges (solvers.engine): the difference of two steps is
# exactly the sum of the differences of these terms.
STEP_TERMS: tuple[str, ...] = (
    "compute_s",
    "bubble_s",
    "exposed_comm_s_tp",
    "exposed_comm_s_cp",
    "exposed_comm_s_pp",
    "exposed_comm_s_dp",
    "exposed_comm_s_ep",
)
_TERM_LABEL = {
    "compute_s": "compute",
    "bubble_s": "pipeline bubble",
    "exposed_comm_s_tp": "exposed TP exchange",
    "exposed_comm_s_cp": "exposed CP exchange",
    "exposed_comm_s_pp": "exposed PP exchange",
    "exposed_comm_s_dp": "exposed DP exchange",
    "exposed_comm_s_ep": "exposed EP exchange",
}


def explain_difference(
    *,
    baseline_layout: Mapping[str, Any],
    baseline_row: Mapping[str, Any],
    candidate_layout: Mapping[str, Any],
    candidate_row: Mapping[str, Any],
) -> dict[str, Any]:
    """Which terms of the step moved between two layouts, largest first, and which axes differ.

    Equation: step_s = compute_s + bubble_s + sum_x exposed_comm_s_x (solvers.engine), so
    delta step_s = sum of the term deltas exactly. Example: Llama 3's TP8 PP16 interleaved(2) against a
    layout with more virtual stages shows the bubble shrinking and the PP exchange growing.
    """
    deltas = {term: float(candidate_row[term]) - float(baseline_row[term]) for term in STEP_TERMS}
    base_step = float(baseline_row["step_s"])
    cand_step = float(candidate_row["step_s"])
    moved = sorted((t for t in STEP_TERMS if deltas[t] != 0.0), key=lambda t: -abs(deltas[t]))
    changed = {
        key: [baseline_layout[key], candidate_layout[key]]
        for key in baseline_layout
        if key in candidate_layout and baseline_layout[key] != candidate_layout[key]
    }
    parts = [
        f"{_TERM_LABEL[t]} {deltas[t]:+.3f} s"
        for t in moved
        if abs(deltas[t]) >= 1e-4 * max(base_step, 1e-12)
    ]
    axes = ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in changed.items()) or "no layout axis"
    summary = (
        f"step {base_step:.3f} s -> {cand_step:.3f} s ({(cand_step / base_step - 1.0) * 100.0:+.1f}%) by changing "
        f"{axes}: " + ("; ".join(parts) if parts else "no term moved")
    )
    base_mem, cand_mem = baseline_row.get("total_bytes"), candidate_row.get("total_bytes")
    if base_mem is not None and cand_mem is not None and float(base_mem) != float(cand_mem):
        summary += f"; memory per GPU {float(base_mem) / 1e9:,.1f} GB -> {float(cand_mem) / 1e9:,.1f} GB"
    return {
        "baseline_step_s": base_step,
        "candidate_step_s": cand_step,
        "delta_step_s": cand_step - base_step,
        "delta_s": deltas,
        "terms_by_impact": moved,
        "layout_changes": changed,
        "summary": summary,
    }


# ---------------------------------------------------------------------------------------------------------
# the search document (CONTRACT.md "Search") and the CLI
# ---------------------------------------------------------------------------------------------------------

SEARCH_KEYS: tuple[str, ...] = ("objective", "top", "pareto", "space")


@dataclass(frozen=True)
class SearchRequest:
    """A scenario document split into the scenario proper and its ``search`` options."""

    scenario: dict[str, Any]  # the document without ``search``; training.layout as given
    objective: str
    top: int
    pareto: tuple[str, ...]
    space: Mapping[str, Any] | None


def parse_search_request(
    document: Any,
    *,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
) -> SearchRequest:
    """Split ``document`` into scenario and ``search`` options; keyword arguments override the document."""
    if not isinstance(document, Mapping):
        raise ScenarioError.single(
            "", f"a scenario document must be a mapping, got {type(document).__name__}"
        )
    scenario = {k: v for k, v in document.items() if k not in ("search", "sweep")}
    options = document.get("search") or {}
    if not isinstance(options, Mapping):
        raise ScenarioError.single("search", "must be a mapping")
    errors = [
        FieldError(f"search.{k}", f"unknown key; expected one of {', '.join(SEARCH_KEYS)}")
        for k in options
        if k not in SEARCH_KEYS
    ]
    chosen_objective = objective if objective is not None else options.get("objective", "step_s")
    chosen_top = top if top is not None else options.get("top", DEFAULT_TOP)
    if isinstance(chosen_top, bool) or not isinstance(chosen_top, int) or not 0 <= chosen_top <= MAX_TOP:
        errors.append(FieldError("search.top", f"must be an integer from 0 to {MAX_TOP}, got {chosen_top!r}"))
    chosen_pareto = pareto if pareto is not None else options.get("pareto", list(DEFAULT_PARETO))
    if not isinstance(chosen_pareto, list | tuple) or not all(isinstance(p, str) for p in chosen_pareto):
        errors.append(FieldError("search.pareto", "must be a list of metric names"))
        chosen_pareto = list(DEFAULT_PARETO)
    if not isinstance(chosen_objective, str):
        errors.append(FieldError("search.objective", f"must be a string, got {chosen_objective!r}"))
        chosen_objective = "step_s"
    names: tuple[str, ...] = ()
    try:
        names = check_objectives(objective=chosen_objective, pareto=chosen_pareto)
    except ScenarioError as exc:
        errors.extend(exc.errors)
    if errors:
        raise ScenarioError(errors)
    return SearchRequest(
        scenario=scenario,
        objective=chosen_objective,
        top=int(chosen_top),
        pareto=names,
        space=options.get("space"),
    )


def _with_auto_layout(scenario: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(scenario)
    training = out.get("training")
    training = dict(training) if isinstance(training, Mapping) else {}
    training["layout"] = "auto"
    out["training"] = training
    return out


def _ledger_for_row(resolved: Resolved, row: Mapping[str, Any]) -> Any:
    from solvers.ledger import LedgerInputs, compute_ledger

    return compute_ledger(
        LedgerInputs(
            step_s=float(row["step_s"]),
            gpu_busy_fraction=float(row["gpu_busy_fraction"]),
            tokens_per_step=float(resolved.training.global_batch_tokens),
            **resolved.ledger_fields,
        )
    )


def _layout_rows(resolved: Resolved, layouts: LayoutBatch) -> list[dict[str, Any]]:
    from solvers import engine

    columns = engine.evaluate(
        model=resolved.model, cluster=resolved.cluster, training=resolved.training, layouts=layouts
    )
    return [columns.row(i) for i in range(len(layouts))]


def _compact(
    *, rank: int, layout: Mapping[str, Any], row: Mapping[str, Any], metrics: Mapping[str, float]
) -> dict[str, Any]:
    return {
        "rank": rank,
        "layout": dict(layout),
        "step_s": float(row["step_s"]),
        "mfu": float(row["mfu"]),
        "tokens_per_s": float(row["tokens_per_s"]),
        "memory_bytes": float(row["total_bytes"]),
        "terms": {term: float(row[term]) for term in STEP_TERMS},
        "metrics": {k: float(v) for k, v in metrics.items() if k != "gpu_busy_fraction"},
    }


def _metrics_at(result: SearchResult, i: int) -> dict[str, float]:
    return {name: float(values[i]) for name, values in result.metrics.items()}


def search_output(
    resolved: Resolved,
    result: SearchResult,
    *,
    top: int = DEFAULT_TOP,
    baseline: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The search document: counts, the best layout's full report, top alternatives, the Pareto front.

    Alternatives skip layouts whose step time and memory equal one already listed (e.g. a gradient dtype
    that no exchange exposes). ``baseline`` (layout, engine row) adds the given layout and what moved.
    """
    from solvers.report import compose_report

    listed: list[int] = [0]
    seen = {(float(result.metrics["step_s"][0]), float(result.metrics["memory_bytes"][0]))}
    i = 1
    while len(listed) < top + 1 and i < result.feasible:
        key = (float(result.metrics["step_s"][i]), float(result.metrics["memory_bytes"][i]))
        if key not in seen:
            seen.add(key)
            listed.append(i)
        i += 1
    front = [int(k) for k in result.pareto]
    if len(front) > MAX_PARETO_ROWS:
        picks = np.unique(np.linspace(0, len(front) - 1, MAX_PARETO_ROWS).round().astype(np.int64))
        front = [front[int(p)] for p in picks]
    wanted = sorted(set(listed) | set(front))
    rows = dict(
        zip(
            wanted,
            _layout_rows(resolved, take(result.layouts, np.array(wanted, dtype=np.int64))),
            strict=True,
        )
    )
    layouts = {k: layout_dict(result.layouts, k) for k in wanted}

    summary = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "rejected": result.rejected,
    }
    best_row = rows[0]
    best = compose_report(
        resolved=resolved,
        layout=layouts[0],
        row=best_row,
        ledger=_ledger_for_row(resolved, best_row),
        search=summary,
    )
    alternatives = []
    for k in listed[1:]:
        item = _compact(rank=k + 1, layout=layouts[k], row=rows[k], metrics=_metrics_at(result, k))
        item["versus_best"] = explain_difference(
            baseline_layout=layouts[0],
            baseline_row=best_row,
            candidate_layout=layouts[k],
            candidate_row=rows[k],
        )["summary"]
        alternatives.append(item)
    out: dict[str, Any] = {
        "objective": result.objective,
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "elapsed_s": result.elapsed_s,
        "rejected": result.rejected,
        "best": best,
        "alternatives": alternatives,
        "pareto_objectives": list(result.pareto_objectives),
        "pareto_size": int(result.pareto.shape[0]),
        "pareto": [
            _compact(rank=k + 1, layout=layouts[k], row=rows[k], metrics=_metrics_at(result, k))
            for k in front
        ],
        "space": result.space.as_dict(),
        "limits": {
            "max_layouts_per_search": MAX_LAYOUTS_PER_SEARCH,
            "max_pareto_rows": MAX_PARETO_ROWS,
            "eval_chunk_layouts": EVAL_CHUNK_LAYOUTS,
        },
    }
    if baseline is not None:
        base_layout, base_row = baseline
        out["baseline"] = {
            "layout": dict(base_layout),
            "step_s": float(base_row["step_s"]),
            "mfu": float(base_row["mfu"]),
            "memory_bytes": float(base_row["total_bytes"]),
            "fits": bool(base_row["fits"]),
            "terms": {term: float(base_row[term]) for term in STEP_TERMS},
            "versus_best": explain_difference(
                baseline_layout=base_layout,
                baseline_row=base_row,
                candidate_layout=layouts[0],
                candidate_row=best_row,
            ),
        }
    return out


def search_document(
    document: Any,
    *,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Search a scenario document (CONTRACT.md "Search"); a ``search`` section may set objective, top,
    pareto and space, and the keyword arguments override it.

    When ``training.layout`` is a mapping it is validated, evaluated and reported as ``baseline`` with what
    moved between it and the best layout (or with the rule it breaks as ``baseline.error``); the search
    itself always covers the whole space.
    """
    from solvers import engine
    from solvers.report import reason_to_error
    from solvers.schema import layout_from_batch, resolve

    request = parse_search_request(document, objective=objective, top=top, pareto=pareto)
    resolved = resolve(_with_auto_layout(request.scenario))
    baseline: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None
    baseline_error: dict[str, Any] | None = None
    training = request.scenario.get("training")
    if isinstance(training, Mapping) and isinstance(training.get("layout"), Mapping):
        try:
            given = resolve(request.scenario)
            ok, reasons = engine.check_layouts(
                model=given.model, cluster=given.cluster, training=given.training, layouts=given.layouts
            )
            if not bool(ok[0]):
                raise ScenarioError([reason_to_error(reasons[0] or "training.layout: invalid layout")])
            baseline = (layout_from_batch(given.layouts, 0), _layout_rows(given, given.layouts)[0])
        except ScenarioError as exc:
            # The given layout is only a point of comparison: the search still covers the whole space.
            baseline_error = exc.as_dict()
    space = space_from_document(
        request.space,
        default=default_space(model=resolved.model, cluster=resolved.cluster, training=resolved.training),
    )
    result = search_resolved(
        resolved, objective=request.objective, pareto=request.pareto, space=space, progress=progress
    )
    out = search_output(resolved, result, top=request.top, baseline=baseline)
    if baseline_error is not None and isinstance(training, Mapping):
        out["baseline"] = {"layout": dict(training["layout"]), "error": baseline_error}
    return out


def build_search_parser(prog: str = "python -m solvers search") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Search every layout of a scenario; print the best, the alternatives and the Pareto front.",
    )
    parser.add_argument("file", help="scenario file (JSON or YAML), or - for standard input")
    parser.add_argument(
        "--objective", choices=OBJECTIVES, default=None, help="ranking objective (default step_s)"
    )
    parser.add_argument("--top", type=int, default=None, help=f"alternatives to list (default {DEFAULT_TOP})")
    parser.add_argument(
        "--pareto",
        default=None,
        help=f"2 or 3 comma-separated metrics for the Pareto front (default {','.join(DEFAULT_PARETO)}); "
        f"one of {', '.join(PARETO_METRICS)}",
    )
    parser.add_argument("--compact", action="store_true", help="print the result on one line")
    return parser


def search_main(
    argv: Sequence[str],
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``python -m solvers search FILE|- [--objective O] [--top K] [--pareto a,b[,c]] [--compact]``.

    Exit status as ``solve``: 0 success, 2 bad input (the message names the field path), 3 internal error.
    """
    from solvers.cli import run_document_command

    try:
        args = build_search_parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    pareto = [p.strip() for p in args.pareto.split(",") if p.strip()] if args.pareto else None
    return run_document_command(
        args.file,
        lambda document: search_document(document, objective=args.objective, top=args.top, pareto=pareto),
        stdin=stdin or sys.stdin,
        stdout=stdout or sys.stdout,
        stderr=stderr or sys.stderr,
        compact=args.compact,
    )


if __name__ == "__main__":  # pragma: no cover - convenience: python -m solvers.search FILE
    sys.exit(search_main(sys.argv[1:]))
