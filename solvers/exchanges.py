"""The five exchanges of a training step, each in bytes per GPU and seconds.

Every function returns an ``Exchange``: ``bytes_per_gpu`` is the mean over GPUs of the bytes each sends per
step in the ring algorithm (the seeds' convention, independent of placement); ``time_s`` is the busiest
GPU's time for the exchange alone, on the links its group crosses (``solvers.collectives``); ``nic_bytes``
is what the busiest GPU's NIC sends per step; ``burst_bytes`` the largest single transfer on that NIC.

Notation: ``b`` sequences per microbatch, ``s`` sequence length, ``h`` hidden, ``m`` microbatches per
replica per step, ``L_s`` layers on the busiest stage, ``L/pp`` on the mean stage, ``e`` bytes per activation
element (2 in BF16/FP16/FP8 training, 4 in FP32). ``A = b (s/cp) h e`` is one activation tensor of a
microbatch.

* **TP** (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2): per layer two all-reduces of ``A`` in the
  forward pass and two in the backward (sequence parallelism replaces each by a reduce-scatter and an
  all-gather of the same total volume); full recompute adds the forward pair again, and ``per_op`` recompute
  (torchtitan's op-level selective checkpointing) the forward's all-gathers, half an all-reduce, or its
  all-reduces without sequence parallelism: it saves the reduce-scatters' outputs, not the gathers'. With the
  ``fp8_tp_gather`` effect, FP8 training with sequence parallelism gathers in FP8, half their bytes, the
  attention's and a dense MLP's input in every forward (first and recomputed) and their output gradient in the
  backward; the reduce-scatters stay BF16. MoE layers run their MLP
  collectives over ``expert_tp``: an all-reduce of ``A``, or (effect ``expert_tp_exchange``) none but the
  attention TP's pair for shared experts, the routed copies' gather being the dispatcher's (EP below). Per GPU per
  step: ``m L 4 x 2(t-1)/t x A``. Example (seed 004 §5.3, HPN Table 3): GPT-3 175B, b = 1, s = 2,048, TP 8:
  4 x 1.75 x 50.3 MB = 352 MB per layer per microbatch.
* **CP** (Llama 3 §3.3.2, all-gather based context parallelism): per layer an all-gather of K and V in the
  forward pass and a reduce-scatter of their gradients in the backward, each ``(cp-1)/cp`` of
  ``b s 2 h (kv/a) e / min(tp, kv)`` (``b s 2 kv d e / min(tp, kv)`` with a stated head width ``d``); full
  recompute adds one all-gather.
* **PP** (Narayanan et al. SC'21 §4.1 scatter/gather): each stage boundary carries ``A / t`` forward and the
  same gradient backward per microbatch, ``v`` times with interleaving. Mean per GPU
  ``2 m A/t (p v - 1)/p``. Example (seed 004 §5.3, HPN): 2,048 x 12,288 x 2 / 8 = 6.3 MB per message.
* **DP** (ZeRO, Rajbhandari et al. 2020; FSDP; seed 004 §5.3) over ``dp * cp`` for dense parameters and the
  expert-data-parallel group for routed experts, on ``P' = P / (t p)`` parameters per GPU: ZeRO-0 an
  all-reduce ``2(n-1)/n P' g``; ZeRO-1/2 a reduce-scatter of gradients plus an all-gather of weights,
  ``(n-1)/n P' (g + w)``; ZeRO-3 one more all-gather when weights are resharded after the forward pass,
  ``(n-1)/n P' (g + 2w)``. ``g`` = 4 bytes with an FP32 gradient reduce-scatter (Llama 3 §3.3.2), else the
  weight bytes ``w``. Example (seed 004 §5.3): Llama 3 405B at TP8/PP16/DP128: 12.6 GB in BF16, 19 GB with
  the FP32 reduce-scatter.
* **EP** (Lepikhin et al. 2021 GShard; DeepSeek-V3 §3.2.2): per MoE layer a dispatch and a combine
  all-to-all forward and again backward, each of ``b (s/cp)/t x top_k x h`` elements per GPU, ``(ep-1)/ep``
  of which leave the GPU, in the activations' dtype (Megatron-Core's dispatchers send BF16), or dispatched in
  FP8 (1 byte) and combined in BF16 with ``training.moe_fp8_dispatch`` (DeepSeek-V3 §3.3.2). With
  ``training.moe_dispatch: per_node`` (DeepSeek-V3 §3.2.2, DeepEP) one copy per distinct target
  node crosses the NIC and is forwarded over the scale-up link; node-limited routing
  (``model.moe.max_nodes_per_token``, DeepSeek-V3 §2.1.2) caps those nodes (``collectives.node_copies``). With
  expert TP (effect ``expert_tp_exchange``) the dispatcher also all-gathers the copies each GPU receives over the
  expert-TP group and reduce-scatters the outputs back, ``(etp-1)/etp`` of ``etp`` times the per-GPU volume.
"""

from __future__ import annotations

from typing import NamedTuple

