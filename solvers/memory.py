"""Memory per GPU: weights, gradients, optimizer state and activations, and whether they fit in HBM.

Model state (Rajbhandari et al., 'ZeRO', SC'20 §3.1 and Figure 1): mixed-precision Adam keeps 2 bytes of
16-bit weights, 2 bytes of 16-bit gradients and K = 12 bytes of optimizer state (FP32 master weights,
momentum and variance) per parameter: 16 bytes in all. ZeRO stage 1 shards the optimizer state over the
data-parallel group, stage 2 also the gradients, stage 3 (FSDP) also the weights. Conventions chosen here:

* gradients are kept in FP32 (4 bytes) when they are reduce-scattered in FP32 (Llama 3 §3.3.2), else in the
  weight dtype;
* FP8 training stores 16-bit weights and gradients (DeepSeek-V3 §3.3); the FP8 copies of the weights that
  Transformer Engine keeps across a step's microbatches are not counted (docs/CONVENTIONS.md "Memory per GPU");
* FP32 training: 4-byte weights and gradients, Adam 8 bytes (no master copy), SGD-momentum 4;
* mixed-precision SGD with momentum keeps FP32 master weights and momentum: 8 bytes;
* the sharding group is ``dp * cp`` for dense parameters (context-parallel ranks hold the same weights,
  Megatron-LM) and the expert-data-parallel group ``tp*cp*dp / (ep*expert_tp)`` for routed experts;
* ZeRO-3 holds the gathered weights of two layers at a time (the one computing and the one prefetched);
* DualPipe holds two stages' parameters (DeepSeek-V3 Table 2), doubling weights, gradients and optimizer.

Activations follow Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models'
(MLSys 2023, arXiv 2205.05198) §4, per layer and token in bytes (16-bit), generalised to grouped-query
attention and gated MLPs:

* replicated across tensor ranks unless sequence parallelism splits them: ``10 h`` (two layer-norm inputs
  4h, QKV and MLP inputs 2h + 2h, two dropout masks h + h); ``8 h`` for a model trained without dropout
  (``model.dropout: false``, e.g. Llama 3, whose reference ``TransformerBlock`` has no dropout layer);
* split over tensor ranks: attention ``4h + 4h * kv/a`` (Q, K, V, projection input; ``8h`` with
  ``kv = a``; with a stated head width ``4 a d + 4 kv d``, ``d`` = ``model.head_dim``), MLP ``4f`` (GELU in
  and out) or ``6f`` (gate, up and product of a gated MLP); with ``f = 4h`` and ``kv = a`` this is
  Korthikanti's ``24 h``;
* attention scores ``5 a s`` per token (softmax output, dropout mask and output; ``2 a s``, the softmax
  output alone, without dropout), split over tensor ranks, kept only without recompute and without fused
  attention (``training.fused_attention: false``).

So ``none`` = ``s b h (34 + 5 a s / h)`` for GPT-3 shapes without parallelism (Korthikanti eq. 1),
``selective`` drops the score term (eq. 5; fused attention kernels never store it either), ``full`` keeps only each
layer's ``2 h`` input plus one layer's working set during its recomputation (§5), and ``per_op`` (torchtitan's
op-level selective checkpointing, dense Llama blocks) keeps the block's input, the outputs of the matmuls it saves
and of the attention kernel, and of the sequence-parallel reduce-scatters, compiled only those the backward reads
(``per_op_bytes_per_token_layer``), plus what one layer's working set adds to the inputs it keeps during its
recomputation. Routed-expert MLPs store,
per token, ``top_k`` dispatched inputs ``2h`` and ``top_k`` expert activations, split over ``expert_tp``; with
``expert_gather`` (the ``expert_tp_exchange`` effect) a GPU holds ``etp/tp`` of its TP group's routed copies, each
``2h`` whole, and ``1/etp`` of their expert activations (``top_k (2h etp + 6 f_e) / tp`` per token with a gated
MLP, shared experts on the attention's TP), as Megatron-Core's dispatcher gathers the copies over the expert-TP group.
Not counted: framework buffers, the output-layer logits on the last stage, fragmentation; the busiest
stage for memory is the first, which holds the most microbatches in flight.
"""

