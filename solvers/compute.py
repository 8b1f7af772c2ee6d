"""The arithmetic of one training step: FLOPs per token, recompute FLOPs, per-GPU math time, HBM roofline.

Every function takes numpy arrays (one entry per layout) or scalars and broadcasts, so one layout and a
million layouts run through the same code.

Conventions
-----------
* **Model FLOPs** follow PaLM (Chowdhery et al. 2022, appendix B): ``6 * N_active + 12 * L * h * s`` per
  token, counting attention non-causally (the full ``s x s`` score matrix). This is the numerator of MFU.
  With Multi-head Latent Attention (``model.mla``) the attention term uses MLA's query/key and value widths,
  and with a stated head width (``model.head_dim``) ``heads x head_dim`` in place of ``h``.
* **Recompute FLOPs** are extra forward work: ``full`` re-runs the whole forward pass (+1/3 of the model
  FLOPs, Korthikanti et al. 2022 §5); ``selective`` re-runs only the attention core ``QK^T``, softmax and
  ``AV`` (+``4 * L * h * s`` per token at width ``h``, the forward third of the attention term; Korthikanti
  et al. 2022 §4.3). With fused attention (``training.fused_attention``, the default) nothing of the score
  matrix is stored anyway, so ``none`` already keeps what ``selective`` keeps and ``selective`` only adds this
  work. ``per_op`` is torchtitan's op-level selective checkpointing: it keeps every second matmul's output and
  the attention kernel's, and re-runs the other matmuls (``per_op_recompute_flops_per_token``) and every
  element-wise op.
  Not counted: the score recomputation inside a FlashAttention backward kernel (``2 * L * h * s``).
* **Busiest stage.** Stages may be uneven: the stage with ``ceil(L / pp)`` layers sets the pace. Embedding
  and output-layer work is spread over stages in proportion to their layers (Llama 3 §3.3.2 balances the
  first and last stage by giving them one layer less, which this approximates).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.specs import ModelSpec

Num = Any
"""A float, int or bool scalar, or a numpy array of them (one entry per layout)."""

_SCALARS = frozenset({int, float, bool})  # a set: one hash lookup per check (these run ~50 times a step)


# Array-or-scalar helpers. The step modules are written once against these, so one layout runs on python
# scalars (about ten times faster than numpy on length-1 arrays) and many layouts on numpy arrays. Both use
# IEEE-754 double arithmetic with correct rounding for + - * /, so a batch of one and a batch of a thousand
# give bit-identical numbers.


def where(cond: Num, a: Num, b: Num) -> Num:
    """``np.where`` on arrays, ``a if cond else b`` on a python bool."""
    if type(cond) is bool:
        return a if cond else b
    return np.where(cond, a, b)


def minimum(a: Num, b: Num) -> Num:
    """``min`` on two python scalars, ``np.minimum`` on anything else (arrays, numpy scalars)."""
    if type(a) in _SCALARS and type(b) in _SCALARS:
        return a if a <= b else b
    return np.minimum(a, b)


def maximum(a: Num, b: Num) -> Num:
    """``max`` on two python scalars, ``np.maximum`` on anything else (arrays, numpy scalars)."""
    if type(a) in _SCALARS and type(b) in _SCALARS:
        return a if a >= b else b
    return np.maximum(a, b)


def clip(x: Num, low: Num, high: Num) -> Num:
    """``min(max(x, low), high)``."""
    return minimum(maximum(x, low), high)


def logical_not(x: Num) -> Num:
    """``not x`` on a python bool, ``~x`` on a boolean array."""
    if type(x) is bool:
        return not x
    return np.logical_not(x)


def constant_like(value: Num, like: Num) -> Num:
    """``value`` as a scalar when ``like`` is a scalar, else an array of ``like``'s shape filled with it."""
    if type(like) in _SCALARS:
        return value
    return np.full(np.shape(like), value)


