"""Pipeline schedules: bubble time and microbatches in flight (the activation-memory consequence).

Codes follow ``solvers.specs.SCHEDULES``: 0 gpipe, 1 1f1b, 2 interleaved, 3 zero_bubble, 4 dualpipe.
``p`` is the pipeline depth, ``m`` the microbatches per replica per step, ``v`` the virtual stages per GPU,
``t_mb`` the compute time of one microbatch on the busiest stage (forward + backward, recompute included),
so the ideal step is ``m * t_mb``. The bubble is the idle time on top of it; the contract's
``bubble_fraction = bubble / (m t_mb + bubble)``. The table assumes equal stages; when the busiest stage is
heavier than the rest (the output layer, an uneven split) the engine passes ``t_mb`` scaled by the other
stages' mean over the busiest's (``solvers.effects.pipeline_stages``' ``fill``), since the fill and drain cross them.

==============  ======================================  ===========================  =========================
schedule        bubble time                             in flight (first stage)      source
==============  ======================================  ===========================  =========================
gpipe           (p-1) t_mb                              m                            Huang et al. 2019 §2.3
1f1b            (p-1) t_mb                              min(m, p)                    Narayanan et al. SC'21 §2.2.1
interleaved     (p-1) t_mb / v                          min(m, p)(1 + (p-1)/(p v))   SC'21 §2.2.2; Korthikanti
                                                                                     et al. 2022 §4.2.3
zero_bubble     (p-1)(F + B - W)                        min(m, p)                    Qi et al. ICLR'24 §3 ZB-H1
dualpipe        (p/2-1)(F&B + B_full - 3W)              min(m, p+1), 2x parameters   DeepSeek-V3 §3.2.1 Table 2
==============  ======================================  ===========================  =========================

GPipe and 1F1B have the same bubble, ``(p-1)/(m+p-1)`` of the step: 1F1B only bounds the memory. Interleaving
divides the bubble by ``v`` (SC'21: fraction ``(p-1)/(v m)`` of the ideal time). For the zero-bubble and
DualPipe rows the backward pass is split into the input gradient ``B`` and the weight gradient ``W``
(``B_full = B + W``), each taken equal to a forward ``F``, so ``t_mb = F + B + W = 3F`` plus any recompute,
which lengthens ``B`` (Qi et al. 2024 §2: T_F ~ T_B ~ T_W). ZB-H1 (the zero-bubble schedule with 1F1B's
memory) leaves ``(p-1)(F+B-W) = (p-1) F``: a third of 1F1B's bubble, once ``m >= p``; with fewer microbatches
a flush lasts at least its critical path (the last microbatch's forward through the other ``p - 1`` stages and
its input gradients back through all ``p``), a bubble of at least ``(p-1)F + (p-m)B - (m-1)W``. DualPipe overlaps a forward and a
backward chunk (``F&B = F + B_full`` when compute-bound) and runs ``p/2 - 1`` bubbles from both ends:
``(p/2-1)(F + 2 B_full - 3W) = (p-2) F``; it needs twice the parameters (DeepSeek-V3 Table 2;
MegaScale-MoE §8). Worked example: p = 16, m = 128, t_mb = 3 (F = 1): 1F1B 45 (fraction 10.5%),
interleaved v = 2 22.5 (5.5%), ZB-H1 15 (3.8%), DualPipe 14 (3.5%).
"""

from __future__ import annotations

from solvers.compute import Num, maximum, minimum, where
from solvers.specs import SCHEDULE_CODE

GPIPE = SCHEDULE_CODE["gpipe"]
ONE_F_ONE_B = SCHEDULE_CODE["1f1b"]
INTERLEAVED = SCHEDULE_CODE["interleaved"]
ZERO_BUBBLE = SCHEDULE_CODE["zero_bubble"]
DUALPIPE = SCHEDULE_CODE["dualpipe"]

STANDALONE_CHUNKS = 2
"""Model chunks that may hold no transformer layer: the embedding and the output layer (with the loss) can
each be a chunk of their own, so an interleaved pipeline has at most ``layers + 2`` chunks (``pp * v``).
Llama 3 §3.3.2 runs exactly that: one layer per chunk, one layer fewer on the first and last stages, "the
first model chunk on the first stage has only the embedding, and the last model chunk on the last stage has
only output projection and loss calculation" (126 layers + 2 = 16 stages x 8 chunks)."""


