"""Step-model effects beyond the roofline, each with its switch, its source and its constants (listed below).

Each effect has a switch (``training.efficiency.effects.<name>``, on by default in a scenario document but for
``zero3_per_tensor_collectives``; off in a bare ``EffectsSpec``) and its free constants come from
``solvers.catalog.fitted`` (``python -m solvers fit``). Every function takes python scalars or numpy arrays (one entry per layout) and broadcasts, like
``solvers.compute``. The conventions, with their sources, are in ``docs/CONVENTIONS.md`` ("Step effects").

* ``matrix_shape``: a GEMM's achieved share of the large-GEMM rate is ``tile(M) tile(N) tile(K) x
  d / (d + d_half)`` with ``d = min(M, N, K)``: tile quantisation (a dimension is padded to whole 128-wide
  tiles; NVIDIA, "Matrix Multiplication Background User's Guide", §3.1 Tile Quantization) times a saturating
  curve in the narrowest dimension (small GEMMs cannot fill the SMs nor hide their load latency; same guide
  §3.2 and §2.3). ``d_half`` is fitted to published GEMM kernel benchmarks (``solvers.gemm_shape``). An
  expert's rows (the tokens routed to it) change with every microbatch and differ between experts, so they pad by
  an expected half tile (``varying_tile_fill``). The GEMMs outside the experts weigh a dense MLP only in the
  layers that have one (``dense_shape_factor``).
* ``stragglers``: every step ends in collectives, so it waits for the slowest of N ranks. With rank times of
  relative standard deviation ``sigma`` the expected maximum of N is ``1 + sigma sqrt(2 ln N)`` (the
  extreme-value bound for N normal variables; Dean & Barroso, "The Tail at Scale", CACM 2013, for the
  mechanism). ``sigma`` is fitted.
* ``moe_overhead``: tokens are permuted into expert order before the grouped GEMM and back after it, one read
  and one write of ``top_k`` copies of each token's hidden vector per permutation, forward and backward
  (8 HBM passes; Megatron-Core's token dispatcher); the busiest expert rank carries ``1 + skew`` times the mean
  load (routing is never perfectly balanced; DeepSeek-V3 §2.1.2), which stretches the expert GEMMs and the
  all-to-all. ``skew`` is fitted. The share of the expert-parallel exchange that overlap hides applies only to
  the first stage's passes in the steady 1F1B phase (``solvers.pipeline.unpaired_share``: Megatron-Core pairs
  one microbatch's dispatch with another's pass, and its warm-up and cool-down have none to pair with).
* ``pipeline_ends``: the output layer (``6 h V`` FLOPs per token, forward and backward) runs on the last stage
  only. A stage planner moves layers away from it (Llama 3 §3.3.2, Megatron-LM's
  ``account_for_loss_in_pipeline_split``), so the busiest stage holds ``max(ceil(L/p), (L+e)/p, e)`` layer
  equivalents with ``e = 6 h V / w`` (``w`` one layer's FLOPs per token) instead of spreading it evenly.
  Without a planner (``training.pipeline_split: even``) every stage holds ``ceil(L/p)`` layers, the last
  the rest (``L/p`` each when ``p`` divides ``L``), and the output layer sits on top of the last one's.
  The pipeline's fill and drain cross the other stages at their own time, so the bubble is priced at the
  other stages' mean work over the busiest's (``pipeline_stages``' ``fill``; 1 when the stages are equal).
* ``context_parallel``: with CP each attention call works on blocks of ``s / cp`` tokens (ring attention,
  Liu et al. 2023); the attention core runs at the ``matrix_shape`` curve of that block length.
* ``zero3_recompute_regather`` (in ``solvers.exchanges.recompute_regather_bytes_per_param``): ZeRO-3
  resharded after the forward pass gathers the weights once more for a fully recomputed forward, and the
  backward gathers them a third time only when one block's parameters reach DeepSpeed's
  ``stage3_max_reuse_distance`` (its ``PartitionedParameterCoordinator`` keeps parameters reused within that
  many elements); no fitted constant.
* ``zero3_per_tensor_collectives`` (in ``solvers.exchanges.per_tensor_collectives_extra_s``): DeepSpeed's
  ZeRO-3 before v0.5.x gathers and reduce-scatters each parameter tensor with its own synchronised collective
  (``deepspeed/runtime/zero/partition_parameters.py``, ``_allgather_param``, ``_reduce_scatter_gradient``),
  and NCCL runs both only as rings, whose latency grows with the group (NCCL 2.9.6 ``src/graph/tuning.cc``);
  each tensor's collective pays that latency in NCCL's cheapest protocol beyond its bandwidth time. Each is
  also passed as a list of one view per rank, and PyTorch's ``ProcessGroupNCCL`` (v1.8) copies every entry
  with its own eager op (4.5 us each, ``EAGER_OP_OVERHEAD_US``), so the host time grows with the group. No
  fitted constant. Off in a document unless stated (later DeepSpeed and every FSDP gather per bucket or layer).
* ``fp8_scope``: FP8 training runs only the transformer blocks' linear layers in FP8. The attention core
  stays in BF16 (Transformer Engine's FP8 dot-product attention is opt-in, ``fp8_dpa=False`` in its recipes;
  torchao's ``Float8Linear`` converts only linear layers; DeepSeek-V3 §3.3.1 keeps "attention operators" in
  BF16) and so does the output layer (torchtitan's float8 guide filters ``output``; Megatron-Core's output
  layer is not a Transformer Engine module; DeepSeek-V3 §3.3.1, "the output head"). Both run at the BF16
  rate: the BF16 peak at the same large-GEMM efficiency. With ``pipeline_ends`` the
  output layer enters the stage balance at that rate (its layer equivalents scaled by ``rate / rate_bf16``).
  No constant.
* ``unfused_elementwise``: without fused elementwise kernels (``training.fused_elementwise: false``, PyTorch
  eager mode) each op of a norm, a rotary embedding and a SwiGLU product is a kernel of its own that reads its
  inputs from HBM and writes its output back; torch.compile (or a hand-fused kernel) reads the inputs and
  writes the output once per group. The extra bytes, per token and layer, counted from torchtitan's Llama
  model at the commit of its December 2024 benchmarks (9dec370): ``RMSNorm.forward`` in
  ``torchtitan/models/norms.py`` is ``x.float()``, ``pow(2)``, ``mean(-1)``, ``x * rsqrt(...)``,
  ``type_as(x)``, ``* weight``, 2 x (e + 4) + 20 + 2e bytes per element against 2e fused, twice per layer on
  ``h`` (``h/tp`` with sequence parallelism); ``apply_rotary_emb`` in ``torchtitan/models/llama/model.py`` is
  ``float()``, a complex product and ``type_as``, 2 x (e + 4) + 8 against 2e, on the query and key widths
  over ``tp``; ``FeedForward.forward`` is ``F.silu(w1(x)) * w3(x)``, 5e against 3e on ``ffn/tp`` (gated
  MLPs only; MoE layers on ``(top_k + shared) x expert_ffn / expert_tp``, or ``/ tp`` under ``expert_tp_exchange``). ``e`` is the activation element
  size (2 in BF16 and FP8 training; in FP32 training the casts vanish). The backward pass moves about twice
  the forward's bytes (each op reads the output gradient and its saved inputs and writes one gradient per
  input: a product moves 5 tensors backward against 3 forward) and a full recomputation repeats the forward:
  ``(1 + 2 + [full]) x bytes / HBM bandwidth``. Residual additions are one kernel either way and are not
  counted. No constant.
* ``expert_kernels``: the local experts' GEMMs are not one kernel. Transformer Engine's ``GroupedLinear``
  (``transformer_engine/pytorch/module/grouped_linear.py``, which Megatron-Core's ``TEGroupedMLP`` uses)
  splits the routed tokens by expert (``m_splits``), casts each expert's slice and issues one GEMM per expert
  (``general_grouped_gemm`` over several cuBLAS streams), forward and backward. Each local expert so costs a
  fixed time per MoE layer and microbatch whatever its token count: ``t = c x (E / ep) x MoE layers x
  microbatches`` on the busiest stage, ``c`` fitted. It is what makes the microbatch size matter for small
  experts (Megatron-Bridge's 26.02 and 26.02.01 tables: Qwen3-30B-A3B on 8 B200, 9,691 tokens/s per GPU with
  one sequence per microbatch, 26,695 with four).
* ``fp8_casts``: FP8 GEMMs read FP8 operands that something must write. Transformer Engine quantises a linear
  layer's BF16 input in one cast-transpose kernel that reads it once and writes a row-wise FP8 copy for this
  GEMM and a column-wise one for the weight-gradient GEMM (``transformer_engine/pytorch/module/linear.py``
  ``_Linear.forward``; ``grouped_linear.py`` per expert slice, ``fused_multi_quantize``), and in the backward
  does the same to every output gradient (``module/base.py`` ``grad_output_preprocess``): 4 bytes an element.
  A norm fused with the next GEMM writes its output in FP8 itself (``layernorm_linear.py``), so the counted
  inputs are those of the output projection, of the MLP's second GEMM and of the experts (their norm output
  goes to the router in BF16); weights are cast once a step and not counted (``is_first_microbatch``). Not
  counted either: the transpose a fused norm's output still needs on Hopper, the extra amax pass of current
  scaling, and a sequence-parallel gather's separate transpose (each a fraction of the counted bytes). No
  constant.
* ``fp8_tp_gather`` (in ``solvers.exchanges.tp_exchange``): in FP8 training the tensor-parallel all-gathers
  carry the FP8 copies the GEMMs read. Transformer Engine's ``LayerNormLinear`` writes its norm's output in FP8 (a
  ``uint8`` buffer) and, with sequence parallelism, all-gathers that buffer in front of the QKV and the first MLP
  GEMM (``transformer_engine/pytorch/module/layernorm_linear.py``, ``_LayerNormLinear.forward``, v1.11; the same
  through its user-buffer overlap), and in the backward casts a row-parallel layer's output gradient to FP8 before
  gathering it (``module/base.py``, ``grad_output_preprocess``); torchao's ``Float8ColwiseParallel`` and
  ``Float8RowwiseParallel`` (torchtitan's float8 TP) gather Float8 tensors both ways. So each all-gather (the
  forward's, a recomputed forward's and the backward's) moves 1 byte an element: half an all-gather, a quarter of
  the all-reduce the convention counts, on the attention half and the dense share of the MLP half (1.5 of the 2
  all-reduces of a half layer without recompute). The reduce-scatters stay BF16, as do a MoE layer's MLP (its
  router reads the norm's BF16 output) and the output layer's. No constant.
* ``shape_by_precision``: ``d_half`` is fitted to FP8 kernels (``solvers.gemm_shape``). A GEMM's fixed costs
  (launch, prologue and epilogue, the last partial wave) take the same time at any precision while its math
  takes ``1 / rate``, so the dimension at which it reaches half its plateau scales with the large-GEMM rate:
  ``d_half x rate / rate_fp8`` on the same accelerator (BF16 on H100 at the fitted constants: about 55 for
  99.8), on tensor-core precisions only (FP32 GEMMs, and an accelerator without an FP8 peak, keep the fitted
  one). The attention core, BF16 in FP8 training, takes its BF16 rate's. No constant.
* ``attention_kernels``: with fused attention, the attention core runs at the ``attention_core`` rate times its
  implementation's published forward-and-backward rate over FlashAttention-2's
  (``solvers.catalog.attention_kernels``: FlashAttention-3 paper, H100, cuDNN 1.62, FlashAttention-3 1.77), on
  Hopper (measured) and Blackwell (assumed); elsewhere every implementation is priced as FlashAttention-2. The
  implementation is ``training.attention_kernel``. No constant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from solvers import compute
from solvers.compute import Num, maximum, minimum, where
from solvers.specs import EffectsSpec, ModelSpec

TILE = 128.0
"""Tile width of the tensor-core GEMM kernels (cuBLAS/CUTLASS tiles are 64-256 wide; NVIDIA Matrix
Multiplication Background §2.3); dimensions are padded to multiples of it."""

PERMUTE_HBM_PASSES = 8.0
"""Permutation and un-permutation each read and write every routed token copy once in the forward pass and
again in the backward pass: 2 x 2 x 2 = 8 passes over ``tokens x top_k x h`` elements."""


def tile_fill(d: Num) -> Num:
    """Useful share of a dimension padded to whole tiles: ``d / (128 ceil(d / 128))``. Example: 6,656 -> 1.0,
    200 -> 0.78."""
    d = maximum(d, 1.0)
    return d / (TILE * -(-d // TILE))


def varying_tile_fill(d: Num) -> Num:
    """Useful share of a dimension whose size changes from call to call, padded to whole tiles:
    ``d / max(d + 64, 128)``, the mean count over its mean padded size. A count whose remainder modulo 128 is
    spread evenly pads on average by half a tile (63.5 rows; 64 on a continuous count), and never fits in less
    than one tile. Unlike ``tile_fill`` it is smooth in ``d``, and it lies below it at whole tiles (128 -> 0.67,
    where a count of exactly 128 fills its tile). Example: 1,000 -> 0.94 (``tile_fill`` gives 1,000 / 1,024 =
    0.98 at exactly 1,000, 0.89 at 1,030)."""
    d = maximum(d, 1.0)
    return d / maximum(d + 0.5 * TILE, TILE)


def saturation(d: Num, half: float) -> Num:
    """``d / (d + d_half)``: the share of the plateau rate a GEMM whose narrowest dimension is ``d`` reaches.
    Example: d = 1,024, d_half = 64 -> 0.94."""
    return d / (d + half)


def gemm_shape_factor(*, rows: Num, cols: Num, inner: Num, half: float) -> Num:
    """Achieved share of the large-GEMM rate for an ``(rows x inner) @ (inner x cols)`` GEMM (module docstring).

    Example: 8,192 tokens, N = 6,656, K = 16,384, d_half = 64: 1 x 1 x 1 x 6,656 / 6,720 = 0.990.
    """
    narrow = minimum(minimum(rows, cols), inner)
    return tile_fill(rows) * tile_fill(cols) * tile_fill(inner) * saturation(narrow, half)


def expert_shape_factor(*, rows: Num, cols: Num, inner: Num, half: float) -> Num:
    """``gemm_shape_factor`` of one local expert's GEMM, whose rows are the tokens routed to it: a count that
    changes with every microbatch and differs between experts, so each expert's slice pads on average by half a
    tile (``varying_tile_fill``), as each is its own GEMM (Transformer Engine's ``GroupedLinear``).

    Example: 4,096 rows, N = 2,048, K = 7,168, d_half = 64: 4,096 / 4,160 x 1 x 1 x 2,048 / 2,112 = 0.955.
    """
    narrow = minimum(minimum(rows, cols), inner)
    return varying_tile_fill(rows) * tile_fill(cols) * tile_fill(inner) * saturation(narrow, half)


def dense_shape_factor(
    *, rows: Num, hidden: float, ffn: float, tp: Num, mlp_matrices: int, half: float, mlp_share: float
) -> Num:
    """Time-weighted shape factor of the GEMMs outside the experts: the attention projections (``4 h^2``
    weights, ``N = h/tp``) and the dense MLP (``matrices x h x ffn`` weights, ``N = ffn/tp``, in the share
    ``mlp_share`` of the layers that have one: ``solvers.compute.dense_mlp_share``) in proportion to their
    FLOPs. A model whose every layer is MoE weighs the projections alone; shared experts, which run at this
    rate, are not weighed at their own width (``N = shared x expert_ffn / tp``; DeepSeek-V3's one 2,048-wide
    shared expert per MoE layer is the only one among the presets)."""
    attn_w = 4.0 * hidden * hidden
    mlp_w = mlp_matrices * hidden * ffn * mlp_share
    f_attn = gemm_shape_factor(rows=rows, cols=hidden / tp, inner=hidden, half=half)
    f_mlp = gemm_shape_factor(rows=rows, cols=ffn / tp, inner=hidden, half=half)
    return (attn_w + mlp_w) / (attn_w / f_attn + mlp_w / f_mlp)


def expert_load(*, skew: float, capacity_factor: float | None, pad: bool, forced: bool, ep: Num) -> Num:
    """The busiest expert rank's tokens over the mean: ``1 + skew`` under dropless routing (``skew`` fitted), 1
    when the router is bypassed for benchmarks (Megatron-Core's ``moe_router_force_load_balancing`` routes on
    random logits, balanced in expectation; priced at the mean load), capped
    at the capacity ``c`` when tokens beyond it are dropped (``min(load, c)``), and exactly ``c`` when every
    expert's input is padded to its capacity (``moe_pad_expert_input_to_capacity``: the padded rows are
    computed and sent). Megatron-Core's capacity is ``c x tokens x top_k / experts`` per expert
    (``megatron/core/transformer/moe/moe_utils.py``, ``get_capacity``).

    With one expert rank (``ep`` 1) that rank holds every expert and computes every routed copy: a skew between
    its experts moves tokens between GEMMs of one GPU, so the load is the mean's (capped or padded as above).

    Example: skew 0.5 (the fitted value, at its bound) -> 1.5; with c = 1.0 and padding -> 1.0; c = 1.1 without
    padding -> 1.1; at ep 1 -> 1.0.
    """
    load = where(ep > 1, 1.0 if forced else 1.0 + skew, 1.0)
    if capacity_factor is None:
        return load
    return capacity_factor if pad else minimum(load, capacity_factor)


def straggler_factor(*, ranks: int, jitter: float) -> float:
    """``1 + sigma sqrt(2 ln N)``: the expected slowest of N ranks. Example: N = 16,384, sigma = 0.01 -> 1.044."""
    if ranks <= 1:
        return 1.0
    return 1.0 + jitter * math.sqrt(2.0 * math.log(ranks))


class PipelineStages(NamedTuple):
    """The busiest stage's work factor and the fill ratio of one pipeline (``pipeline_stages``), and the
    busiest stage's layer-time equivalents (``busiest``). ``ends`` is a factor on FLOPs, meaningful at
    ``layer_flop_share`` 1 (the planner in FLOP layer equivalents); ``busiest_stage_s`` reads ``busiest``."""

    ends: Num
    fill: Num
    busiest: Num = 1.0


def end_layer_equivalents(*, layers: int, output_layer_share: Num, mtp_share: Num) -> tuple[Num, Num]:
    """The last stage's heads and MTP blocks in layer equivalents of FLOPs, ``(e_heads, e_blocks)``: each share
    of the FLOPs per token over the main model's layers' share, times ``L`` (shares clipped to 0.9 in all).
    Example: DeepSeek-V3 with its module at 4K: 0.0378 and 0.0175 of the FLOPs -> 2.44 and 1.13."""
    share = minimum(maximum(output_layer_share, 0.0), 0.9)
    block_share = minimum(maximum(mtp_share, 0.0), 0.9 - share)
    rest = 1.0 - share - block_share  # the main model's layers
    return share * layers / rest, block_share * layers / rest


def pipeline_stages(
    *,
    layers: int,
    pp: Num,
    output_layer_share: Num,
    output_rate_ratio: Num = 1.0,
    even_split: bool = False,
    mtp_share: Num = 0.0,
    paired_ends: Num = False,
    layer_flop_share: Num = 1.0,
    mtp_layers: int = 0,
) -> PipelineStages:
    """The ``pipeline_ends`` effect of one pipeline: ``ends``, the busiest stage's work factor, and ``fill``,
    the ratio that prices the pipeline's fill and drain, from one count of the stages' layer equivalents.

    ``ends``: the busiest stage's real work over the even spread's (``ceil(L/p)/L`` of everything), output
    layer on the last stage. ``output_layer_share`` is ``6 h V`` over the FLOPs per token;
    ``output_rate_ratio`` is the time of an output-layer FLOP over a layer FLOP (``rate / rate_bf16`` with
    ``fp8_scope`` in FP8 training, else 1), which scales the output layer's layer equivalents ``e`` before the
    planner balances them. pp = 1 -> ``(L + e x ratio) / (L + e)``, 1.0 exactly at ratio 1.

    ``mtp_share``: the multi-token-prediction blocks' FLOPs (``compute.mtp_block_flops_per_token``) over the
    FLOPs per token, on the last stage with the output layer (whose share then holds the heads of the modules
    too), at the layers' rate. Example: DeepSeek-V3 (L = 61, D = 1, s = 4,096): heads 1.11e10 and block 5.14e9
    of 2.94e11 FLOP per token -> e = 2.44 + 1.13 = 3.57 layer equivalents; p = 4, balanced: busiest
    max(16, 64.57 / 4 = 16.14, 3.57) = 16.14 against 16 x 64.57 / 61 = 16.94 -> 0.953 (without the module
    e = 1.22 and 0.980, of 3.6% fewer FLOPs per token); even split: 13 + 3.57 = 16.57 -> 0.978.

    ``paired_ends`` (the DualPipe schedule): each rank holds stage ``i`` of one copy of the model and stage
    ``p - 1 - i`` of the other, so the rank with the last stage's heads also holds the first stage, whose
    embedding costs next to nothing (DeepSeek-V3 §3.2.3: 'we deploy the shallowest layers (including the
    embedding layer) and deepest layers (including the output head) of the model on the same PP rank'): the
    heads weigh on a pair of stages, ``max(ceil(L/p), (L + e)/p, e/2)`` per stage balanced and
    ``max(ceil(L/p), (ceil(L/p) + last + e) / 2)`` with an even split. Example: DeepSeek-V3 in FP8 with its
    MTP module, p = 16, heads at a 1.75x slower BF16 rate: e = 2.44 x 1.75 + 1.13 = 5.40; 1F1B max(4, 4.15,
    5.40) = 5.40 against 4.23 -> 1.28; DualPipe max(4, 4.15, 2.70) = 4.15 -> 0.98.

    ``layer_flop_share`` and ``mtp_layers`` (``busiest_stage_s``): the share of a layer's time that is math;
    below 1 the heads weigh their math only and each MTP block its math and one layer's other work, so
    ``e_time = (e_heads x ratio + e_blocks) x share + mtp_layers x (1 - share)`` in layer times.

    ``even_split`` (``training.pipeline_split: even``): no planner; every stage holds ``ceil(L/p)`` layers and
    the last the rest, ``L - (p-1) ceil(L/p)``, with the output layer on top, so the busiest holds
    ``max(ceil(L/p), L - (p-1) ceil(L/p) + e)`` (Megatron-LM's ``L // p`` per stage before its uneven first
    and last stages, ``transformer_block.get_num_layers_to_build`` at f2e5db4). Example: Nemotron-4 340B
    (L = 96, 6 h V / flops = 0.0133: e = 1.29), p = 4: balanced max(24, 24.32, 1.29) = 24.32 against 24.32 ->
    1.0; even 24 + 1.29 = 25.29 -> 1.040.

    Example: Llama 3 8B (L = 32, 6 h V / flops = 0.07), p = 4: e = 2.4 layer equivalents; busiest
    max(8, 8.6, 2.4) = 8.6 against 8 x 34.4 / 32 = 8.6 -> 1.0; p = 16: max(2, 2.15, 2.4) = 2.4 against 2.15
    -> 1.12. The same at p = 16 with the output layer at a 1.52x slower BF16 rate: e = 3.65, busiest 3.65
    against 2.15 -> 1.70.

    ``fill``: the other stages' mean work over the busiest stage's. With stage times ``t_i`` (forward +
    backward of one microbatch) a 1F1B step takes ``sum_i t_i + (m - 1) max_i t_i``: the steady state runs at
    the busiest stage's pace, while the first forward and the last backward pass through every other stage
    once, each at its own time (the makespan of a flow line; with equal stages it is Narayanan et al. SC'21
    §2.2.1's ``(m + p - 1) t``). The bubble on top of the busiest stage's ``m t_max`` is then
    ``(p - 1) t_max x r`` with ``r = (W - B) / ((p - 1) B)``, ``W = L + e`` the whole model in layer
    equivalents and ``B`` the busiest stage's; ``r = 1`` when every stage is equal (and at p = 1). The same
    ratio scales the interleaved, zero-bubble and DualPipe bubbles, whose fill and drain cross the same
    stages. Example: the 1T model of Korthikanti et al. (L = 128, p = 64, even split, e = 0.164): B = 2.164,
    r = (128.164 - 2.164) / (63 x 2.164) = 0.924, a 1F1B bubble 7.6% shorter than ``(p - 1) t_max``.
    Nemotron-4 340B at p = 4, balanced: B = 24.32 = W / 4 -> r = 1.0.
    """
    e, e_block = end_layer_equivalents(
        layers=layers, output_layer_share=output_layer_share, mtp_share=mtp_share
    )
    # In a layer's time, which also holds its per-layer passes and kernels (``busiest_stage_s``), the heads
    # weigh their math only; each MTP block is a layer, its math at its own size and one layer's other work.
    e_time = (e * output_rate_ratio + e_block) * layer_flop_share + mtp_layers * (1.0 - layer_flop_share)
    e = e + e_block
    busiest_layers = -(-layers // pp)
    if even_split:
        last = maximum(layers - (pp - 1) * busiest_layers, 0)
        alone = maximum(busiest_layers * 1.0, last + e_time)
        paired = maximum(busiest_layers * 1.0, (busiest_layers + last + e_time) / 2.0)
        planned = where(pp > 1, where(paired_ends, paired, alone), alone)
    else:
        planned = maximum(
            maximum(busiest_layers * 1.0, (layers + e_time) / pp), where(paired_ends, e_time / 2.0, e_time)
        )
    even = busiest_layers * (layers + e) / layers
    ends = where(pp > 1, planned / even, (layers + e_time) / (layers + e))
    others = (layers + e_time - planned) / ((maximum(pp, 2) - 1.0) * planned)
    return PipelineStages(ends=ends, fill=where(pp > 1, minimum(others, 1.0), 1.0), busiest=planned)


def busiest_stage_s(
    *,
    flop_s: Num,
    layer_s: Num,
    layers: int,
    pp: Num,
    per_token: tuple[float, Num, float, float],
    output_rate_ratio: Num = 1.0,
    even_split: bool = False,
    paired_ends: Num = False,
    mtp_layers: int = 0,
) -> tuple[Num, Num]:
    """The ``pipeline_ends`` effect on the busiest stage's compute time: ``(compute_s, fill)``.

    ``per_token`` is ``(F, R, O, M)``: the model FLOPs, the recompute FLOPs, the output heads' and the MTP
    blocks' FLOPs per token (``solvers.compute``). The heads are never recomputed and the blocks as much as
    the layers, so their shares of the hardware FLOPs are ``O / (F + R)`` and ``M (F - O + R) / ((F - O)
    (F + R))`` (a layer's time holds its recompute). ``flop_s`` is the math of the even spread's stage
    (``ceil(L/p)/L`` of every hardware FLOP, the heads' included), ``layer_s`` the work that goes with each of
    its ``ceil(L/p)`` layers whatever their FLOPs (element-wise passes, MoE permutation, per-expert kernels).

    A layer then takes ``tau = tau_f + tau_o`` with ``tau_f = flop_s / (ceil(L/p) (L+e)/L)`` and ``tau_o =
    layer_s / ceil(L/p)``, while the heads take their FLOP time only and each of the ``mtp_layers`` blocks its
    FLOP time and one layer's ``tau_o``: in layer times they weigh ``(e_heads x ratio + e_blocks) tau_f / tau +
    mtp_layers tau_o / tau``, and the stage planner balances those (``pipeline_stages`` with
    ``layer_flop_share = tau_f / tau``); the busiest stage takes ``busiest x tau``. Counting the heads in FLOP
    layer equivalents and adding every layer's own work on top would price a last stage of few layers and
    heavy heads with a middle stage's per-layer work: a maximum of sums taken as a sum of maxima. p = 1:
    ``(L + e_time x tau_f / tau) tau = flop_s (L + e_time)/(L + e) + layer_s``, every layer and the heads on
    one GPU.

    Example: DeepSeek-V3 with its MTP module on 256 B200 (PP 16, FP8, heads at a 1.76x slower BF16 rate;
    megatron-bridge-2511): the per-expert kernels, the permutation and the element-wise passes are 56% of a
    layer's time, so the heads and the module's block, 5.41 FLOP layer equivalents, weigh 5.41 x 0.44 + 1 x
    0.56 = 2.9 layer times, under a 4-layer stage, instead of 5.4 over it.
    """
    model_flops, recompute_flops, head_flops, block_flops = per_token
    hardware = model_flops + recompute_flops
    output_layer_share = head_flops / hardware
    mtp_share = block_flops * (hardware - head_flops) / (model_flops - head_flops) / hardware
    e, e_block = end_layer_equivalents(
        layers=layers, output_layer_share=output_layer_share, mtp_share=mtp_share
    )
    busiest_layers = -(-layers // pp)
    tau_f = flop_s / (busiest_layers * (layers + (e + e_block)) / layers)
    tau = tau_f + layer_s / busiest_layers
    stages = pipeline_stages(
        layers=layers,
        pp=pp,
        output_layer_share=output_layer_share,
        output_rate_ratio=output_rate_ratio,
        even_split=even_split,
        mtp_share=mtp_share,
        paired_ends=paired_ends,
        layer_flop_share=tau_f / maximum(tau, 1e-300),  # an empty stage (tau 0) takes 0 s, not 0 / 0
        mtp_layers=mtp_layers,
    )
    return stages.busiest * tau, stages.fill


def permutation_bytes(
    *, tokens: Num, top_k: int, hidden: float, element_bytes: float, moe_layers: Num
) -> Num:
    """HBM bytes of the MoE token permutation on one GPU: ``8 x tokens x top_k x h x bytes x MoE layers``."""
    return PERMUTE_HBM_PASSES * tokens * top_k * hidden * element_bytes * moe_layers


def pays_padded_share(*, pad: bool, dispatcher: str) -> bool:
    """Whether a MoE run pays only the padded share of the time per local expert: every expert's input padded to
    its capacity (``training.moe_pad_to_capacity``), or a flex dispatcher (``training.moe_token_dispatcher``
    ``flex``: DeepEP, HybridEP) even dropless.

    The padded case follows from the code (``expert_kernels_s``). The flex case is empirical: at the same cells
    Megatron-Bridge's HybridEP dropless row runs as fast as its padded all-to-all row (Qwen3-30B-A3B on 8 GB200,
    MBS 4, EP 8, MXFP8: 23,766 tokens/s per GPU at 25.11 against 23,723 at 25.09), where its all-to-all dropless
    Qwen3 rows run 1.3 to 2.0 times slower than padded (25.11 against 25.09 on H100 and B200; its DeepSeek-V3 on
    256 B200 runs alike both ways). In code both dispatchers
    wait on the host once per MoE layer when dropless, so which part of the host's time HybridEP hides is not
    established. Example: ``pays_padded_share(pad=False, dispatcher="flex")`` is True."""
    return pad or dispatcher == "flex"


def expert_kernels_s(
    *,
    local_experts: Num,
    moe_layers: Num,
    microbatches: Num,
    per_expert_s: float,
    pays_share: bool,
    padded_share: float,
) -> Num:
    """Fixed time of the per-expert kernels on one GPU: ``c x s x local experts x MoE layers x microbatches``,
    ``s`` = 1, or ``padded_share`` when the run pays it (``pays_share``: every expert's input padded to its
    capacity, or a flex dispatcher; ``pays_padded_share``).

    Transformer Engine's ``GroupedLinear`` launches each local expert's GEMMs (and their casts) from the host with
    the tokens per expert as a host list. Megatron-Core's dispatchers copy those counts to the host and wait for
    them in every MoE layer unless the input is dropped and padded to capacity (``token_dispatcher.py``,
    ``MoEAlltoAllTokenDispatcher.preprocess`` and ``_maybe_dtoh_and_synchronize``; HybridEP likewise without a
    known upper bound): after that wait the GPU idles while the host launches, where a padded dispatch lets the
    host run ahead and hide its part of ``c`` behind the GPU's work. The padded share is fitted
    (``expert_kernel_padded_share``). Example: Qwen3-30B-A3B with EP 8 (16 local experts), 48 MoE layers, 64
    microbatches, c = 0.3 ms: 14.7 s; padded at a share of 0.4: 5.9 s."""
    return per_expert_s * (padded_share if pays_share else 1.0) * local_experts * moe_layers * microbatches


TENSOR_CORE_PRECISIONS: frozenset[str] = frozenset({"bf16", "fp16", "fp8"})
"""The precisions whose GEMMs run on tensor cores, the kernels the matrix-shape curve was fitted to."""

TFLOPS = 1e12
"""FLOP/s in a TFLOP/s (the catalog's peaks are in TFLOP/s)."""


class GemmRates(NamedTuple):
    """A run's peaks and large-GEMM rates (FLOP/s) and the matrix-shape curve's ``d_half`` of its GEMMs and of
    its attention core (``gemm_rates``)."""

    peak: float
    peak_bf16: float
    rate: float
    rate_bf16: float
    half: float
    core_half: float


def gemm_rates(
    *,
    peak_tflops: Mapping[str, float],
    precision: str,
    efficiency: float,
    default_factor: float,
    fp8_default_factor: float,
    fx: EffectsSpec,
    bf16_islands: bool,
) -> GemmRates:
    """The peak at ``precision`` (BF16's where the accelerator lists none), the large-GEMM rate ``peak x
    efficiency x factor`` (in FP8 training the fitted ``fp8_rate_factor``, else ``fp8_default_factor``; in other
    precisions ``default_factor``), the BF16 rate of the BF16 islands of FP8 training (``fp8_scope``:
    ``bf16_rate``; else the rate), and ``d_half`` at the rate of the GEMMs and of the attention core
    (``shape_by_precision``: ``precision_half_dim`` against the FP8 rate, on tensor-core precisions; the core at
    the BF16 rate in FP8 training). Example: H100, FP8, efficiency 0.68, factor 0.87, islands: peaks 1,979 and
    989 TFLOP/s, rates 1,171 and 673 TFLOP/s, d_half 99.8 and 99.8 x 673 / 1,171 = 57.4."""
    peak = peak_tflops.get(precision, peak_tflops.get("bf16", 1.0)) * TFLOPS
    peak_bf16 = peak_tflops.get("bf16", peak_tflops.get(precision, 1.0)) * TFLOPS
    fp8_factor = fx.fp8_rate_factor if fx.fp8_rate_factor > 0.0 else fp8_default_factor
    factor = fp8_factor if precision == "fp8" else default_factor
    rate = peak * efficiency * factor
    rate_bf16 = (
        bf16_rate(rate=rate, precision_factor=factor, peak=peak, peak_bf16=peak_bf16)
        if bf16_islands
        else rate
    )
    rate_fp8 = 0.0
    if fx.shape_by_precision and precision in TENSOR_CORE_PRECISIONS:
        rate_fp8 = peak_tflops.get("fp8", 0.0) * TFLOPS * efficiency * fp8_factor
    half = precision_half_dim(half=fx.shape_half_dim, rate=rate, rate_fp8=rate_fp8)
    core_half = precision_half_dim(half=fx.shape_half_dim, rate=rate_bf16, rate_fp8=rate_fp8)
    return GemmRates(peak, peak_bf16, rate, rate_bf16, half, core_half)


def bf16_rate(*, rate: Num, precision_factor: float, peak: float, peak_bf16: float) -> Num:
    """The large-GEMM rate at BF16 of a run whose ``rate`` is ``peak x efficiency x precision_factor``:
    ``rate x peak_bf16 / (peak x precision_factor)``. Example: H100 FP8, efficiency 0.64, factor 0.76:
    1,978.9 x 0.64 x 0.76 = 963 TFLOP/s -> 989.4 x 0.64 = 633 TFLOP/s."""
    return rate * peak_bf16 / (peak * precision_factor)


def output_layer_bf16_extra_s(*, output_flops: Num, dense_rate: Num, rate: Num, rate_bf16: Num) -> Num:
    """Extra time of the output layer's FLOPs at the BF16 rate instead of the FP8 one, at the same shape
    factor (``dense_rate / rate``): ``flops / dense_rate x (rate / rate_bf16 - 1)``. Used only with
    ``pipeline_ends`` off (the output layer then spread evenly over the stages); with it on the slower output
    layer enters ``pipeline_stages``' ``ends`` through ``output_rate_ratio``. Example: 1 TFLOP at a dense FP8 rate
    of 900 TFLOP/s, rates 963 and 633 TFLOP/s -> 1.11 ms x 0.52 = 0.58 ms."""
    return output_flops / dense_rate * (rate / rate_bf16 - 1.0)


FP32_BYTES = 4.0
"""Bytes of an FP32 element: torchtitan's RMSNorm and rotary embedding compute in FP32 (``x.float()``)."""

UNFUSED_BACKWARD_PASSES = 2.0
"""The backward pass of an elementwise op moves about twice its forward's bytes (module docstring)."""


def unfused_elementwise_bytes_per_token_layer(
    *,
    hidden: float,
    q_width: float,
    kv_width: float,
    ffn_width: Num,
    gated: bool,
    tp: Num,
    sequence_parallel: Num,
    element_bytes: float,
    latent_width: float = 0.0,
    shared_rope_width: float = 0.0,
) -> Num:
    """Extra HBM bytes per token and layer of the eager forward pass over fused kernels (module docstring).

    ``norm x (2 h + latents) / (tp if SP) + rope x ((q + kv) / tp + shared) + [gated] 2e x ffn_width``, with
    ``norm = 2 c + 20 + 2e - 2e``, ``rope = 2 c + 8 - 2e`` and ``c = e + 4`` the cost of one cast to and from
    FP32 (0 in FP32 training). ``ffn_width`` is already per GPU (over ``tp`` or ``expert_tp``). ``latents``: the
    widths of the normed latents of multi-head latent attention, whose norms run on the sequence-parallel shard
    as the layer's two do; ``shared``: a rotary width every TP rank computes whole (MLA's key part, one per token).
    Example: Llama 3 8B (h = 4,096, q 4,096, kv 1,024, ffn 14,336), BF16, tp 1: 2 x 32 x 4,096 +
    16 x 5,120 + 4 x 14,336 = 401,408 bytes.
    """
    e = element_bytes
    cast = e + FP32_BYTES if e < FP32_BYTES else 0.0
    norm_extra = 2.0 * cast + 20.0  # eager 2c + 20 + 2e against 2e fused
    rope_extra = 2.0 * cast + 8.0 - 2.0 * e
    norm_width = where(sequence_parallel, (2.0 * hidden + latent_width) / tp, 2.0 * hidden + latent_width)
    total = norm_extra * norm_width + rope_extra * ((q_width + kv_width) / tp + shared_rope_width)
    if gated:
        total = total + 2.0 * e * ffn_width
    return total


def model_unfused_bytes_per_token_layer(
    *, model: ModelSpec, tp: Num, expert_split: Num, sequence_parallel: Num, element_bytes: float
) -> Num:
    """``unfused_elementwise_bytes_per_token_layer`` of ``model``, MoE layers weighted by ``moe_layers / layers``
    (their SwiGLU on ``(top_k + shared) x expert_ffn / expert_split`` per token: ``expert_tp``, or ``tp`` when
    the expert-TP group gathers ``etp/tp`` of the tokens, ``expert_tp_exchange``). Multi-head latent attention
    normalises its query and key-value latents (``q_layernorm``, ``kv_layernorm`` on ``[s/tp, b, r]`` with sequence
    parallelism) and rotates only the rotary parts: each head's query part ``d_rope`` over ``tp`` and the one key
    part ``d_rope`` that every TP rank gathers whole (Megatron-LM ``megatron/core/transformer/
    multi_latent_attention.py`` at cbc89b3, ``get_query_key_value_tensors``). Examples: Llama 3 8B, BF16, tp 1:
    401,408 bytes; DeepSeek-V3's attention at tp 1, BF16: norms 32 x (2 x 7,168 + 1,536 + 512), rotary 16 x
    (128 x 64 + 64)."""
    moe = model.moe
    ffn_width = model.ffn_hidden / tp
    if moe is not None:
        share = moe.moe_layers / model.layers
        expert_width = (moe.top_k + moe.shared_experts) * moe.expert_ffn_hidden / expert_split
        ffn_width = (1.0 - share) * ffn_width + share * expert_width
    mla = model.mla
    if mla is not None:
        q_width, kv_width = float(model.heads * mla.qk_rope_head_dim), 0.0
        latent_width, shared_rope = float(mla.q_lora_rank + mla.kv_lora_rank), float(mla.qk_rope_head_dim)
    else:
        head_dim = compute.head_dim(model=model)
        q_width, kv_width = model.heads * head_dim, model.kv_heads * head_dim
        latent_width, shared_rope = 0.0, 0.0
    return unfused_elementwise_bytes_per_token_layer(
        hidden=float(model.hidden),
        q_width=q_width,
        kv_width=kv_width,
        ffn_width=ffn_width,
        gated=model.gated_mlp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        element_bytes=element_bytes,
        latent_width=latent_width,
        shared_rope_width=shared_rope,
    )


def unfused_elementwise_time_s(*, bytes_per_pass: Num, forward_rerun: Num, hbm_bytes_s: float) -> Num:
    """``(1 + 2 + [forward rerun]) x forward extra bytes / HBM bandwidth``; ``forward_rerun``: a recompute policy
    runs the forward's element-wise ops again (full, per_op). Example: Llama 3 8B, 16,384 tokens x 32 layers x
    401,408 bytes, selective recompute, 2.4e12 B/s: 3 x 210.5e9 / 2.4e12 = 0.263 s."""
    passes = 1.0 + UNFUSED_BACKWARD_PASSES + where(forward_rerun, 1.0, 0.0)
    return passes * bytes_per_pass / hbm_bytes_s


FP8_CAST_BYTES = 4.0
"""HBM bytes of quantising one BF16 element for an FP8 GEMM: read 2 bytes, write a row-wise FP8 copy for the
GEMM of this pass and a column-wise (transposed) one for the weight-gradient GEMM, 1 byte each (Transformer
Engine's fused cast-transpose)."""


def fp8_cast_elements_per_token_layer(
    *,
    model: ModelSpec,
    tp: Num,
    expert_tp: Num,
    sequence_parallel: Num,
    expert_gather: bool,
    fp8_dispatch: bool = False,
) -> tuple[Num, Num]:
    """(forward, backward) elements per token and layer on one GPU that FP8 training quantises (``fp8_casts``).

    Forward: the inputs of the linear layers that no norm writes in FP8: the output projection's (``q/tp``,
    the attention output), the dense MLP's second GEMM (``ffn/tp``); in a MoE layer each routed copy's first
    and second expert GEMM (``h + expert_ffn/etp``, the router's norm output is BF16) and the shared experts'
    (``h_sp + shared x expert_ffn/tp``). Backward: every linear layer's output gradient: QKV ``(q + 2 kv)/tp``,
    the projection ``h_sp``, the MLP's first GEMM ``(2 if gated else 1) x ffn/tp`` and its second ``h_sp``;
    per routed copy ``(2|1) x expert_ffn/etp + h``. ``h_sp = h/tp`` with sequence parallelism, else ``h``.
    A GPU holds ``top_k`` routed copies per token, ``top_k x etp/tp`` when the expert-TP group gathers them
    (``expert_tp_exchange``); dispatched in FP8 (``training.moe_fp8_dispatch``) a token's ``h`` is quantised
    once before the dispatch and its gradient once before the combine's backward (DeepSeek-V3 §3.3.2): ``h/tp``
    each instead of ``copies x h``. Multi-head latent attention (Megatron-Core's MLA: the down-projections
    are plain linear layers after the input norm, the up-projections fused with their norms) casts the
    down-projections' inputs ``2h`` and the output projection's ``heads x d_v / tp`` forward, and the gradients
    of the query and key-value latents ``r_q + r_kv + d_rope``, of the up-projections ``heads x (d_nope + d_rope)
    / tp`` and ``heads x (d_nope + d_v) / tp`` and of the projection ``h_sp`` backward. MoE layers weighted by
    ``moe_layers / layers``.

    Example: Llama 3 8B (h 4,096, q 4,096, kv 1,024, ffn 14,336, gated), tp 1: forward 4,096 + 14,336 = 18,432;
    backward 6,144 + 4,096 + 28,672 + 4,096 = 43,008. DeepSeek-V3's attention at tp 1: forward 2 x 7,168 +
    16,384 = 30,720; backward 1,536 + 576 + 24,576 + 32,768 + 7,168 = 66,624.
    """
    h = float(model.hidden)
    h_sp = where(sequence_parallel, h / tp, h)
    first = 2.0 if model.gated_mlp else 1.0
    mla = model.mla
    if mla is None:
        head_dim = compute.head_dim(model=model)
        q = model.heads * head_dim / tp
        kv = model.kv_heads * head_dim / tp
        attention_fwd, attention_bwd = q, q + 2.0 * kv + h_sp
    else:
        qk_width, v_width = compute.attention_widths(model=model)
        latents = mla.q_lora_rank + mla.kv_lora_rank + mla.qk_rope_head_dim
        kv_up = model.heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        attention_fwd = 2.0 * h + v_width / tp
        attention_bwd = latents + (qk_width + kv_up) / tp + h_sp
    mlp_fwd = model.ffn_hidden / tp
    mlp_bwd = first * model.ffn_hidden / tp + h_sp
    moe = model.moe
    if moe is not None:
        share = moe.moe_layers / model.layers
        copies = moe.top_k * (expert_tp / tp if expert_gather else 1.0)
        expert = moe.expert_ffn_hidden / expert_tp
        shared = moe.shared_experts * moe.expert_ffn_hidden / tp
        token = h / tp if fp8_dispatch else copies * h  # the routed copies' hidden vectors (or the token's)
        moe_fwd = token + copies * expert
        moe_bwd = copies * first * expert + token
        if moe.shared_experts:
            moe_fwd = moe_fwd + h_sp + shared
            moe_bwd = moe_bwd + first * shared + h_sp
        mlp_fwd = (1.0 - share) * mlp_fwd + share * moe_fwd
        mlp_bwd = (1.0 - share) * mlp_bwd + share * moe_bwd
    return attention_fwd + mlp_fwd, attention_bwd + mlp_bwd


def fp8_cast_time_s(
    *, elements: tuple[Num, Num], token_layers: Num, forward_rerun: Num, hbm_bytes_s: float
) -> Num:
    """``4 x ((1 + [forward rerun]) x forward + backward) x token-layers / HBM bandwidth`` (full and per_op
    recompute cast the forward's inputs again): the casts of
    ``fp8_cast_elements_per_token_layer`` (``elements``, forward and backward) over the busiest stage's tokens
    times layers. Example: Llama 3 8B, tp 1, 32 layers x 16,384 tokens, selective recompute, 3.35e12 B/s:
    4 x 61,440 x 524,288 / 3.35e12 = 38.5 ms."""
    forward, backward = elements
    passes = (1.0 + where(forward_rerun, 1.0, 0.0)) * forward + backward
    return FP8_CAST_BYTES * passes * token_layers / hbm_bytes_s


def precision_half_dim(*, half: float, rate: float, rate_fp8: float) -> float:
    """The matrix-shape curve's ``d_half`` for GEMMs at the large-GEMM rate ``rate`` on an accelerator whose FP8
    rate is ``rate_fp8``: ``d_half x rate / rate_fp8`` (``shape_by_precision``). ``d_half`` is fitted to FP8
    kernels (``solvers.gemm_shape``); a GEMM's fixed costs (launch, prologue and epilogue, the last wave) take
    the same time at any precision, so at a lower rate the same share of the plateau needs a proportionally
    smaller dimension. Without an FP8 rate (no FP8 peak, or FP32, whose GEMMs are not tensor-core kernels),
    ``d_half``. Example: 99.8 on H100 at efficiency 0.67 and FP8 factor 0.90: BF16 989 x 0.67 against FP8
    1,979 x 0.67 x 0.90 -> 99.8 x 0.555 = 55.4."""
    if rate_fp8 <= 0.0:
        return half
    return half * (rate / rate_fp8)