def ceil_log2(n: Num) -> Num:
    """``ceil(log2 n)`` for integers n >= 1, computed exactly (bit length of n - 1). Example: 8 -> 3, 9 -> 4."""
    if type(n) is int:
        return (n - 1).bit_length() if n > 1 else 0
    _, exponent = np.frexp(np.maximum(n - 1, 0).astype(np.float64))
    return exponent.astype(np.int64)


ATTENTION_FLOPS_PER_TOKEN_PER_LAYER_PER_HS = 12.0
"""PaLM appendix B: QK^T and AV are 2 matmuls x 2 FLOPs x s x h per token, x3 for forward + backward."""


def mlp_matrices(*, model: ModelSpec) -> int:
    """Weight matrices per MLP (expert): 3 for a gated (SwiGLU) MLP, 2 for a GELU MLP (Shazeer 2020)."""
    return 3 if model.gated_mlp else 2


def dense_mlp_share(*, model: ModelSpec) -> float:
    """Share of the layers whose MLP is dense: ``1 - moe_layers / layers`` (1 for a dense model). Example:
    DeepSeek-V3, 1 - 58 / 61 = 0.049; Qwen3-30B-A3B (every layer MoE), 0."""
    return 1.0 if model.moe is None else 1.0 - model.moe.moe_layers / model.layers


def expert_params(*, model: ModelSpec) -> float:
    """Routed-expert parameters of the whole model: ``(moe_layers + mtp_layers) * experts * matrices * h * h_e``
    (a multi-token-prediction module's block is an MoE layer in an MoE model, ``mtp_module_params``).

    Example: DeepSeek-V3, 58 x 256 x 3 x 7,168 x 2,048 = 654.0e9 of its 671e9 parameters (main model;
    with its one MTP module, 59 x ... = 665.2e9 of 682.6e9).
    Shared experts are counted with the dense (replicated) parameters.
    """
    moe = model.moe
    if moe is None:
        return 0.0
    per_expert = mlp_matrices(model=model) * model.hidden * moe.expert_ffn_hidden
    return float(min((moe.moe_layers + model.mtp_layers) * moe.experts * per_expert, model.params))


def active_expert_params(*, model: ModelSpec) -> float:
    """Routed-expert parameters one token touches: ``(moe_layers + mtp_layers) * top_k * matrices * h * h_e``."""
    moe = model.moe
    if moe is None:
        return 0.0
    per_expert = mlp_matrices(model=model) * model.hidden * moe.expert_ffn_hidden
    return float(min((moe.moe_layers + model.mtp_layers) * moe.top_k * per_expert, model.active_params))


def shared_expert_params(*, model: ModelSpec) -> float:
    """Shared-expert parameters of the main model's MoE layers: ``moe_layers * shared * matrices * h * h_e`` (a
    multi-token-prediction module's MoE block is left out: its all-to-alls are not priced, so its shared expert
    has nothing to run beside).

    Example: Qwen2-57B-A14B (one 20,480-wide shared expert, written as 8 of 2,560), 28 x 8 x 3 x 3,584 x 2,560 =
    6.17e9; DeepSeek-V3 (one of 2,048) 58 x 3 x 7,168 x 2,048 = 2.55e9.
    """
    moe = model.moe
    if moe is None:
        return 0.0
    per_expert = mlp_matrices(model=model) * model.hidden * moe.expert_ffn_hidden
    return float(moe.moe_layers * moe.shared_experts * per_expert)


def head_dim(*, model: ModelSpec) -> float:
    """The width of one query (and key/value) head of multi-head or grouped-query attention: ``model.head_dim``
    where stated, else ``h / heads`` (Vaswani et al. 2017 §3.2.2). Models such as Qwen3 and Gemma decouple it
    from ``h``. Example: Llama 3 8B: 4,096 / 32 = 128; Qwen3-30B-A3B (h = 2,048, 32 heads): 128, stated."""
    return model.hidden / model.heads if model.head_dim is None else float(model.head_dim)