from __future__ import annotations

from typing import Any

from solvers.compute import (
    Num,
    constant_like,
    expert_params,
    kv_width_share,
    logical_not,
    maximum,
    minimum,
    per_op_defined,
    query_width_share,
    where,
)
from solvers.specs import ModelSpec

ADAM_STATE_BYTES_MIXED = 12.0
ADAM_STATE_BYTES_FP32 = 8.0
SGD_STATE_BYTES_MIXED = 8.0
SGD_STATE_BYTES_FP32 = 4.0


def weight_bytes_per_param(*, precision: str) -> float:
    """Bytes of the stored training weights: 4 in FP32 training, else 2 (BF16/FP16, and FP8's BF16 copy)."""
    return 4.0 if precision == "fp32" else 2.0


def optimizer_bytes_per_param(*, optimizer: str, precision: str) -> float:
    """Optimizer state per parameter (ZeRO §3.1: K = 12 for mixed-precision Adam)."""
    if optimizer == "sgd":
        return SGD_STATE_BYTES_FP32 if precision == "fp32" else SGD_STATE_BYTES_MIXED
    return ADAM_STATE_BYTES_FP32 if precision == "fp32" else ADAM_STATE_BYTES_MIXED


def model_state_bytes(
    *,
    dense_params_per_gpu: Num,
    expert_params_per_gpu: Num,
    dense_shard: Num,
    expert_shard: Num,
    zero_stage: Num,
    grad_reduce_fp32: Num,
    precision: str,
    optimizer: str,
    copies: Num,
    layers_on_stage: Num,
) -> tuple[Num, Num, Num]:
    """Weights, gradients and optimizer bytes per GPU under a ZeRO stage (Rajbhandari et al. 2020 Fig. 1).

    Example: Llama 3 405B at TP8/PP16 (3.16e9 parameters per GPU), DP 128, ZeRO-1, BF16 gradients:
    weights 6.33 GB, gradients 6.33 GB, optimizer 12 x 3.16e9 / 128 = 0.30 GB.
    """
    w_b = weight_bytes_per_param(precision=precision)
    g_b = where(grad_reduce_fp32, 4.0, w_b)
    o_b = optimizer_bytes_per_param(optimizer=optimizer, precision=precision)
    dense_n = 1.0 * maximum(dense_shard, 1)
    expert_n = 1.0 * maximum(expert_shard, 1)
    total = dense_params_per_gpu + expert_params_per_gpu
    sharded = dense_params_per_gpu / dense_n + expert_params_per_gpu / expert_n
    # ZeRO-3 keeps the gathered weights of the layer being computed and the one being prefetched.
    working = 2.0 * total / maximum(layers_on_stage, 1)
    weights = where(zero_stage >= 3, sharded + minimum(working, total - sharded), total) * w_b
    grads = where(zero_stage >= 2, sharded, total) * g_b
    optim = where(zero_stage >= 1, sharded, total) * o_b
    return weights * copies, grads * copies, optim * copies