from solvers import collectives
from solvers.catalog.calibration import (
    EAGER_OP_OVERHEAD_US,
    NCCL_LL_MULTINODE_INTRA_FACTOR,
    NCCL_RING_BASE_LATENCY_US,
    NCCL_RING_INTER_LATENCY_US,
    NCCL_RING_INTRA_LATENCY_US,
    NCCL_RING_PROTOCOL_BW_FACTOR,
)
from solvers.compute import Num, maximum, minimum, where
from solvers.specs import ModelSpec


class Exchange(NamedTuple):
    """One dimension's exchange per step: mean bytes per GPU, busiest time, NIC bytes and largest burst.
    The expert-parallel exchange also gives the parts of ``time_s`` a shared expert can run beside
    (``shared_expert_hidden_s``): ``dispatch_s``, the dispatch all-to-alls with the expert-TP all-gathers after
    them, and ``combine_s``, the combine all-to-alls; the rest is the expert-TP reduce-scatters."""

    bytes_per_gpu: Num
    time_s: Num
    nic_bytes: Num
    burst_bytes: Num
    dispatch_s: Num = 0.0
    combine_s: Num = 0.0


def activation_element_bytes(*, precision: str) -> float:
    """Bytes per activation element on the wire: 4 in FP32 training, else 2 (FP8 GEMM inputs are cast
    in place; activations between layers stay in BF16, DeepSeek-V3 §3.3)."""
    return 4.0 if precision == "fp32" else 2.0


def tp_exchange(
    *,
    tp: Num,
    expert_tp: Num,
    activation_bytes: Num,
    microbatches: Num,
    layers_busiest: Num,
    layers_mean: Num,
    moe_share: float,
    full_recompute: Num,
    links: collectives.Links,
    expert_gather: bool = False,
    shared_experts: bool = False,
    per_op_recompute: Num = False,
    sequence_parallel: Num = False,
    fp8_gather: Num = False,
) -> Exchange:
    """Tensor-parallel all-reduces (module docstring). Example: HPN GPT-3 -> 352 MB per layer-microbatch.

    ``expert_gather`` (the ``expert_tp_exchange`` effect): a MoE layer's MLP sends nothing over TP but the attention
    TP's pair for its shared experts, if it has any (a dense TP MLP); the routed copies' gather over ``expert_tp``
    belongs to the token dispatcher (``ep_exchange``). Without it (the seeds' convention) the MLP of a MoE layer
    all-reduces ``A`` over ``expert_tp``. Example: Qwen2-57B-A14B (a shared expert) at TP 2: A per MoE layer and
    pass either way; Mixtral (none) at TP 2, expert TP 2: 0 against A."""
    per_half = where(full_recompute, 3.0, 2.0)  # collectives per layer per half (attention, MLP)
    # per_op re-runs what its policy does not save: the all-gathers (half an all-reduce's time and bytes)
    per_half = per_half + where(per_op_recompute, where(sequence_parallel, 0.5, 1.0), 0.0)
    # fp8_tp_gather: each all-gather (half an all-reduce) moves FP8, half its bytes, a quarter of an all-reduce
    # saved per gather: the forward's of the block's input, the backward's of the output gradient, a recomputed
    # forward's
    saved = where(
        fp8_gather & sequence_parallel, 0.25 * (2.0 + where(full_recompute | per_op_recompute, 1.0, 0.0)), 0.0
    )
    fp8_halves = 2.0 - moe_share  # the attention half and the dense share of the MLP half
    stride = 1
    attn_t, attn_nic = collectives.placed_all_reduce_s(
        group_size=tp, stride=stride, message_bytes=activation_bytes, links=links
    )
    attn_b = collectives.all_reduce_bytes(group_size=tp, message_bytes=activation_bytes)
    mlp_group_t: Num
    mlp_group_nic: Num
    mlp_group_b: Num
    if expert_gather:
        mlp_group_t, mlp_group_nic, mlp_group_b = (
            (attn_t, attn_nic, attn_b) if shared_experts else (0.0, 0.0, 0.0)
        )
    elif expert_tp is tp:  # the same group (one layout whose expert TP is its TP): the same collective
        mlp_group_t, mlp_group_nic, mlp_group_b = attn_t, attn_nic, attn_b
    else:
        mlp_group_t, mlp_group_nic = collectives.placed_all_reduce_s(
            group_size=expert_tp, stride=stride, message_bytes=activation_bytes, links=links
        )
        mlp_group_b = collectives.all_reduce_bytes(group_size=expert_tp, message_bytes=activation_bytes)
    mlp_t = (1.0 - moe_share) * attn_t + moe_share * mlp_group_t
    mlp_nic = (1.0 - moe_share) * attn_nic + moe_share * mlp_group_nic
    mlp_b = (1.0 - moe_share) * attn_b + moe_share * mlp_group_b
    per_layer_b = per_half * (attn_b + mlp_b) - saved * fp8_halves * attn_b
    count = microbatches * per_half
    return Exchange(
        bytes_per_gpu=microbatches * layers_mean * per_layer_b,
        time_s=count * layers_busiest * (attn_t + mlp_t)
        - microbatches * saved * layers_busiest * fp8_halves * attn_t,
        nic_bytes=count * layers_busiest * (attn_nic + mlp_nic)
        - microbatches * saved * layers_busiest * fp8_halves * attn_nic,
        burst_bytes=maximum(attn_nic, mlp_nic),
    )