def query_width_share(*, model: ModelSpec) -> float:
    """All query heads' width over ``h``: ``heads x head_dim / h``, 1 when the head width is ``h / heads``.
    Example: Qwen3-30B-A3B: 32 x 128 / 2,048 = 2."""
    return 1.0 if model.head_dim is None else model.heads * model.head_dim / model.hidden


def kv_width_share(*, model: ModelSpec) -> float:
    """All key (or value) heads' width over ``h``: ``kv_heads x head_dim / h``, ``kv_heads / heads`` when
    the head width is ``h / heads``. Example: Llama 3 8B: 8 / 32 = 0.25; Qwen3-30B-A3B: 4 x 128 / 2,048 = 0.25."""
    if model.head_dim is None:
        return model.kv_heads / model.heads
    return model.kv_heads * model.head_dim / model.hidden


def attention_widths(*, model: ModelSpec) -> tuple[float, float]:
    """(query/key width, value width) summed over the heads: the inner sizes of ``QK^T`` and ``AV``.

    Multi-head and grouped-query attention: ``(heads x head_dim, heads x head_dim)``, which is ``(h, h)`` when
    every query head is ``h / heads`` wide (shared K/V heads change no per-head FLOPs). Multi-head Latent
    Attention: ``(heads x (d_nope + d_rope), heads x d_v)``, the per-head sizes the attention core multiplies
    in training, where keys and values are up-projected from the latent (DeepSeek-V2 §2.1.2-2.1.3,
    DeepSeek-V3 §2.1.1).
    Example: DeepSeek-V3, 128 heads of 128 + 64 and 128: (24,576, 16,384), against h = 7,168; Qwen3-30B-A3B,
    32 heads of 128: (4,096, 4,096), against h = 2,048.
    """
    mla = model.mla
    if mla is None:
        if model.head_dim is not None:
            width = float(model.heads * model.head_dim)
            return width, width
        return float(model.hidden), float(model.hidden)
    heads = float(model.heads)
    return heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim), heads * mla.v_head_dim


def model_flops_per_token(*, model: ModelSpec, seq_len: int) -> float:
    """PaLM model FLOPs per token: ``6 * N_active + 12 * L * h * s`` (Chowdhery et al. 2022, appendix B).

    The attention term is ``attention_flops_per_token`` (with MLA, ``6 L s (d_qk + d_v)``).
    Example: Llama 3 405B at s = 8,192: 6 x 405e9 + 12 x 126 x 16,384 x 8,192 = 2.430e12 + 0.203e12
    = 2.633e12 FLOP per token. DeepSeek-V3 at s = 4,096 without its MTP module: 6 x 37e9 + 6 x 61 x 4,096 x
    40,960 = 2.220e11 + 0.614e11 = 2.834e11, against 2.80e11 implied by the ISCA'25 paper's Table 4 (432
    TFLOP/s x 2,048 GPUs x 19.926 s / (15,360 x 4,096) tokens), nearer this count than the next. With it
    (``model.mtp_layers`` 1, the preset): the module's 0.69B active parameters, one more layer's attention core
    and one more pass of the output head, 6 h V, give 2.941e11 (``mtp_block_flops_per_token``).
    """
    flops = 6.0 * model.active_params + attention_flops_per_token(model=model, seq_len=seq_len)
    if model.mtp_layers:
        # Each multi-token-prediction module runs the shared output head once more: 6 h V without parameters.
        flops = flops + model.mtp_layers * output_head_flops_per_token(model=model)
    return flops


def mtp_block_flops_per_token(*, model: ModelSpec, seq_len: int) -> float:
    """The multi-token-prediction modules' own FLOPs per token, without their pass of the shared output head
    (``output_layer_flops_per_token`` counts it): ``6 N_mtp + D x (one layer's attention core)``, where
    ``N_mtp`` is the modules' active parameters (projection, norms, block). All on the last pipeline stage
    (DeepSeek-V3 §2.2; Megatron-Core builds the MTP block with the last stage). 0 without MTP.

    Example: DeepSeek-V3 (D = 1, N_mtp = 0.6881e9 active) at s = 4,096: 6 x 0.6881e9 + 6.14e10 / 61 = 4.13e9
    + 1.01e9 = 5.14e9 FLOP per token; with the head's 5.56e9 the module adds 1.07e10, 3.6% of the 2.94e11 of
    the whole model.
    """
    if not model.mtp_layers:
        return 0.0
    attention_per_layer = attention_flops_per_token(model=model, seq_len=seq_len) / (
        model.layers + model.mtp_layers
    )
    return 6.0 * model.mtp_active_params + model.mtp_layers * attention_per_layer