def activation_bytes_per_token_layer(
    *,
    model: ModelSpec,
    seq_len: int,
    tp: Num,
    expert_tp: Num,
    sequence_parallel: Num,
    recompute: Num,
    moe_layer: bool,
    expert_gather: bool = False,
    compiled: bool = False,
    element_bytes: float = 2.0,
) -> Num:
    """Activation bytes stored per token per layer on one GPU (Korthikanti et al. 2022 §4, generalised).

    Korthikanti counts 16-bit tensors (2 bytes an element) and 1-byte dropout masks; ``element_bytes`` is the
    size of an activation element (``exchanges.activation_element_bytes``: 4 in FP32 training), which scales
    every tensor but the masks.

    Example: GPT-3 175B (h = 12,288, a = 96, s = 2,048), TP 8 with sequence parallelism, no recompute:
    (34 + 5 x 96 x 2,048 / 12,288) x 12,288 / 8 = 175,104 bytes per token per layer. The query, key, value
    and attention-output tensors (``4 h + 4 h kv_heads / heads`` of the 34 h) scale with the heads' widths
    where ``model.head_dim`` is stated (``4 h q + 4 h k``, ``q`` and ``k`` the widths' shares of ``h``).
    """
    h = float(model.hidden)
    a = float(model.heads)
    t = 1.0 * tp
    kv_share = kv_width_share(model=model)
    # Two dropout masks (1 byte per element each) and the dropped-out attention probabilities only exist
    # when the model trains with dropout.
    w = element_bytes / 2.0  # 1.0 in 16-bit training, where every product below is the count as published
    replicated = (8.0 * w + (2.0 if model.dropout else 0.0)) * h
    attention_split = (4.0 * h * query_width_share(model=model) + 4.0 * h * kv_share) * w
    scores = (4.0 * w + 1.0 if model.dropout else 2.0 * w) * a * float(seq_len)
    per_mlp = (6.0 if model.gated_mlp else 4.0) * w
    if moe_layer and model.moe is not None:
        moe = model.moe
        f_e = float(moe.expert_ffn_hidden)
        if expert_gather:
            # each GPU holds etp/tp of its group's routed copies, h wide, and 1/etp of their MLP
            etp = maximum(expert_tp, 1)
            mlp_part = (
                moe.top_k * (2.0 * w * h * etp + per_mlp * f_e) + moe.shared_experts * per_mlp * f_e
            ) / t
        else:
            routed = moe.top_k * (2.0 * w * h + per_mlp * f_e) + moe.shared_experts * per_mlp * f_e
            mlp_part = routed / maximum(expert_tp, 1)
    else:
        mlp_part = per_mlp * float(model.ffn_hidden) / t
    rep = where(sequence_parallel, replicated / t, replicated)
    selective = rep + attention_split / t + mlp_part
    none = selective + scores / t
    full_input = where(sequence_parallel, 2.0 * w * h / t, 2.0 * w * h)
    stored = where(recompute == 1, selective, full_input)
    if per_op_defined(model):
        per_op = per_op_bytes_per_token_layer(
            model=model,
            tp=t,
            sequence_parallel=sequence_parallel,
            compiled=compiled,
            element_bytes=element_bytes,
        )
        stored = where(recompute == 3, per_op, stored)
    return where(recompute == 0, none, stored)


def per_op_input_bytes_per_token_layer(
    *, model: ModelSpec, tp: Num, sequence_parallel: Num, element_bytes: float = 2.0
) -> Num:
    """The inputs torchtitan's op-level selective checkpointing keeps per token and layer, in BF16 (2 bytes;
    ``element_bytes`` in another activation dtype):
    ``2 (x + (2q + kv + f)/t)``, the block's input ``x`` (``h/t`` with sequence parallelism, else ``h``), the
    queries ``q/t``, the values ``kv/t``, the attention kernel's output ``q/t`` and the MLP's gate ``f/t``: what
    the backward reads, and the share of a layer's working set during its recomputation that is already kept
    (``activation_bytes``). Example: Llama 3 8B at TP 8 with sequence parallelism: 2 x (512 + (8,192 + 1,024 +
    14,336)/8) = 6,912 bytes."""
    h = float(model.hidden)
    t = 1.0 * tp
    widths = (
        2.0 * query_width_share(model=model) * h + kv_width_share(model=model) * h + float(model.ffn_hidden)
    )
    return element_bytes * (where(sequence_parallel, h / t, h) + widths / t)