def bubble_s(
    *,
    schedule: Num,
    pp: Num,
    microbatches: Num,
    virtual_stages: Num,
    microbatch_s: Num,
    recompute_forward_share: Num = 0.0,
) -> Num:
    """Idle time per step on the busiest stage, by schedule (table in the module docstring).

    ``recompute_forward_share`` is the recomputed forward work per microbatch in units of one forward
    (1 for full recompute, ~0 for none); it lengthens the input-gradient phase ``B`` of the zero-bubble and
    DualPipe formulas. Example: 1F1B, p = 16, t_mb = 0.3 s -> 15 x 0.3 = 4.5 s whatever m is.
    """
    p = 1.0 * pp
    v = 1.0 * maximum(virtual_stages, 1)
    # Phases in units of one forward F: B (input gradient) = 1 + recompute, W (weight gradient) = 1.
    unit_b = 1.0 + recompute_forward_share
    per_mb_units = 1.0 + unit_b + 1.0
    forward_s = microbatch_s / per_mb_units
    plain = (p - 1.0) * microbatch_s
    interleaved = plain / v
    zero_bubble = (p - 1.0) * (1.0 + unit_b - 1.0) * forward_s
    # ZB-H1's (p-1)(F+B-W) holds for m >= p; with fewer microbatches the last one's forward through the other
    # p-1 stages and its input gradients back through all p bound the flush from below: (p-1)F + (p-m)B - (m-1)W.
    zb_chain = ((p - 1.0) + (p - microbatches) * unit_b - (microbatches - 1.0)) * forward_s
    zero_bubble = maximum(zero_bubble, zb_chain)
    # F&B = F + B_full; B_full = B + W; (p/2 - 1)(F&B + B_full - 3W).
    b_full = unit_b + 1.0
    dualpipe = maximum(p / 2.0 - 1.0, 0.0) * (1.0 + b_full + b_full - 3.0) * forward_s
    out = where(
        schedule == INTERLEAVED,
        interleaved,
        where(schedule == ZERO_BUBBLE, zero_bubble, where(schedule == DUALPIPE, dualpipe, plain)),
    )
    return where((p > 1.0) & (microbatches > 0), out, 0.0)