def cp_exchange(
    *,
    cp: Num,
    tp: Num,
    kv_bytes: Num,
    microbatches: Num,
    layers_busiest: Num,
    layers_mean: Num,
    full_recompute: Num,
    links: collectives.Links,
) -> Exchange:
    """Context-parallel K/V exchange per layer: gathered (or passed round the ring) in the forward, again in
    the backward, and the K/V gradients reduce-scattered (sent back round the ring); with full recompute the
    recomputed forward gathers them once more.

    Neither implementation keeps the gathered K/V for the backward: Transformer Engine's all-gather CP
    (``AttnFuncWithCPAndKVAllGather``) gathers K and V again in its backward before reduce-scattering dK/dV,
    and ring attention (Megatron-Core's ``p2p``, ring-flash-attention) sends K/V round the ring again beside
    the dK/dV ring. Example: Llama 3 405B at s = 131,072, CP 16, TP 8, b = 1: K and V are 131,072 x 2 x 1,024
    x 2 / 8 = 67 MB per layer; 15/16 of it three times -> 189 MB per layer per microbatch.
    """
    count = where(full_recompute, 4.0, 3.0)
    t, nic = collectives.placed_reduce_scatter_s(
        group_size=cp, stride=tp, message_bytes=kv_bytes, links=links
    )
    per = collectives.reduce_scatter_bytes(group_size=cp, message_bytes=kv_bytes)
    return Exchange(
        bytes_per_gpu=microbatches * layers_mean * count * per,
        time_s=microbatches * layers_busiest * count * t,
        nic_bytes=microbatches * layers_busiest * count * nic,
        burst_bytes=nic,
    )


def pp_exchange(
    *,
    pp: Num,
    message_bytes: Num,
    microbatches: Num,
    sends_per_microbatch: Num,
    crosses_nodes: Num,
    links: collectives.Links,
) -> Exchange:
    """Pipeline activations forward and gradients backward across stage boundaries.

    Example (seed 004 §5.3): GPT-3 175B, b = 1, s = 2,048, TP 8: 6.3 MB per message; PP 8, m = 16 -> mean
    2 x 16 x 6.3 MB x 7/8 = 176 MB per GPU per step.
    """
    p = 1.0 * pp
    one = collectives.placed_point_to_point_s(
        message_bytes=message_bytes, crosses_nodes=crosses_nodes, links=links
    )
    sends = 2.0 * microbatches * sends_per_microbatch
    active = p > 1.0
    mean_boundaries = (p * sends_per_microbatch - 1.0) / (p * sends_per_microbatch)
    nic = where(crosses_nodes & active, sends * message_bytes, 0.0)
    return Exchange(
        bytes_per_gpu=where(active, sends * message_bytes * mean_boundaries, 0.0),
        time_s=where(active, sends * one, 0.0),
        nic_bytes=nic,
        burst_bytes=where(crosses_nodes & active, message_bytes, 0.0),
    )


def dp_shares(
    *, zero_stage: Num, reshard_after_forward: Num, grad_bytes: Num, weight_bytes: float
) -> tuple[Num, Num]:
    """(reduce-scatter bytes, all-gather bytes) per parameter of one step's data-parallel exchange.

    ZeRO-0 all-reduces the gradients: counted as one reduce-scatter and one all-gather of ``g`` bytes.
    ZeRO-1/2: reduce-scatter ``g``, all-gather ``w``. ZeRO-3: reduce-scatter ``g``, all-gather ``w`` once, or
    twice when resharded after the forward pass (CONTRACT.md v1). Example: Llama 3 (ZeRO-3, no reshard,
    FP32 reduce-scatter): (4, 2) -> 3 shares of 2 bytes.
    """
    gather = where(
        zero_stage == 0,
        grad_bytes,
        where((zero_stage >= 3) & reshard_after_forward, 2.0 * weight_bytes, weight_bytes),
    )
    return grad_bytes, gather