def attention_flops_per_token(*, model: ModelSpec, seq_len: int) -> float:
    """The attention-core share of the model FLOPs: ``12 * L * h * s`` (PaLM appendix B).

    PaLM's term is ``6 L s (d_qk + d_v)`` (``QK^T`` and ``AV``, 2 FLOPs per multiply-add, x3 for forward and
    backward) with ``d_qk = d_v = h``; Multi-head Latent Attention and a stated ``model.head_dim`` use their
    own widths (``attention_widths``).
    Example: DeepSeek-V3, s = 4,096: 6 x 61 x 4,096 x (24,576 + 16,384) = 6.14e10 FLOP per token, against
    12 x 61 x 7,168 x 4,096 = 2.15e10 counted as multi-head attention of width h.
    """
    layers = model.layers + model.mtp_layers  # a multi-token-prediction module's block attends too
    if model.mla is None and model.head_dim is None:
        return ATTENTION_FLOPS_PER_TOKEN_PER_LAYER_PER_HS * layers * model.hidden * seq_len
    qk, v = attention_widths(model=model)
    return ATTENTION_FLOPS_PER_TOKEN_PER_LAYER_PER_HS / 2.0 * layers * seq_len * (qk + v)


def output_head_flops_per_token(*, model: ModelSpec) -> float:
    """One pass of the output head per token, forward and backward: ``6 h V``. Example: Llama 3 8B
    (h 4,096, V 128,256): 3.15e9 FLOP per token."""
    return 6.0 * model.hidden * model.vocab


def output_layer_flops_per_token(*, model: ModelSpec) -> float:
    """The output layer's training FLOPs per token: ``6 h V (1 + D)``, the main model's head and the shared
    head's pass in each of ``D`` multi-token-prediction modules (DeepSeek-V3 §2.2), all on the last stage.
    Example: Llama 3 8B: 3.15e9 FLOP per token; DeepSeek-V3 (D = 1): 2 x 5.56e9 = 1.11e10."""
    return (1.0 + model.mtp_layers) * output_head_flops_per_token(model=model)


def per_op_defined(model: ModelSpec) -> bool:
    """Whether ``recompute: per_op`` describes the model: a dense block with a gated MLP and multi-head or
    grouped-query attention calls its matmuls as torchtitan's Llama block does (``wq, wk, wv, wo, w1, w3, w2``),
    which is what ``per_op_recompute_flops_per_token`` counts. The one place of that rule: the layout rules refuse
    per_op elsewhere and the step does not price it there."""
    return model.moe is None and model.mla is None and model.gated_mlp


def recompute_flops_per_token(
    *, model: ModelSpec, seq_len: int, recompute: Num, projection_kept: Num = False
) -> Num:
    """Extra FLOPs per token spent recomputing activations, by policy code (none 0, selective 1, full 2, per_op 3).

    none: 0. selective: ``4 * L * h * s`` (the attention core's forward; Korthikanti et al. 2022 §4.3).
    full: ``2 (N_active - E) + 4 * L * h * s``, one more forward pass of the transformer blocks (Korthikanti
    et al. 2022 §5): the embedding and the output layer lie outside the checkpointed blocks (Megatron-Core,
    torchtitan) and are not run again, so the vocabulary matrices ``E = V h`` (tied) or ``2 V h`` (untied) are
    left out, as SC'21 equation (3) counts the logit layer three times where it counts the layers four.
    per_op: ``per_op_recompute_flops_per_token`` (``projection_kept``: compiled, with sequence-parallel TP).
    Example: GPT-3 175B (untied here), s = 2,048, full: 2 x (175e9 - 2 x 50,257 x 12,288) + 4 x 96 x 12,288 x
    2,048 = 3.572e11 FLOP per token.
    """
    attention_forward = attention_flops_per_token(model=model, seq_len=seq_len) / 3.0
    embeddings = (1.0 if model.tied_embeddings else 2.0) * model.vocab * model.hidden
    full = 2.0 * (model.active_params - embeddings) + attention_forward
    policy = where(recompute == 1, attention_forward, full)
    if per_op_defined(model):
        per_op = per_op_recompute_flops_per_token(model=model, projection_kept=projection_kept)
        policy = where(recompute == 3, per_op, policy)
    return where(recompute == 0, 0.0, policy)