def flushes(*, microbatches: Num, f: int | None) -> tuple[Num, Num]:
    """``(microbatches of one flush, flushes a step)``: a pipeline filled and drained once per flush of at most
    ``f`` microbatches (``training.pipeline_flush_microbatches``), ``(min(m, f), ceil(m / f))``; ``(m, 1)`` when
    ``f`` is None. Example: m = 12, f = 8 -> (8, 2)."""
    if f is None:
        return microbatches, 1
    return minimum(microbatches, f), -(-microbatches // f)


def flush_sizes(*, microbatches: Num, f: int | None) -> tuple[Num, Num]:
    """The microbatches of a step's first and last flush: each flush is a schedule of its own, so a schedule's
    rule on its microbatches holds for every flush, and the last, shorter one pays its own bubble. Example:
    m = 12, f = 8 -> (8, 4); f None -> (m, m)."""
    if f is None:
        return microbatches, microbatches
    return minimum(microbatches, f), microbatches - (-(-microbatches // f) - 1) * f


def step_bubble_s(
    *,
    schedule: Num,
    pp: Num,
    microbatches: Num,
    flush: int | None,
    virtual_stages: Num,
    microbatch_s: Num,
    recompute_forward_share: Num = 0.0,
) -> Num:
    """A step's bubble: every flush fills and drains the pipeline (``flushes``), each at its own size: ``n x``
    the first flush's ``bubble_s`` plus what the last, shorter flush pays beyond it (zero-bubble's bubble grows
    as a flush shrinks below ``p``; the other schedules' does not depend on its size).
    Example: zero-bubble, p = 16, m = 32 in flushes of 28: the 28 pay 15 F, the 4 left their critical path, 24 F."""
    first, last = flush_sizes(microbatches=microbatches, f=flush)
    count = flushes(microbatches=microbatches, f=flush)[1]
    common = {
        "schedule": schedule,
        "pp": pp,
        "virtual_stages": virtual_stages,
        "microbatch_s": microbatch_s,
        "recompute_forward_share": recompute_forward_share,
    }
    one = bubble_s(microbatches=first, **common)
    if flush is None:
        return count * one
    return count * one + (bubble_s(microbatches=last, **common) - one)


def bubble_fraction(*, bubble_s: Num, compute_s: Num) -> Num:
    """``bubble / (compute + bubble)``; for gpipe and 1f1b this is ``(p-1)/(m+p-1)`` (CONTRACT.md v1).

    Example: p = 16, m = 16 -> 15/31 = 48.4%.
    """
    total = compute_s + bubble_s
    return where(total > 0.0, bubble_s / where(total > 0.0, total, 1.0), 0.0)


def microbatches_in_flight(*, schedule: Num, pp: Num, microbatches: Num, virtual_stages: Num) -> Num:
    """Microbatches whose activations the first (busiest-memory) stage holds at its peak.

    GPipe stores all ``m`` forwards before any backward; 1F1B and ZB-H1 at most ``p``; interleaved 1F1B holds
    ``p (1 + (p-1)/(p v))`` microbatches' worth of its stage (Korthikanti et al. 2022 §4.2.3); DualPipe
    ``p + 1`` (DeepSeek-V3 Table 2). Without a pipeline a step holds one microbatch at a time (gradient
    accumulation), except GPipe, which by definition runs all forwards first.
    Example: p = 16, m = 64, v = 2: interleaved 16 x (1 + 15/32) = 23.5.
    """
    p = 1.0 * pp
    m = 1.0 * microbatches
    v = 1.0 * maximum(virtual_stages, 1)
    depth = minimum(m, p)
    interleaved = depth * (1.0 + (p - 1.0) / (p * v))
    dualpipe = minimum(m, p + 1.0)
    out = where(
        schedule == GPIPE,
        m,
        where(schedule == INTERLEAVED, interleaved, where(schedule == DUALPIPE, dualpipe, depth)),
    )
    return where((p > 1.0) | (schedule == GPIPE), out, 1.0)


def unpaired_share(*, schedule: Num, pp: Num, microbatches: Num, virtual_stages: Num) -> Num:
    """Share of the first stage's model-chunk passes outside the steady one-forward-one-backward phase, where
    Megatron-Core's expert-parallel overlap (``overlap_moe_expert_parallel_comm``) has no other microbatch's
    pass to hide a dispatch or combine behind: ``W / (m v)`` with the first stage's warm-up forwards
    ``W = 2 (p-1) + (v-1) g + 1`` interleaved (group size ``g = p``, the default) and ``W = p`` for 1F1B (``p - 1``
    as 1F1B's own, plus the one extra forward the overlap schedules before the steady phase), each answered by a
    backward in the cool-down; at most 1. Other schedules: 0 (their overlap share applies as given).
    Source: Megatron-Core ``pipeline_parallel/schedules.py``, ``forward_backward_pipelining_with_interleaving``
    (``num_warmup_microbatches = (pipeline_parallel_size - pipeline_parallel_rank - 1) * 2``, then
    ``+= (num_model_chunks - 1) * microbatch_group_size_per_vp_stage``, and "When enabling
    overlap_moe_expert_parallel_comm, we schedule one extra micro-batch forward step before the 1f1b stages",
    ``+ 1``).
    Example: p = 4, v = 4, m = 16 (MLPerf v6.0's DeepSeek-V3 on 8,192 GB200): W = 6 + 12 + 1 = 19 of 64, 0.30;
    m = 60: 0.079; 1F1B p = 8, m = 128: 8 / 128 = 0.0625.
    """
    p = 1.0 * pp
    v = 1.0 * maximum(virtual_stages, 1)
    warmup = where(schedule == INTERLEAVED, 2.0 * (p - 1.0) + (v - 1.0) * p + 1.0, p)
    share = minimum(warmup / (1.0 * microbatches * where(schedule == INTERLEAVED, v, 1.0)), 1.0)
    return where((schedule == ONE_F_ONE_B) | (schedule == INTERLEAVED), share, 0.0)


def parameter_copies(*, schedule: Num) -> Num:
    """Copies of a stage's parameters each GPU holds: 2 for DualPipe (DeepSeek-V3 Table 2), else 1."""
    return where(schedule == DUALPIPE, 2.0, 1.0)


def pipeline_sends_per_microbatch(*, schedule: Num, virtual_stages: Num) -> Num:
    """Stage-boundary crossings per microbatch per direction on one GPU: ``v`` for interleaved, else 1.

    Interleaving multiplies pipeline traffic by ``v`` (Narayanan et al. SC'21 §2.2.2).
    """
    return where(schedule == INTERLEAVED, 1.0 * maximum(virtual_stages, 1), 1.0)