def fp8_gather_bytes(*, weight_bytes: float, model: ModelSpec, dense_params: float, pp: Num) -> Num:
    """Gather bytes a dense parameter with ``training.fp8_param_gather``: ``1 + ((w - 1) x bf16 + copy) / dense``.

    Megatron-Core's ``--fp8-param-gather`` gathers in FP8 (1 byte, ``uint8`` buffers of per-tensor scaled FP8:
    ``megatron/core/distributed/param_and_grad_buffer.py``) the parameters Transformer Engine builds under
    ``fp8_model_init``: its linear layers (``TELinear``, ``TELayerNormColumnParallelLinear``, and
    ``TEGroupedLinear`` for the routed experts, which therefore gather 1 byte a parameter). The input embedding
    and the output layer (Megatron's ``VocabParallelEmbedding`` and ``ColumnParallelLinear``) stay BF16, ``w``
    bytes: ``bf16 = 2 V h`` parameters, ``copy = 0``. Where one matrix serves both (``model.tied_embeddings``: the
    parameter count holds it once) it is ``bf16 = V h`` on one pipeline stage; over ``pp > 1`` stages the last
    keeps its own copy of the first stage's embedding (Megatron-Core ``LanguageModule.
    setup_embeddings_and_output_layer``: "we need to maintain duplicated embedding weights in post processing
    stage"), so ``bf16 = 2 V h`` of which ``copy = V h`` lie outside the count: the gather moves ``(dense - V h)``
    FP8 bytes and ``2 V h w`` BF16 ones. ``bf16`` at most the dense parameters. Norms and routers are left in the
    FP8 share (under 0.1% of a layer). Example: Llama 3.1 8B (V 128,256, h 4,096, 8.03e9 parameters): 1 + 1.05e9 /
    8.03e9 = 1.131 bytes; the same shape tied (7.50e9 parameters) on one stage 1 + 5.25e8 / 7.50e9 = 1.070 bytes,
    over two stages 1 + (1.05e9 + 5.25e8) / 7.50e9 = 1.210.
    """
    matrix = 1.0 * model.vocab * model.hidden
    # tied: one matrix on a single stage, two over several (the last stage's copy lies outside the count)
    copy = where(model.tied_embeddings & (pp > 1), matrix, 0.0)
    bf16 = minimum((1.0 if model.tied_embeddings else 2.0) * matrix + copy, dense_params)
    return 1.0 + ((weight_bytes - 1.0) * bf16 + copy) / max(dense_params, 1.0)


def recompute_regather_bytes_per_param(
    *,
    zero_stage: Num,
    reshard_after_forward: Num,
    full_recompute: Num,
    weight_bytes: float,
    block_params: Num,
    reuse_distance: float,
) -> Num:
    """All-gather bytes per parameter that full recomputation adds to a ZeRO-3 step (effect
    ``zero3_recompute_regather``, ``docs/CONVENTIONS.md`` "Step effects").

    With the parameters resharded after the forward pass, the recomputed forward of each checkpointed block
    runs the forward hooks again, which gather the weights once more. Whether they are released again before
    the block's backward is decided by DeepSpeed's ``PartitionedParameterCoordinator.__params_to_release``
    (``deepspeed/runtime/zero/partitioned_param_coordinator.py``): it walks the traced module order from the
    current step and keeps every parameter that reappears within ``stage3_max_reuse_distance`` elements
    (default 1e9, ``solvers.catalog.calibration.ZERO3_MAX_REUSE_DISTANCE``). Between the first forward and
    the recomputation lies the rest of the model, so that release happens and the recomputed forward gathers
    again; between the recomputed forward and the backward of the same block lie only that block's own
    parameters, so the backward gathers a third time only when one block's parameters on the GPU
    (``block_params``: one transformer layer, tensor- and expert-parallel split, not ZeRO-sharded; the
    coordinator counts ``ds_numel``, the full tensor) reach the reuse distance. Without the extra gather the
    count stays at two, as ``dp_shares`` has it. FSDP implementations that unshard in the pre-backward hook
    and recompute inside that window (torchtitan's FSDP2, FairScale's FSDP) turn the switch off.
    Example: ZeRO-3, resharded, full recompute, FP16 weights, GPT-3 175B at tp 1 (1.8e9 parameters per
    layer >= 1e9) -> 2.0 bytes (the gathers go from 2 x 2 to 3 x 2 bytes); Llama 3 70B at tp 1 (0.86e9 per
    layer) -> 0.0; ZeRO-1 or selective recompute -> 0.0.
    """
    return where(
        (zero_stage >= 3) & reshard_after_forward & full_recompute & (block_params >= reuse_distance),
        1.0 * weight_bytes,
        0.0,
    )


def layer_tensor_elements(
    *, hidden: float, ffn: float, q_share: float, kv_share: float, gated_mlp: bool, tp: Num
) -> list[Num]:
    """Elements of each parameter tensor of one transformer layer on one tensor-parallel rank, in the
    Megatron-LM layout ZeRO-3 partitions tensor by tensor (``ParallelTransformerLayer``: fused QKV, attention
    output, ``dense_h_to_4h``, ``dense_4h_to_h``). A GPT-style layer (MLP not gated) has a bias on each of the
    four linear layers and two LayerNorms with weight and bias: 12 tensors. A gated (Llama-style) layer has no
    biases, the gate and up projections fused into one matrix and two RMSNorm weights: 6 tensors. Matrices
    and their biases are split over ``tp``; norms are replicated. The query heads span ``q_share x hidden``
    and the key and value heads ``kv_share x hidden`` each (``solvers.compute.query_width_share``,
    ``kv_width_share``). Example: GPT-3 175B at tp 1 (shares 1 and 1): 453M (QKV), 36,864, 151M, 12,288, 604M,
    49,152, 604M, 12,288 and four LayerNorm vectors of 12,288.
    """
    qkv = hidden * (q_share + 2.0 * kv_share)
    fc1 = ffn * (2.0 if gated_mlp else 1.0)
    matrices = [qkv * hidden / tp, q_share * hidden * hidden / tp, fc1 * hidden / tp, ffn * hidden / tp]
    if gated_mlp:
        return [*matrices, 1.0 * hidden, 1.0 * hidden]
    biases = [qkv / tp, 1.0 * hidden, fc1 / tp, 1.0 * hidden]
    return [*matrices, *biases, *([1.0 * hidden] * 4)]