def per_op_recompute_flops_per_token(*, model: ModelSpec, projection_kept: Num = False) -> Num:
    """The matmuls torchtitan's op-level selective checkpointing re-runs: ``2 L (kv h + q h + h f)`` per token.

    Its policy saves the output of every ``aten.mm`` of a block but every second one, counted per block, and of
    the attention kernel, and recomputes the rest. A Llama block calls ``wq, wk, wv, wo`` then ``w1, w3, w2``,
    so the key projection (``h x kv``), the output projection (``q x h``) and the MLP's up projection
    (``h x f``) run again, forward only (2 FLOPs a multiply-add); the attention core does not. ``q`` and ``kv``
    are the query and key widths (``heads x head_dim``, ``kv_heads x head_dim``). Defined for dense models with a
    gated MLP and multi-head or grouped-query attention (``solvers.layout_rules``).
    Compiled (torch.compile), the backward graph recomputes only what the backward reads: with sequence-parallel
    TP the saved reduce-scatter output stands in for the output projection's, which is not run again
    (``projection_kept``: ``2 L h (kv + f)``); without it the residual sum needs the projection's output.
    Source: torchtitan ``_apply_ac_to_transformer_block`` and ``_save_list`` (``torchtitan/models/llama3/
    parallelize_llama.py`` at 820504e; ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370); PyTorch's
    min-cut partitioner (``torch/_functorch/partitioners.py``) honours the policy's tags for what it saves.
    Example: Llama 3 8B (h 4,096, kv 1,024, f 14,336, 32 layers): 2 x 32 x 4,096 x (1,024 + 4,096 + 14,336)
    = 5.10e9 FLOP per token, 8.4% of its 6.11e10 model FLOPs at s = 8,192; 4.03e9 with the projection kept.
    """
    h = float(model.hidden)
    kv = h * kv_width_share(model=model)
    q = h * query_width_share(model=model)
    return 2.0 * model.layers * h * (kv + where(projection_kept, 0.0, q) + float(model.ffn_hidden))