def per_op_bytes_per_token_layer(
    *, model: ModelSpec, tp: Num, sequence_parallel: Num, compiled: bool = False, element_bytes: float = 2.0
) -> Num:
    """What torchtitan's op-level selective checkpointing stores per token and layer, in BF16 (2 bytes): eager
    ``2 (x + (2q + kv + f)/t + h) + [SP, t > 1] 4h/t``, compiled ``2 (x + (2q + kv + f)/t) + [SP, t > 1] 2h/t``.

    The inputs the backward reads (``per_op_input_bytes_per_token_layer``); the saved matmul outputs, every
    second one of ``wq, wk, wv, wo, w1, w3, w2`` (``compute.per_op_recompute_flops_per_token``), include besides
    them the down projection's, a row-parallel partial sum of all ``h`` before its reduction; the attention
    kernel's log-sum-exp (4 bytes a head) is left out; with sequence parallelism on ``t > 1`` ranks the outputs of
    the two reduce-scatters, ``h/t`` each, which the policy also saves. Compiled (torch.compile), the backward
    graph keeps only the saved outputs the backward reads: not the down projection's nor the second
    reduce-scatter's (they feed only the block's output), but the first reduce-scatter's, from which the residual
    sum is recomputed.
    Source: torchtitan ``_save_list`` (``parallelize_llama.py`` at 820504e). Example: Llama 3 8B at TP 8 with
    sequence parallelism: 2 x (512 + (8,192 + 1,024 + 14,336)/8 + 4,096) + 4 x 4,096/8 = 17,152 bytes eager,
    2 x (512 + 2,944) + 2 x 4,096/8 = 7,936 compiled; at TP 1, 2 x (4,096 + 23,552 + 4,096) = 63,488 bytes eager.
    """
    h = float(model.hidden)
    t = 1.0 * tp
    e = element_bytes
    inputs = per_op_input_bytes_per_token_layer(
        model=model, tp=tp, sequence_parallel=sequence_parallel, element_bytes=e
    )
    split_tp = sequence_parallel & (t > 1.0)
    if compiled:
        return inputs + where(split_tp, e * h / t, 0.0)
    return inputs + e * h + where(split_tp, 2.0 * e * h / t, 0.0)


def activation_bytes(
    *,
    model: ModelSpec,
    seq_len: int,
    microbatch_tokens: Num,
    tp: Num,
    expert_tp: Num,
    sequence_parallel: Num,
    recompute: Num,
    layers_on_stage: Num,
    in_flight: Num,
    scores: Num = True,
    expert_gather: bool = False,
    compiled: bool = False,
    element_bytes: float = 2.0,
) -> Num:
    """Activation bytes on the busiest-memory stage: in-flight microbatches x layers x per-layer bytes
    (``element_bytes`` an activation element's size, as in ``activation_bytes_per_token_layer``).

    ``microbatch_tokens`` is the tokens one GPU sees per microbatch (``b s / cp``). With full recompute one
    layer's complete activations are added once (the layer being recomputed; its score matrix only when
    ``scores`` is materialised); with per_op what they add to the layer's own stored share. MoE layers are counted in
    proportion ``moe_layers / layers``.
    Example: Llama 3 405B (no dropout), TP8 + SP, selective, b = 1, s = 8,192, 8 layers, 16 in flight:
    65,024 B per token-layer x 8,192 x 8 x 16 = 68.2 GB (72.5 GB with Korthikanti's two dropout masks).
    """
    moe_share = 0.0 if model.moe is None else model.moe.moe_layers / model.layers
    kwargs: dict[str, Any] = {
        "model": model,
        "seq_len": seq_len,
        "tp": tp,
        "expert_tp": expert_tp,
        "sequence_parallel": sequence_parallel,
        "expert_gather": expert_gather,
        "compiled": compiled,
        "element_bytes": element_bytes,
    }
    dense = activation_bytes_per_token_layer(recompute=recompute, moe_layer=False, **kwargs)
    per_token_layer = dense
    if moe_share > 0.0:
        moe = activation_bytes_per_token_layer(recompute=recompute, moe_layer=True, **kwargs)
        per_token_layer = (1.0 - moe_share) * dense + moe_share * moe
    stored = in_flight * layers_on_stage * microbatch_tokens * per_token_layer
    working = activation_bytes_per_token_layer(
        recompute=where(scores, 0, 1), moe_layer=moe_share > 0.5, **kwargs
    )
    # the layer being recomputed holds its whole working set; per_op already keeps part of it
    rerun_extra = working
    if per_op_defined(model):
        kept = per_op_input_bytes_per_token_layer(
            model=model, tp=tp, sequence_parallel=sequence_parallel, element_bytes=element_bytes
        )
        rerun_extra = where(recompute == 3, maximum(working - kept, 0.0), working)
    # full (2) and per_op (3) recompute a layer in the backward; named, not read off the codes' order
    return stored + where((recompute == 2) | (recompute == 3), rerun_extra * microbatch_tokens, 0.0)