def nccl_ring_latency_s(*, ranks: Num, nodes: Num, protocol: int) -> Num:
    """NCCL's modelled latency of one ring all-gather or reduce-scatter over ``ranks`` ranks on ``nodes``
    nodes (NCCL 2.9.6 ``src/graph/tuning.cc``, ``ncclTopoTuneModel``; ``solvers.catalog.calibration``):
    ``baseLat + (N - 1 - (n - 1)) intraLat + (n - 1) interLat`` with the protocol's constants, the LL
    intra-node step x 1.8 when the ring spans nodes. NCCL has no tree for these two collectives, so the
    latency grows with the group. Example: 1,536 ranks on 192 nodes: LL 3.6 + 1,344 x 0.846 + 191 x 2.7
    = 1,657 us; Simple 8.4 + 1,344 x 3.4 + 191 x 9.6 = 6,411 us.
    """
    base = NCCL_RING_BASE_LATENCY_US[0][protocol]
    intra = NCCL_RING_INTRA_LATENCY_US[0][protocol]
    inter = NCCL_RING_INTER_LATENCY_US[0][protocol]
    n = 1.0 * maximum(ranks, 1)
    spans = nodes > 1
    if protocol == 0:
        intra = where(spans, intra * NCCL_LL_MULTINODE_INTRA_FACTOR[0], intra)
    inter_steps = where(spans, nodes - 1.0, 0.0)
    return where(n > 1, (base + (n - 1.0 - inter_steps) * intra + inter_steps * inter) * 1e-6, 0.0)


