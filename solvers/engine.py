"""The step engine: one training step's time budget, memory and traffic for a batch of layouts.

``check_layouts`` (the rules are in ``solvers.layout_rules``) says which layouts are valid and the first rule
each invalid one breaks; ``evaluate`` computes every figure of a step for all layouts at once, as numpy columns
(``StepColumns``). A single solve runs ``_step`` on one ``Layout`` of python ints; the design-space search runs
the same code on a ``LayoutBatch`` of a million layouts.

Composition (each term is documented, with its source, in the module that computes it)::

    compute_s   = busiest stage's FLOPs (model + recompute) / roofline rate        solvers.compute
                  + elementwise HBM time over its activations (4-6 passes)       solvers.compute, memory
                  rate = peak[precision] x efficiency x precision factor          catalog.calibration
                  heads on the last stage: busiest stage in layer times          effects.busiest_stage_s
    comm_s_x    = exchange x alone on the links its group crosses               solvers.exchanges
    hidden_x    = min(overlap_x * comm_s_x, window_x)                          seed 004 §5.4
                  EP: + what the shared experts' math hides beside the all-to-alls  exchanges.shared_expert_hidden_s
                  x compute_s / max(sum_x hidden_x, compute_s)   (all together never exceed compute)
    exposed_x   = comm_s_x - hidden_x
    compute_s  += 0.15 x sum_x hidden_x (communication kernels take SMs)     catalog.calibration
    bubble_s    = schedule's bubble on t_mb = compute_s / m                     solvers.pipeline
    step_s      = compute_s + bubble_s + sum_x exposed_x

Step effects (``solvers.effects``, each behind ``training.efficiency.effects.<name>``; all off in a bare
``TrainingSpec``): matrix shape scales the dense and expert GEMM rates, the attention core runs at its own
rate (and at the s/cp block's shape with context parallelism), the output layer and the multi-token-
prediction modules weigh on the last stage, MoE adds permutation traffic and the busiest expert rank's load
skew, compute waits for the slowest rank, ZeRO-3 gathers the weights again for a fully recomputed forward
pass, and FP8 training runs the attention core and the output layer at the BF16 rate.

Overlap windows (hidden communication never exceeds the compute it hides behind, seed 004 §5.4): TP and PP
hide behind the whole step's compute (MegaScale §3.2: TP/SP collectives fused with the neighbouring GEMMs,
pipeline sends posted asynchronously); CP behind the attention compute (ring/all-gather K/V overlapped
with attention blocks); EP behind the MoE layers' compute (DualPipe pairs, MegaScale-MoE §4), and with
``training.moe_shared_expert_overlap`` what is left of it behind the shared experts' math; DP behind one
microbatch's compute (gradients final only in the last one's backward, weights needed in the first one's
forward: MegaScale §3.2), or for ZeRO-3 with ``zero3_exchange: every_microbatch`` behind each microbatch's.

Other conventions (CONTRACT.md "Conventions fixed in v1" are binding): ``gpus = tp*cp*pp*dp``; experts are
carved from ``dp*cp`` and use ``expert_tp``; uneven stages are allowed and the busiest (``ceil(L/pp)`` layers)
sets the pace; traffic bytes are means over GPUs; bandwidths are achieved rates. Rank order is
``tp-cp-ep-dp-pp`` (Megatron-Core), so tensor groups are innermost and pipeline stages outermost. MFU counts
model FLOPs against the dense peak at the training precision (PaLM appendix B). Routed experts are laid out
``expert_tp-ep-edp-pp`` (Megatron-Core's expert grid), so an EP group has stride ``expert_tp``. Pipeline sends
cross the NIC whenever the job spans nodes (stages are outermost; the slowest boundary sets the pace).
Attention scores: ``training.fused_attention`` True (the default, and what None means) is FlashAttention-style
kernels: the ``s x s`` scores never reach HBM, for every recompute policy. False materialises them
(Megatron-LM before 2023): stored without recompute, written and read again by the recomputed forward with
``selective`` or ``full``. Either way a recompute policy only adds work, so it never makes a step faster
(``tests/solvers/test_step_properties.py``).

Worked example (``tests/solvers/test_engine.py``): Llama 3 405B on 16,384 H100, TP8/PP16/DP128, interleaved
(v = 8, one layer per chunk), ZeRO-3 with FP32 reduce-scatter, no recompute with fused attention, DP and PP
hidden at 0.9: compute 5.29 s, bubble 0.62 s, exposed TP 0.67 s, DP 0.15 s, PP 0.02 s -> step 6.76 s,
40.3% MFU (published 41%, Llama 3 Table 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers import collectives, compute, effects, exchanges, memory, pipeline, traffic
from solvers.catalog.attention_kernels import attention_kernel_ratio, generation_ratio
from solvers.catalog.calibration import OVERLAP_SM_SHARE, PRECISION_RATE_FACTOR, ZERO3_MAX_REUSE_DISTANCE
from solvers.catalog.fitted import family_of
from solvers.compute import Num, clip, maximum, minimum, where
from solvers.effects import TFLOPS
from solvers.layout import Layout
from solvers.layout_rules import check_layouts, layout_rule_codes, rule_masks, rule_message
from solvers.specs import ClusterSpec, LayoutBatch, ModelSpec, TrainingSpec
from solvers.step_columns import (
    DTYPES,
    FIELD_NAMES,
    FLOAT_NAMES,
    PLAIN_TYPES,
    ROW_TYPES,
    StepColumns,
    column,
)

# The rules live in solvers.layout_rules; the engine is where callers have always found them.
__all__ = ["StepColumns", "check_layouts", "evaluate", "evaluate_one", "layout_rule_codes"]


# ---------------------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------------------


def evaluate(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layouts: LayoutBatch
) -> StepColumns:
    """Every figure of one training step for each (valid) layout; see the module docstring.

    Invalid layouts (``check_layouts``) produce finite but meaningless numbers; callers evaluate only
    valid ones. A batch of one runs the same functions on python scalars (bit-identical, ~10x faster than
    numpy on length-1 arrays). Example: Llama 3 405B, 16,384 H100, TP8/PP16/DP128, 16M-token batch,
    s = 8,192 -> the DP exchange is 12.6 GB per GPU per step (seed 004 §5.3).
    """
    if len(layouts) == 1:
        values = _step(model=model, cluster=cluster, training=training, lay=Layout.of(layouts))
        # One array for every float column; each field is a length-1 view of it (cheaper than 36 arrays).
        floats = np.array([float(values[name]) for name in FLOAT_NAMES], dtype=np.float64).reshape(-1, 1)
        columns: dict[str, Any] = {name: floats[j] for j, name in enumerate(FLOAT_NAMES)}
        columns["microbatches"] = np.array([int(values["microbatches"])], dtype=np.int64)
        columns["fits"] = np.array([bool(values["fits"])], dtype=np.bool_)
        columns["roofline_bound"] = np.array([bool(values["roofline_bound"])], dtype=np.bool_)
        return StepColumns(**columns)
    values = _step(model=model, cluster=cluster, training=training, lay=layouts)
    return StepColumns(**{name: column(values[name], DTYPES[name], len(layouts)) for name in FIELD_NAMES})


def evaluate_one(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layout: Layout
) -> tuple[dict[str, float | int | bool] | None, str | None]:
    """Check and evaluate one layout, straight to python scalars.

    Returns ``(row, None)`` with ``row == evaluate(...).row(0)`` for the batch of this one layout (bit for
    bit: the same scalar arithmetic, without building 36 arrays to read them back), or ``(None, message)``
    naming the first broken rule as ``check_layouts`` does. This is the path of one report.
    """
    masks = rule_masks(model=model, cluster=cluster, training=training, lay=layout)
    for index, bad in enumerate(masks):
        if bad:
            return None, rule_message(index + 1, layout, model=model, cluster=cluster, training=training)
    values = _step(model=model, cluster=cluster, training=training, lay=layout)
    # _step lists FIELD_NAMES in order (tests/solvers/test_vectorised_consistency.py checks it)
    if tuple(map(type, values.values())) == ROW_TYPES:
        return values, None  # already python scalars of the row's types (the usual case)
    row: dict[str, float | int | bool] = {name: plain(values[name]) for name, plain in PLAIN_TYPES}
    return row, None


def _step(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, lay: Layout | LayoutBatch
) -> dict[str, Num]:
    """The step's figures for ``lay``: a ``LayoutBatch`` of arrays, or one ``Layout`` of python scalars."""
    acc = cluster.accelerator
    links = collectives.Links.of(cluster)
    precision = training.precision
    s = training.seq_len
    h = float(model.hidden)
    L = model.layers
    gpus = cluster.gpus

    if isinstance(lay, Layout):
        # A layout of ints that evaluate_one passes only once it keeps every rule: no clamp needed below.
        tp, pp, cp, ep, dp = lay.tp, lay.pp, lay.cp, lay.ep, lay.dp
        etp, b, recompute = lay.expert_tp, lay.microbatch_seqs, lay.recompute
    else:
        # A batch may hold layouts that break a rule (their figures are discarded): clamped, they stay finite.
        tp = maximum(lay.tp, 1)
        pp = maximum(lay.pp, 1)
        cp = maximum(lay.cp, 1)
        ep = maximum(lay.ep, 1)
        dp = maximum(lay.dp, 1)
        etp = maximum(lay.expert_tp, 1)
        b = maximum(lay.microbatch_seqs, 1)
        recompute = clip(lay.recompute, 0, 3)
    schedule = lay.schedule
    full_recompute, per_op = recompute == 2, recompute == 3  # per_op: torchtitan's op-level checkpointing

    global_tokens = float(training.global_batch_tokens)
    global_seqs = training.global_batch_tokens // s
    microbatches = maximum(global_seqs // (dp * b), 1)
    m = 1.0 * microbatches
    flush_mb = pipeline.flushes(microbatches=microbatches, f=training.pipeline_flush_microbatches)[0]

    # --- compute ---------------------------------------------------------------------------------------
    flops_per_token = compute.model_flops_per_token(model=model, seq_len=s)
    compiled = training.fused_elementwise is not False  # torch.compile: per_op's backward graph recomputes
    kept = compiled & lay.sequence_parallel & (tp > 1)  # per_op compiled: no output projection run again
    recompute_per_token = compute.recompute_flops_per_token(
        model=model, seq_len=s, recompute=recompute, projection_kept=kept
    )
    layers_busiest = compute.busiest_stage_layers(layers=L, pp=pp)
    stage_share = layers_busiest / float(L)
    layers_mean = L / pp
    tokens_per_gpu = global_tokens / (dp * tp * cp)
    hw_flops_gpu = (flops_per_token + recompute_per_token) * tokens_per_gpu * stage_share
    fx = training.effects
    output_flops_per_token = compute.output_layer_flops_per_token(model=model)
    mtp_flops_per_token = compute.mtp_block_flops_per_token(model=model, seq_len=s)

    # fp8_scope: in FP8 training the attention core and the output layer run at the BF16 rate.
    bf16_islands = fx.fp8_scope and precision == "fp8"
    peak, peak_bf16, rate, rate_bf16, half, core_half = effects.gemm_rates(
        peak_tflops=acc.peak_tflops,
        precision=precision,
        efficiency=training.compute_efficiency,
        default_factor=PRECISION_RATE_FACTOR.get(precision, (1.0, ""))[0],
        fp8_default_factor=PRECISION_RATE_FACTOR["fp8"][0],
        fx=fx,
        bf16_islands=bf16_islands,
    )
    fill: Num = 1.0
    hbm = acc.hbm_tb_s * TFLOPS
    gemm_bytes = compute.gemm_element_bytes(precision)
    act_e = exchanges.activation_element_bytes(precision=precision)
    microbatch_tokens = b * s / cp
    dense_intensity = compute.gemm_intensity_flop_per_byte(
        rows=microbatch_tokens, inner=h, cols=model.ffn_hidden / tp, element_bytes=gemm_bytes
    )
    expert_flop_share = 6.0 * compute.active_expert_params(model=model) / flops_per_token
    moe = model.moe
    # Effects (solvers.effects): the rate each GEMM family reaches and the busiest expert rank's load.
    dense_rate = rate
    if fx.matrix_shape:
        dense_rate = rate * effects.dense_shape_factor(
            rows=microbatch_tokens,
            hidden=h,
            ffn=float(model.ffn_hidden),
            tp=tp,
            mlp_matrices=compute.mlp_matrices(model=model),
            half=half,
            mlp_share=compute.dense_mlp_share(model=model),
        )
    attention_core_share = compute.attention_flops_per_token(model=model, seq_len=s) / flops_per_token
    attention_extra = 0.0
    if fx.context_parallel or fx.attention_core or bf16_islands:
        # its own rate (attention_core, attention_kernels), s/cp blocks (context_parallel), BF16 in FP8 (fp8_scope)
        core_rate = rate_bf16 * (fx.attention_rate_factor if fx.attention_core else 1.0)
        if fx.attention_core and fx.attention_kernels and training.fused_attention is not False:
            kernel = attention_kernel_ratio(training.attention_kernel, family_of(acc.catalog_ref))
            core_rate = core_rate * kernel * generation_ratio(acc.catalog_ref)
        if fx.context_parallel:
            core_rate = core_rate * effects.saturation(s / cp, core_half)
        attention_hw = hw_flops_gpu - where(per_op, recompute_per_token * tokens_per_gpu * stage_share, 0.0)
        attention_extra = attention_hw * attention_core_share * (1.0 / core_rate - 1.0 / dense_rate)
    expert_load = effects.expert_load(
        skew=fx.moe_skew if fx.moe_overhead else 0.0,
        capacity_factor=training.moe_capacity_factor,
        pad=training.moe_pad_to_capacity,
        forced=training.moe_force_balance,
        ep=ep,
    )
    if moe is not None:
        # expert_tp_exchange: a GPU's experts see etp/tp of its TP group's tokens (their copies gathered over etp)
        expert_rows = (
            microbatch_tokens * ep * moe.top_k / moe.experts * (etp / tp if fx.expert_tp_exchange else 1.0)
        )
        expert_intensity = compute.gemm_intensity_flop_per_byte(
            rows=expert_rows, inner=h, cols=moe.expert_ffn_hidden / etp, element_bytes=gemm_bytes
        )
        expert_rate = rate
        if fx.matrix_shape:
            expert_rate = rate * effects.expert_shape_factor(
                rows=expert_rows * expert_load,
                cols=moe.expert_ffn_hidden / etp,
                inner=h,
                half=half,
            )
        compute_s = compute.math_time_s(
            flops=hw_flops_gpu * (1.0 - expert_flop_share),
            rate_flops=dense_rate,
            intensity=dense_intensity,
            hbm_bytes_s=hbm,
        ) + compute.math_time_s(
            flops=hw_flops_gpu * expert_flop_share * expert_load,
            rate_flops=expert_rate,
            intensity=expert_intensity,
            hbm_bytes_s=hbm,
        )
        roofline_bound = (dense_intensity * hbm < rate) | (expert_intensity * hbm < rate)
        moe_share = moe.moe_layers / L
    else:
        compute_s = compute.math_time_s(
            flops=hw_flops_gpu, rate_flops=dense_rate, intensity=dense_intensity, hbm_bytes_s=hbm
        )
        roofline_bound = dense_intensity * hbm < rate
        moe_share = 0.0
    # Memory-bound elementwise work over the activations of every microbatch on the busiest stage.
    scores = memory.scores_materialised(recompute=recompute, fused_attention=training.fused_attention)
    traffic_per_token_layer = memory.activation_traffic_bytes_per_token_layer(
        model=model,
        seq_len=s,
        tp=tp,
        expert_tp=etp,
        sequence_parallel=lay.sequence_parallel,
        scores=scores,
        expert_gather=fx.expert_tp_exchange,
        element_bytes=act_e,
    )
    # ``layer_s``: what each layer of the stage costs besides its math (the pipeline_ends effect weighs it).
    layer_s = compute.elementwise_time_s(
        activation_bytes=m * microbatch_tokens * layers_busiest * traffic_per_token_layer,
        forward_rerun=full_recompute | per_op,
        hbm_bytes_s=hbm,
    )
    compute_s = compute_s + attention_extra  # 0.0 unless an attention effect priced the core apart
    if fx.unfused_elementwise and training.fused_elementwise is False:
        # Eager mode: every norm, rotary and SwiGLU op reads and writes HBM on its own.
        layer_s = layer_s + effects.unfused_elementwise_time_s(
            bytes_per_pass=m
            * microbatch_tokens
            * layers_busiest
            * effects.model_unfused_bytes_per_token_layer(
                model=model,
                tp=tp,
                expert_split=tp if fx.expert_tp_exchange else etp,
                sequence_parallel=lay.sequence_parallel,
                element_bytes=act_e,
            ),
            forward_rerun=full_recompute | per_op,
            hbm_bytes_s=hbm,
        )
    if fx.fp8_casts and precision == "fp8":  # GEMM inputs and output gradients quantised through HBM
        layer_s = layer_s + effects.fp8_cast_time_s(
            elements=effects.fp8_cast_elements_per_token_layer(
                model=model,
                tp=tp,
                expert_tp=etp,
                sequence_parallel=lay.sequence_parallel,
                expert_gather=fx.expert_tp_exchange,
                fp8_dispatch=training.moe_fp8_dispatch,
            ),
            token_layers=m * microbatch_tokens * layers_busiest,
            forward_rerun=full_recompute | per_op,
            hbm_bytes_s=hbm,
        )
    if bf16_islands and not fx.pipeline_ends:
        # Without pipeline_ends the output layer is spread evenly; with it busiest_stage_s prices its BF16 rate.
        compute_s = compute_s + effects.output_layer_bf16_extra_s(
            output_flops=output_flops_per_token * tokens_per_gpu * stage_share,
            dense_rate=dense_rate,
            rate=rate,
            rate_bf16=rate_bf16,
        )
    if fx.moe_overhead and moe is not None:
        permuted = effects.permutation_bytes(
            tokens=m * microbatch_tokens / tp,
            top_k=moe.top_k,
            hidden=h,
            element_bytes=act_e,
            moe_layers=layers_busiest * moe_share,
        )
        layer_s = layer_s + permuted / hbm
    if fx.expert_kernels and moe is not None:
        layer_s = layer_s + effects.expert_kernels_s(
            local_experts=moe.experts / ep,
            moe_layers=layers_busiest * moe_share,
            microbatches=m,
            per_expert_s=fx.expert_kernel_s,
            pays_share=effects.pays_padded_share(
                pad=training.moe_pad_to_capacity, dispatcher=training.moe_token_dispatcher
            ),
            padded_share=fx.expert_kernel_padded_share,
        )
    if fx.pipeline_ends:  # output layer (own rate) and MTP modules on the last stage; fill crosses the rest
        compute_s, fill = effects.busiest_stage_s(
            flop_s=compute_s,
            layer_s=layer_s,
            layers=L,
            pp=pp,
            per_token=(flops_per_token, recompute_per_token, output_flops_per_token, mtp_flops_per_token),
            output_rate_ratio=rate / rate_bf16,
            even_split=training.pipeline_split == "even",
            paired_ends=schedule == pipeline.DUALPIPE,
            mtp_layers=model.mtp_layers,
        )
    else:
        compute_s = compute_s + layer_s
    # training.tp_vocab_parallel false: the loss whole on every TP rank, the logits gathered, the embedding unsplit
    replicated_vocab = not training.tp_vocab_parallel
    if replicated_vocab:
        compute_s = compute_s + m * compute.replicated_loss_s(
            tokens=microbatch_tokens,
            vocab=model.vocab,
            tp=tp,
            element_bytes=act_e,
            hbm_bytes_s=hbm,
        )
    if fx.stragglers:
        compute_s = compute_s * effects.straggler_factor(ranks=gpus, jitter=fx.jitter)
    microbatch_s = compute_s / m

    # --- exchanges -------------------------------------------------------------------------------------
    activation = microbatch_tokens * h * act_e
    tp_x = exchanges.tp_exchange(
        tp=tp,
        expert_tp=etp,
        activation_bytes=activation,
        microbatches=microbatches,
        layers_busiest=layers_busiest,
        layers_mean=layers_mean,
        moe_share=moe_share,
        full_recompute=full_recompute,
        links=links,
        expert_gather=fx.expert_tp_exchange and moe is not None,
        shared_experts=moe is not None and moe.shared_experts > 0,
        per_op_recompute=per_op,
        sequence_parallel=lay.sequence_parallel,
        fp8_gather=fx.fp8_tp_gather and precision == "fp8",
    )
    if replicated_vocab:
        logits = exchanges.logits_gather(
            tp=tp,
            logits_bytes=microbatch_tokens * model.vocab * act_e,
            microbatches=microbatches,
            links=links,
        )
        tp_x = exchanges.joined(tp_x, logits)
    kv_heads_per_rank = minimum(tp, model.kv_heads)
    kv_bytes = (b * s) * 2.0 * h * compute.kv_width_share(model=model) * act_e / kv_heads_per_rank
    cp_x = exchanges.cp_exchange(
        cp=cp,
        tp=tp,
        kv_bytes=kv_bytes,
        microbatches=microbatches,
        layers_busiest=layers_busiest,
        layers_mean=layers_mean,
        full_recompute=full_recompute,
        links=links,
    )
    pp_x = exchanges.pp_exchange(
        pp=pp,
        message_bytes=activation / tp,
        microbatches=microbatches,
        sends_per_microbatch=pipeline.pipeline_sends_per_microbatch(
            schedule=schedule, virtual_stages=lay.virtual_stages
        ),
        crosses_nodes=(gpus > cluster.gpus_per_node) & (tp * cp * dp < gpus),
        links=links,
    )

    copies = pipeline.parameter_copies(schedule=schedule)
    dense_params, expert_params = memory.dense_and_expert_params(model=model)
    w_bytes = memory.weight_bytes_per_param(precision=precision)
    grad_bytes = where(lay.grad_reduce_fp32, 4.0, w_bytes)
    gather_w = w_bytes
    expert_gather_b: Num | None = None
    if training.fp8_param_gather:  # Transformer Engine's layers gather FP8; embeddings and output layer BF16
        gather_w = exchanges.fp8_gather_bytes(
            weight_bytes=w_bytes, model=model, dense_params=dense_params, pp=pp
        )
        expert_gather_b = exchanges.dp_shares(
            zero_stage=lay.zero_stage,
            reshard_after_forward=lay.fsdp_reshard_after_forward,
            grad_bytes=grad_bytes,
            weight_bytes=1.0,
        )[1]
    scatter_b, gather_b = exchanges.dp_shares(
        zero_stage=lay.zero_stage,
        reshard_after_forward=lay.fsdp_reshard_after_forward,
        grad_bytes=grad_bytes,
        weight_bytes=gather_w,
    )
    if fx.zero3_recompute_regather:
        # one checkpointed block's parameters on this GPU (a layer's, plus its experts) against the reuse distance
        block_params = dense_params / L / tp
        if moe is not None:
            block_params = block_params + expert_params / max(moe.moe_layers, 1) / (ep * etp)
        regather = exchanges.recompute_regather_bytes_per_param(
            zero_stage=lay.zero_stage,
            reshard_after_forward=lay.fsdp_reshard_after_forward,
            full_recompute=full_recompute,
            weight_bytes=1.0,
            block_params=block_params,
            reuse_distance=ZERO3_MAX_REUSE_DISTANCE[0],
        )  # in weights: bytes a parameter per byte a weight
        gather_b = gather_b + regather * gather_w
        if expert_gather_b is not None:
            expert_gather_b = expert_gather_b + regather

    # the input embedding whole on every TP rank (tp_vocab_parallel false), priced on the busiest stage
    unsplit_embedding = model.vocab * h * (1.0 - 1.0 / tp) if replicated_vocab else 0.0
    dense_mean = copies * dense_params / (tp * pp)
    dense_busy = copies * dense_params * stage_share / tp
    if replicated_vocab:
        dense_mean = dense_mean + copies * unsplit_embedding / pp
        dense_busy = dense_busy + copies * unsplit_embedding
    expert_split = 1.0 * ep * etp
    expert_group = maximum((tp * cp * dp) // (ep * etp), 1)
    expert_mean = copies * expert_params / (pp * expert_split)
    expert_busy = copies * expert_params * stage_share / expert_split
    dp_groups = {
        "dense_params_mean": dense_mean,
        "dense_params_busiest": dense_busy,
        "dense_group": dp * cp,
        "dense_stride": tp,
        "expert_params_mean": expert_mean if moe is not None else None,
        "expert_params_busiest": expert_busy,
        "expert_group": expert_group,
        "expert_stride": ep * etp,
        "buckets": layers_busiest,
        "links": links,
    }
    # ZeRO-3 accumulating: the whole exchange in each microbatch, or only its gathers (FSDP2 without gradient sync)
    every_mb = training.zero3_exchange != "once_per_step"
    dp_rounds: Num = where(lay.zero_stage >= 3, m, 1.0) if every_mb else 1.0
    dp_x = exchanges.dp_exchange(
        **dp_groups, scatter_bytes=scatter_b, gather_bytes=gather_b, expert_gather_bytes=expert_gather_b
    )
    if training.zero3_exchange == "gather_every_microbatch":
        gathers = exchanges.dp_exchange(
            **dp_groups, scatter_bytes=0.0, gather_bytes=gather_b, expert_gather_bytes=expert_gather_b
        )
        dp_x = exchanges.gathers_every_microbatch(once=dp_x, gathers=gathers, rounds=dp_rounds)
    elif every_mb:
        dp_x = exchanges.every_microbatch(dp_x, dp_rounds)
    per_tensor_s: Num = 0.0
    if fx.zero3_per_tensor_collectives and moe is None:
        # DeepSpeed's ZeRO-3 issues one synchronised ring collective per parameter tensor (dense models).
        per_tensor_s = where(
            lay.zero_stage >= 3,
            exchanges.per_tensor_collectives_extra_s(
                tensor_elements=exchanges.layer_tensor_elements(
                    hidden=h,
                    ffn=float(model.ffn_hidden),
                    q_share=compute.query_width_share(model=model),
                    kv_share=compute.kv_width_share(model=model),
                    gated_mlp=model.gated_mlp,
                    tp=tp,
                ),
                group=dp * cp,
                stride=tp,
                gathers=gather_b / gather_w,
                weight_bytes=gather_w,
                grad_bytes=grad_bytes,
                layers=layers_busiest,
                microbatches=dp_rounds,
                links=links,
            ),
            0.0,
        )
        dp_x = dp_x._replace(time_s=dp_x.time_s + per_tensor_s)
    if moe is not None:
        tokens_per_rank = microbatch_tokens / tp
        dispatch_e = 1.0 if training.moe_fp8_dispatch else act_e
        ep_x = exchanges.ep_exchange(
            ep=ep,
            stride=etp,
            dispatch_bytes=tokens_per_rank * moe.top_k * h * dispatch_e,
            combine_bytes=tokens_per_rank * moe.top_k * h * act_e,
            microbatches=microbatches,
            moe_layers_busiest=layers_busiest * moe_share,
            moe_layers_mean=layers_mean * moe_share,
            full_recompute=full_recompute,
            links=links,
            per_node=collectives.NodeDispatch.of(moe) if training.moe_dispatch == "per_node" else None,
            expert_tp=etp,
            gather=fx.expert_tp_exchange,
        )
        # the busiest rank's tokens (and a padded capacity's empty rows) cross the all-to-all as they reach the GEMMs
        ep_x = ep_x._replace(
            time_s=ep_x.time_s * expert_load,
            dispatch_s=ep_x.dispatch_s * expert_load,
            combine_s=ep_x.combine_s * expert_load,
        )
    else:
        ep_x = exchanges.Exchange(bytes_per_gpu=0.0, time_s=0.0, nic_bytes=0.0, burst_bytes=0.0)

    # --- overlap: hidden never exceeds the compute it hides behind (seed 004 §5.4) -----------------------
    ov = training.overlap
    hidden_tp = minimum(ov.tp * tp_x.time_s, compute_s)
    hidden_cp = minimum(ov.cp * cp_x.time_s, compute_s * attention_core_share)
    hidden_pp = minimum(ov.pp * pp_x.time_s, compute_s)
    # the per-tensor collectives wait on torch.cuda.synchronize(): no overlap hides them
    hidden_dp = minimum(ov.dp * (dp_x.time_s - per_tensor_s), microbatch_s * dp_rounds)
    unpaired: Num = 0.0  # moe_overhead: Megatron-Core hides a dispatch only in the steady 1F1B phase
    if fx.moe_overhead and moe is not None:
        unpaired = pipeline.unpaired_share(
            schedule=schedule, pp=pp, microbatches=1.0 * flush_mb, virtual_stages=lay.virtual_stages
        )
    hidden_ep = minimum(ov.ep * (1.0 - unpaired) * ep_x.time_s, compute_s * moe_share)
    if training.moe_shared_expert_overlap and moe is not None:
        # the shared experts' math on its own stream, beside each MoE layer's all-to-alls (forward, backward and a
        # fully recomputed forward), within the MoE layers' compute like any hidden exchange
        left = 1.0 - ov.ep * (1.0 - unpaired)
        shared_forward_flops = 2.0 * compute.shared_expert_params(model=model) * tokens_per_gpu * stage_share
        shared = exchanges.shared_expert_hidden_s(
            dispatch_s=left * ep_x.dispatch_s,
            combine_s=left * ep_x.combine_s,
            forward_math_s=shared_forward_flops / dense_rate,
            matrices=compute.mlp_matrices(model=model),
            full_recompute=full_recompute,
        )
        hidden_ep = minimum(hidden_ep + shared, compute_s * moe_share)
    # Together the hidden exchanges never exceed the compute they hide behind either: each window above is a
    # share of the same compute, so when their sum would pass it every hidden share shrinks in proportion
    # (else extra compute, such as recomputation, could shorten a communication-bound step); 1.0 uncapped.
    hidden_sum = hidden_tp + hidden_cp + hidden_pp + hidden_dp + hidden_ep
    cap = compute_s / maximum(hidden_sum, compute_s)
    hidden_tp = hidden_tp * cap
    hidden_cp = hidden_cp * cap
    hidden_pp = hidden_pp * cap
    hidden_dp = hidden_dp * cap
    hidden_ep = hidden_ep * cap
    exposed_tp = tp_x.time_s - hidden_tp
    exposed_cp = cp_x.time_s - hidden_cp
    exposed_pp = pp_x.time_s - hidden_pp
    exposed_dp = dp_x.time_s - hidden_dp
    exposed_ep = ep_x.time_s - hidden_ep
    # Hidden communication is not free: its kernels occupy SMs that the math would use, so compute runs
    # slower while it is in flight (DeepSeek-V3 §3.2.2: 20 of 132 SMs run the all-to-all).
    hidden = hidden_tp + hidden_cp + hidden_pp + hidden_dp + hidden_ep
    compute_s = compute_s + OVERLAP_SM_SHARE[0] * minimum(hidden, compute_s)
    microbatch_s = compute_s / m

    # --- pipeline ----------------------------------------------------------------------------------------
    bubble = pipeline.step_bubble_s(
        schedule=schedule,
        pp=pp,
        microbatches=microbatches,
        flush=training.pipeline_flush_microbatches,
        virtual_stages=lay.virtual_stages,
        microbatch_s=microbatch_s * fill,  # the fill and drain cross the other stages
        recompute_forward_share=recompute_per_token / (flops_per_token / 3.0),
    )
    bubble_frac = pipeline.bubble_fraction(bubble_s=bubble, compute_s=compute_s)
    step_s = compute_s + bubble + exposed_tp + exposed_cp + exposed_pp + exposed_dp + exposed_ep

    step_flops = flops_per_token * global_tokens
    denominator = step_s * gpus
    mfu = step_flops / (denominator * peak)
    mfu_bf16 = step_flops / (denominator * peak_bf16)
    hfu = (flops_per_token + recompute_per_token) * global_tokens / (denominator * peak)

    # --- memory ------------------------------------------------------------------------------------------
    weights, grads, optim = memory.model_state_bytes(
        dense_params_per_gpu=dense_params * stage_share / tp + unsplit_embedding,  # + 0.0: bit for bit
        expert_params_per_gpu=expert_params * stage_share / expert_split,
        dense_shard=dp * cp,
        expert_shard=expert_group,
        zero_stage=lay.zero_stage,
        grad_reduce_fp32=lay.grad_reduce_fp32,
        precision=precision,
        optimizer=training.optimizer,
        copies=copies,
        layers_on_stage=layers_busiest,
    )
    in_flight = pipeline.microbatches_in_flight(
        schedule=schedule, pp=pp, microbatches=flush_mb, virtual_stages=lay.virtual_stages
    )
    activations = memory.activation_bytes(
        model=model,
        seq_len=s,
        microbatch_tokens=microbatch_tokens,
        tp=tp,
        expert_tp=etp,
        sequence_parallel=lay.sequence_parallel,
        recompute=memory.memory_policy(recompute=recompute, fused_attention=training.fused_attention),
        layers_on_stage=layers_busiest,
        in_flight=in_flight,
        scores=scores,
        expert_gather=fx.expert_tp_exchange,
        compiled=compiled,
        element_bytes=act_e,
    )
    total = weights + grads + optim + activations
    capacity = acc.hbm_gb * 1e9

    # --- traffic -----------------------------------------------------------------------------------------
    nic_bytes = tp_x.nic_bytes + cp_x.nic_bytes + pp_x.nic_bytes + dp_x.nic_bytes + ep_x.nic_bytes
    duty = traffic.nic_duty_cycle(nic_bytes=nic_bytes, nic_gb_s=links.out_gb_s, step_s=step_s)
    burst = maximum(
        maximum(maximum(tp_x.burst_bytes, cp_x.burst_bytes), maximum(pp_x.burst_bytes, dp_x.burst_bytes)),
        ep_x.burst_bytes,
    )

    return {
        "microbatches": microbatches,
        "model_flops_per_token": flops_per_token,
        "compute_s": compute_s,
        "comm_s_tp": tp_x.time_s,
        "comm_s_cp": cp_x.time_s,
        "comm_s_pp": pp_x.time_s,
        "comm_s_dp": dp_x.time_s,
        "comm_s_ep": ep_x.time_s,
        "exposed_comm_s_tp": exposed_tp,
        "exposed_comm_s_cp": exposed_cp,
        "exposed_comm_s_pp": exposed_pp,
        "exposed_comm_s_dp": exposed_dp,
        "exposed_comm_s_ep": exposed_ep,
        "bubble_s": bubble,
        "bubble_fraction": bubble_frac,
        "step_s": step_s,
        "tokens_per_s": global_tokens / step_s,
        "mfu": mfu,
        "mfu_bf16": mfu_bf16,
        "hfu": hfu,
        "bytes_per_gpu_tp": tp_x.bytes_per_gpu,
        "bytes_per_gpu_cp": cp_x.bytes_per_gpu,
        "bytes_per_gpu_pp": pp_x.bytes_per_gpu,
        "bytes_per_gpu_dp": dp_x.bytes_per_gpu,
        "bytes_per_gpu_ep": ep_x.bytes_per_gpu,
        "nic_duty_cycle": duty,
        "burst_bytes": burst,
        "weights_bytes": weights,
        "grads_bytes": grads,
        "optimizer_bytes": optim,
        "activations_bytes": activations,
        "total_bytes": total,
        "capacity_bytes": capacity,
        "fits": total <= capacity,
        "gpu_busy_fraction": compute_s / step_s,
        "roofline_bound": roofline_bound,
    }