def scores_materialised(*, recompute: Num, fused_attention: bool | None) -> Num:
    """Whether the ``s x s`` attention scores go through HBM, for every recompute policy alike.

    Fused kernels (FlashAttention, Dao et al. 2022) never write the scores to HBM, whatever the policy;
    unfused attention (Megatron-LM's fused softmax of 2021-22, Korthikanti et al. 2022) writes them in the
    forward pass and reads them in the backward pass: stored with no recompute, written and read again inside
    the recomputed forward with ``selective`` or ``full``. Recompute changes what is *stored*
    (``memory_policy``), never whether the scores move, so a recompute policy can only add time.
    ``fused_attention`` None is unspecified and read as fused, the scenario document's default.
    Example: recompute full, fused False -> True; recompute none, fused None -> False.
    """
    materialised = fused_attention is False
    return constant_like(materialised, recompute)


def memory_policy(*, recompute: Num, fused_attention: bool | None) -> Num:
    """The recompute code whose stored activations apply: ``none`` with fused attention stores what
    ``selective`` stores (no score matrix). Example: (0, True) -> 1; (0, False) -> 0; (2, any) -> 2."""
    fused_none = (recompute == 0) & logical_not(
        scores_materialised(recompute=recompute, fused_attention=fused_attention)
    )
    return where(fused_none, 1, recompute)


def activation_traffic_bytes_per_token_layer(
    *,
    model: ModelSpec,
    seq_len: int,
    tp: Num,
    expert_tp: Num,
    sequence_parallel: Num,
    scores: Num,
    expert_gather: bool = False,
    element_bytes: float = 2.0,
) -> Num:
    """Activation bytes per token per layer that elementwise kernels move through HBM (one pass;
    ``element_bytes`` an activation element's size, as in ``activation_bytes_per_token_layer``).

    The tensors Korthikanti et al. count, whether stored or recomputed: the ``none`` set, without the
    attention scores unless they are materialised (``scores``). MoE layers weighted by ``moe_layers / layers``.
    Example: Llama 3 405B (no dropout), TP8 + SP, fused attention: 65,024 bytes.
    """
    kwargs: dict[str, Any] = {
        "model": model,
        "seq_len": seq_len,
        "tp": tp,
        "expert_tp": expert_tp,
        "sequence_parallel": sequence_parallel,
        "recompute": where(scores, 0, 1),
        "expert_gather": expert_gather,
        "element_bytes": element_bytes,
    }
    dense = activation_bytes_per_token_layer(moe_layer=False, **kwargs)
    if model.moe is None:
        return dense
    share = model.moe.moe_layers / model.layers
    moe = activation_bytes_per_token_layer(moe_layer=True, **kwargs)
    return (1.0 - share) * dense + share * moe


def dense_and_expert_params(*, model: ModelSpec) -> tuple[float, float]:
    """(dense, routed-expert) parameters of the whole model; dense includes embeddings and shared experts."""
    experts = expert_params(model=model)
    return model.params - experts, experts