def stage_layer_share(*, layers: int, pp: Num) -> Num:
    """Share of the model's layers on the busiest pipeline stage: ``ceil(L / pp) / L``.

    Example: 126 layers over 16 stages: 8 / 126 = 0.0635 (against 1/16 = 0.0625 for an even split).
    """
    busiest = -(-layers // pp)
    return busiest / float(layers)


def busiest_stage_layers(*, layers: int, pp: Num) -> Num:
    """Layers on the busiest stage: ``ceil(L / pp)``."""
    return -(-layers // pp)


def gemm_element_bytes(precision: str) -> float:
    """Bytes of one GEMM operand element at the training precision: FP8 1, FP32 4, BF16/FP16 2."""
    return {"fp8": 1.0, "fp32": 4.0}.get(precision, 2.0)


def gemm_intensity_flop_per_byte(*, rows: Num, inner: Num, cols: Num, element_bytes: float) -> Num:
    """Arithmetic intensity of one GEMM ``(rows x inner) @ (inner x cols)`` reading and writing each operand once.

    ``I = 2 M K N / (bytes * (M K + K N + M N))`` (Williams et al., 'Roofline', CACM 2009).
    Example: M = 8,192 tokens, K = 16,384, N = 53,248 / 8 = 6,656 in BF16: I = 3,000 FLOP/B, far above an
    H100's 989e12 x 0.54 / 3.35e12 = 159 FLOP/B balance point, so the GEMM is math-bound.
    """
    m = maximum(rows, 1.0)
    n = maximum(cols, 1.0)
    return (2.0 * m * inner * n) / (element_bytes * (m * inner + inner * n + m * n))


def math_time_s(*, flops: Num, rate_flops: float, intensity: Num, hbm_bytes_s: float) -> Num:
    """Roofline time of ``flops`` of GEMM work: ``flops / min(rate, I * HBM bandwidth)``.

    Example: 1e15 FLOP at 514e12 FLOP/s with I = 3,000 FLOP/B on 3.35e12 B/s: min(514e12, 1.0e16) -> 1.95 s.
    """
    effective = minimum(rate_flops, intensity * hbm_bytes_s)
    return flops / effective


ELEMENTWISE_HBM_PASSES = 4.0
"""HBM passes over each stored activation per forward + backward: written and read once in the forward pass,
its gradient written and read once in the backward pass; a recomputed forward adds two more."""


def elementwise_time_s(*, activation_bytes: Num, forward_rerun: Num, hbm_bytes_s: float) -> Num:
    """Time of the memory-bound (non-GEMM) work: layer norms, dropout, activation functions, softmax, residuals.

    These kernels do a few FLOPs per byte, so HBM bandwidth, not the tensor cores, sets their time:
    ``passes x activation bytes / HBM bandwidth`` with 4 passes (6 when a recompute policy runs the forward's
    element-wise ops again, ``forward_rerun``: full and per_op), over the
    activation bytes Korthikanti et al. 2022 §4 count per token and layer (``solvers.memory``). The attention
    score matrix counts only when it is materialised (unfused attention, ``training.fused_attention: false``,
    under every recompute policy); fused attention never writes it to HBM (Dao et al., FlashAttention, 2022).
    Example: GPT 1.7B (h = 2,304, a = 24, s = 2,048, no TP), full recompute: (34 h + 5 a s) = 324 kB per
    token-layer x 6 / 2.039e12 B/s = 0.95 us, against 3.0 us of GEMMs at 193 TFLOP/s: a third more time,
    which is why small models reach a lower share of peak (Narayanan et al. SC'21 Table 1: 44% vs 52%).
    """
    passes = ELEMENTWISE_HBM_PASSES + where(forward_rerun, 2.0, 0.0)
    return passes * activation_bytes / hbm_bytes_s


LOSS_PASSES = 6
"""HBM passes over the logits of one cross-entropy, forward and backward: log_softmax reads the logits and writes
the log-probabilities (2); nll_loss's backward writes their gradient (1); log_softmax's backward reads it and its
output and writes the logits' gradient (3). PyTorch's ``F.cross_entropy`` (``log_softmax`` then ``nll_loss``)."""


def replicated_loss_s(*, tokens: Num, vocab: int, tp: Num, element_bytes: float, hbm_bytes_s: float) -> Num:
    """Extra time of a loss computed on the whole vocabulary on every tensor-parallel rank
    (``training.tp_vocab_parallel: false``), against one split over the vocabulary (Megatron-Core's vocab-parallel
    cross-entropy, torchtitan's ``loss_parallel``): ``LOSS_PASSES x e x tokens x V x (1 - 1/tp) / HBM``.

    Source: KempnerForge ``scripts/train.py`` at 01b461a (``F.cross_entropy`` on the replicated logits of
    ``distributed/tensor_parallel.py``'s ``ColwiseParallel(output_layouts=Replicate())``). Example: 4 x 4,096
    tokens, V = 128,256, BF16, tp 4 on H200 (4.8 TB/s): 6 x 2 x 16,384 x 128,256 x 3/4 / 4.8e12 = 3.9 ms a
    microbatch.
    """
    return LOSS_PASSES * element_bytes * tokens * vocab * (1.0 - 1.0 / tp) / hbm_bytes_s