def per_tensor_collectives_extra_s(
    *,
    tensor_elements: list[Num],
    group: Num,
    stride: Num,
    gathers: Num,
    weight_bytes: float,
    grad_bytes: Num,
    layers: Num,
    microbatches: Num,
    links: collectives.Links,
) -> Num:
    """Time the per-tensor collectives of DeepSpeed's ZeRO-3 add to the data-parallel exchange (effect
    ``zero3_per_tensor_collectives``, ``docs/CONVENTIONS.md`` "Step effects").

    DeepSpeed's ZeRO-3 before the coalesced collectives (v0.5.x; PR #1188, October 2021, and PR #1453,
    January 2022, "batching allgather calls to amortize fixed overhead") gathers every parameter tensor
    with its own all-gather (``Init._allgather_param`` in ``deepspeed/runtime/zero/partition_parameters.py``,
    ``torch.cuda.synchronize()`` before each, so they neither overlap nor pipeline; PR #1188: "the async version
    is not async at all") and reduce-scatters every gradient with its own reduce-scatter
    (``Init._reduce_scatter_gradient``), in every micro-batch (``microbatches``: the exchange's rounds, the micro-batch
    count with ``training.zero3_exchange: every_microbatch``, which DeepSpeed's scenarios state; one with
    ``once_per_step``). Each pays NCCL's ring latency over the whole
    group (``nccl_ring_latency_s``) in the protocol NCCL picks, the one of least ``latency + t / f`` with
    ``t`` the collective's bandwidth time on the placed links (``solvers.collectives``) and ``f`` the
    protocol's bandwidth share (LL 1/4, LL128 0.92, Simple 1). What exceeds the bandwidth time already in the
    exchange is added: per step ``m x layers x sum over tensors (gathers x extra(w) + extra(g))``.

    Both collectives are also host work that grows with the group: DeepSpeed v0.3.15 passes each as a list of
    ``N`` views, one per rank (``_allgather_param``: ``N`` ``flat_tensor.narrow`` outputs to the list form
    ``torch.distributed.all_gather``; ``_reduce_scatter_gradient``: ``N`` ``param.grad.view(-1).narrow``
    inputs to the list form ``torch.distributed.reduce_scatter``, one call per gradient), and PyTorch's
    ``ProcessGroupNCCL`` (v1.8, ``torch/lib/c10d/ProcessGroupNCCL.cpp``) flattens the list into one buffer
    and runs one ``copy_`` per entry: after ``ncclAllGather`` from the flat output into each of the ``N``
    outputs, before ``ncclReduceScatter`` from each of the ``N`` inputs into the flat input. Each copy is one
    eager operation (dispatch and launch, ``EAGER_OP_OVERHEAD_US``, 4.5 us); the ``narrow`` views, which
    launch nothing, are left out. Per step ``m x layers x tensors x (gathers + 1) x N x c_op``.
    Example: GPT-3 175B, 1,536 GPUs on 192 nodes, 3 gathers: the 8 vectors of a layer take LL, 1.8 ms each
    beyond their bandwidth time; the four matrices LL128, 3.6-4.5 ms: ~31 ms per layer and pass, 11.8 s per
    step; the copies 96 x 12 x 4 x 1,536 x 4.5 us = 31.9 s more per step.
    """
    k = collectives.members_per_node(group_size=group, stride=stride, gpus_per_node=links.gpus_per_node)
    nodes = -(-maximum(group, 1) // k)
    lat = [nccl_ring_latency_s(ranks=group, nodes=nodes, protocol=p) for p in range(3)]
    factors = NCCL_RING_PROTOCOL_BW_FACTOR[0]

    def extra(message_bytes: Num) -> Num:
        t, _ = collectives.placed_reduce_scatter_s(
            group_size=group, stride=stride, message_bytes=message_bytes, links=links
        )
        best = minimum(minimum(lat[0] + t / factors[0], lat[1] + t / factors[1]), lat[2] + t / factors[2])
        return best - t

    total: Num = 0.0
    for elements in tensor_elements:
        total = total + gathers * extra(elements * weight_bytes) + extra(elements * grad_bytes)
    copies = len(tensor_elements) * (gathers + 1.0) * maximum(group, 1)
    total = total + copies * EAGER_OP_OVERHEAD_US[0] * 1e-6
    return where(maximum(group, 1) > 1, microbatches * layers * total, 0.0)


def dp_exchange(
    *,
    dense_params_mean: Num,
    dense_params_busiest: Num,
    dense_group: Num,
    dense_stride: Num,
    expert_params_mean: Num | None,
    expert_params_busiest: Num,
    expert_group: Num,
    expert_stride: Num,
    scatter_bytes: Num,
    gather_bytes: Num,
    buckets: Num,
    links: collectives.Links,
    expert_gather_bytes: Num | None = None,
) -> Exchange:
    """Data-parallel gradient reduction and weight gathering (module docstring), once per step.
    ``expert_gather_bytes``: the routed experts' own gather bytes a parameter when they differ from the dense
    parameters' (``training.fp8_param_gather``: the experts all FP8, the embeddings and output layer BF16).

    ``buckets`` collectives of equal size are issued (one per layer on the stage, as Megatron and FSDP
    do); it only matters for the latency term, which is one collective's a bucket although a bucket's
    reduce-scatter and all-gather are two (a known simplification: under 0.1% of a step, CONVENTIONS.md
    "Not modelled"). Example (seed 004 §5.3): Llama 3 405B pure DP on 16,384 GPUs:
    2 x 16,383/16,384 x 810 GB = 1.62 TB per GPU.
    """
    nb = 1.0 * maximum(buckets, 1)
    parts = [
        (dense_params_mean, dense_params_busiest, dense_group, dense_stride, scatter_bytes + gather_bytes)
    ]
    if expert_params_mean is not None:
        expert_gather = gather_bytes if expert_gather_bytes is None else expert_gather_bytes
        parts.append(
            (
                expert_params_mean,
                expert_params_busiest,
                expert_group,
                expert_stride,
                scatter_bytes + expert_gather,
            )
        )
    total_bytes: Num = 0.0
    time: Num = 0.0
    nic: Num = 0.0
    for mean_p, busy_p, group, stride, share in parts:
        total_bytes = total_bytes + collectives.reduce_scatter_bytes(
            group_size=group, message_bytes=mean_p * share
        )
        bucket = busy_p * share / nb
        t, n = collectives.placed_reduce_scatter_s(
            group_size=group, stride=stride, message_bytes=bucket, links=links
        )
        time = time + nb * t
        nic = nic + nb * n
    return Exchange(bytes_per_gpu=total_bytes, time_s=time, nic_bytes=nic, burst_bytes=nic)


def every_microbatch(dp: Exchange, rounds: Num) -> Exchange:
    """The data-parallel exchange ``rounds`` times over (``training.zero3_exchange: every_microbatch``).

    A framework that gathers the parameters and reduce-scatters the gradients in every microbatch of a
    gradient-accumulation loop (which ones: the source of ``training.zero3_exchange``, ``solvers.inputs.fields``)
    pays the exchange once a microbatch, where the v1 convention counts one a step. The burst (one round's
    collectives on the NIC) is unchanged.
    Example: Llama 3 70B under FSDP on 32 H100, 16 microbatches of 2 x 4,096 tokens: 1.97 s -> 31.4 s a step
    (``tests/solvers/test_zero3_exchange.py``).
    """
    return dp._replace(
        bytes_per_gpu=dp.bytes_per_gpu * rounds, time_s=dp.time_s * rounds, nic_bytes=dp.nic_bytes * rounds
    )


def joined(a: Exchange, b: Exchange) -> Exchange:
    """Two exchanges of one dimension in one step: bytes, time and NIC bytes added, the larger burst."""
    return a._replace(
        bytes_per_gpu=a.bytes_per_gpu + b.bytes_per_gpu,
        time_s=a.time_s + b.time_s,
        nic_bytes=a.nic_bytes + b.nic_bytes,
        burst_bytes=maximum(a.burst_bytes, b.burst_bytes),
    )


def logits_gather(*, tp: Num, logits_bytes: Num, microbatches: Num, links: collectives.Links) -> Exchange:
    """The output layer's logits all-gathered over TP once a microbatch (``training.tp_vocab_parallel: false``:
    the head split over the vocabulary, its output gathered whole for a loss on every rank; the backward only
    slices the gradient, so nothing more is sent). ``logits_bytes`` = tokens x V x the activations' bytes; each GPU
    receives ``(tp-1)/tp`` of it. Source: KempnerForge ``distributed/tensor_parallel.py`` at 01b461a
    (``ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())``). Example: 4 x 4,096 tokens,
    V = 128,256, BF16, tp 4: 3.15 GB a GPU a microbatch, 8.8 ms at 360 GB/s.
    """
    time, nic = collectives.placed_reduce_scatter_s(
        group_size=tp, stride=1, message_bytes=logits_bytes, links=links
    )
    sent = collectives.reduce_scatter_bytes(group_size=tp, message_bytes=logits_bytes)
    return Exchange(
        bytes_per_gpu=microbatches * sent,
        time_s=microbatches * time,
        nic_bytes=microbatches * nic,
        burst_bytes=nic,
    )


def gathers_every_microbatch(*, once: Exchange, gathers: Exchange, rounds: Num) -> Exchange:
    """The step's exchange once and its parameter gathers ``rounds - 1`` times more
    (``training.zero3_exchange: gather_every_microbatch``).

    FSDP2 under gradient accumulation with ``set_requires_gradient_sync(False)`` on every microbatch but the last
    (the gradients accumulate unsharded and are reduce-scattered once) keeps its default resharding: each
    microbatch gathers every unit before its forward and, resharded after the forward, again before its backward.
    Per parameter and step ``rounds`` times the gathers and one reduce-scatter: with BF16 weights and an FP32
    reduction, ``4 m + 4`` bytes where ``every_microbatch`` counts ``8 m`` and ``once_per_step`` 8 (KempnerForge's
    ``maybe_no_sync``, ``corpus/kempnerforge-2026.yaml``). One microbatch (or ``rounds`` 1 below ZeRO-3) is the
    one exchange a step. The burst is the one exchange's.
    Example: GA 4: 20 bytes a parameter against 32 and 8.
    """
    extra = rounds - 1.0
    return once._replace(
        bytes_per_gpu=once.bytes_per_gpu + extra * gathers.bytes_per_gpu,
        time_s=once.time_s + extra * gathers.time_s,
        nic_bytes=once.nic_bytes + extra * gathers.nic_bytes,
    )


def ep_exchange(
    *,
    ep: Num,
    stride: Num,
    dispatch_bytes: Num,
    combine_bytes: Num,
    microbatches: Num,
    moe_layers_busiest: Num,
    moe_layers_mean: Num,
    full_recompute: Num,
    links: collectives.Links,
    skew: float = 1.0,
    per_node: collectives.NodeDispatch | None = None,
    expert_tp: Num = 1,
    gather: bool = False,
) -> Exchange:
    """MoE dispatch and combine all-to-alls, forward and backward, per MoE layer per microbatch; with
    ``per_node`` one copy per target node crosses the NIC (``training.moe_dispatch``,
    ``collectives.placed_all_to_all_s``). With ``gather`` (the ``expert_tp_exchange`` effect) the copies a GPU
    receives are all-gathered over ``expert_tp`` before the experts and the experts' outputs reduce-scattered back
    (Megatron-Core ``MoEAlltoAllTokenDispatcher.dispatch_postprocess`` and ``combine_preprocess``), each of the
    gathered ``expert_tp x dispatch_bytes`` (``x combine_bytes``), ``(etp-1)/etp`` of it each way.

    ``dispatch_bytes``/``combine_bytes`` are the per-GPU volumes ``tokens x top_k x h x e`` before the
    ``(ep-1)/ep`` share that leaves the GPU. Example: DeepSeek-V3, 4,096 tokens x 8 x 7,168 in FP8
    (235 MB) dispatched over EP 64 -> 231 MB per all-to-all.
    """
    rounds = where(full_recompute, 3.0, 2.0)  # forward, backward (+ recomputed forward)
    d_t, d_nic = collectives.placed_all_to_all_s(
        group_size=ep, stride=stride, message_bytes=dispatch_bytes, links=links, skew=skew, per_node=per_node
    )
    c_t, c_nic = collectives.placed_all_to_all_s(
        group_size=ep, stride=stride, message_bytes=combine_bytes, links=links, skew=skew, per_node=per_node
    )
    per_layer_b = collectives.reduce_scatter_bytes(
        group_size=ep, message_bytes=dispatch_bytes + combine_bytes
    )
    combine_a2a_t = c_t
    if gather:
        g_t, g_nic = collectives.placed_reduce_scatter_s(
            group_size=expert_tp, stride=1, message_bytes=expert_tp * dispatch_bytes, links=links
        )
        s_t, s_nic = collectives.placed_reduce_scatter_s(
            group_size=expert_tp, stride=1, message_bytes=expert_tp * combine_bytes, links=links
        )
        d_t, d_nic, c_t, c_nic = d_t + g_t, d_nic + g_nic, c_t + s_t, c_nic + s_nic
        per_layer_b = per_layer_b + collectives.reduce_scatter_bytes(
            group_size=expert_tp, message_bytes=expert_tp * (dispatch_bytes + combine_bytes)
        )
    count = microbatches * rounds
    return Exchange(
        bytes_per_gpu=count * moe_layers_mean * per_layer_b,
        time_s=count * moe_layers_busiest * (d_t + c_t),
        nic_bytes=count * moe_layers_busiest * (d_nic + c_nic),
        burst_bytes=maximum(d_nic, c_nic),
        dispatch_s=count * moe_layers_busiest * d_t,
        combine_s=count * moe_layers_busiest * combine_a2a_t,
    )


def moe_hide_ratio(
    *,
    expert_ffn_hidden: float,
    bandwidth_gb_s: float,
    peak_tflops: float,
    matrices: int = 3,
    element_bytes: float = 2.0,
) -> float:
    """Expert compute over its all-to-all time, per token (MegaScale-MoE §7 model; seed 004 §5.5).

    One token's expert MLP forward costs ``2 x matrices x h x h_e`` FLOPs; dispatching it moves
    ``element_bytes x h`` bytes. Their times' ratio ``R = (2 matrices h_e / F) / (e / B)`` does not depend on the
    hidden size, the expert count or top-k; the all-to-all can hide only if ``R >= 1``. With a gated MLP
    (3 matrices) in BF16: ``R = 3 h_e B / F``. Example (seed 004 §5.5): h_e = 8,192 on an H800 (989 TFLOP/s):
    9.94 on 400 GB/s NVLink, 1.24 on a 50 GB/s NIC; DeepSeekMoE's h_e = 2,048 on the H800's 160 GB/s achieved
    NVLink (DeepSeek-V3 §3.2.2): 0.99.
    """
    compute_s_per_token_hidden = 2.0 * matrices * expert_ffn_hidden / (peak_tflops * 1e12)
    comm_s_per_token_hidden = element_bytes / (bandwidth_gb_s * 1e9)
    return compute_s_per_token_hidden / comm_s_per_token_hidden


def shared_expert_hidden_s(
    *, dispatch_s: Num, combine_s: Num, forward_math_s: Num, matrices: int, full_recompute: Num
) -> Num:
    """What the shared experts' math hides of the expert-parallel exchange, pass by pass and phase by phase:
    ``sum over passes of min(dispatch / r, k F (m - 1)/m) + min(combine / r, k F / m)``, ``F`` the shared experts'
    forward math, ``k`` 1 forward, 2 backward, 1 for a fully recomputed forward, ``r`` the passes (2, or 3 with
    full recompute), ``m`` the MLP's weight matrices.

    With ``training.moe_shared_expert_overlap`` (Megatron-Core's ``moe_shared_expert_overlap``) the shared experts
    run on their own CUDA stream while the routed tokens travel: ``MoEAlltoAllTokenDispatcher.token_permutation``
    issues their first GEMM and activation (``linear_fc1_forward_and_act``, ``m - 1`` of the MLP's weight
    matrices: gate and up) right after the dispatch all-to-all, beside it and the expert-TP all-gather that follows,
    and ``token_unpermutation`` their second GEMM (``linear_fc2_forward``, one matrix) right after the combine
    all-to-all, beside it (Megatron-LM ``megatron/core/transformer/moe/token_dispatcher.py`` lines 531-535 and
    630-634 and ``shared_experts.py`` at cbc89b3, 2025-04-02). The expert-TP reduce-scatter before the combine
    runs after the routed experts' GEMMs, when the first GEMM has long finished and the second is not yet issued:
    nothing hides it. Backward ops run on the stream of their forward ops (PyTorch, CUDA semantics, "Stream
    semantics of backward passes"), so each backward pass mirrors its forward pass with twice its math.
    ``dispatch_s`` and ``combine_s`` are what other overlap left of each phase over the step. Example:
    Qwen2-57B-A14B on 128 H100 (TP 2, EP 4, expert TP 1, 64 microbatches of 4,096 tokens): an exchange of
    0.44 s a step against 1.9 s of shared-expert math (41% of the model FLOPs), all hidden; at expert TP 2 the
    0.29 s of reduce-scatters of its 1.03 s stay exposed.
    """
    rounds = where(full_recompute, 3.0, 2.0)
    d, c = dispatch_s / rounds, combine_s / rounds
    first, second = (matrices - 1.0) / matrices * forward_math_s, forward_math_s / matrices
    forward = minimum(d, first) + minimum(c, second)
    backward = minimum(d, 2.0 * first) + minimum(c, 2.0 * second)
    return forward * where(full_recompute, 2.0, 1.0) + backward
