"""The training part's rows of the field table (``solvers.inputs.fields`` assembles the table in document
order): the run's length, batch, precision, MoE routing, layout, efficiency, step effects and checkpoint."""

from __future__ import annotations

from solvers.catalog.attention_kernels import ATTENTION_KERNELS
from solvers.inputs.rows import (
    MAX_CHECKPOINT_INTERVAL_H,
    MAX_EXPERTS,
    MAX_GLOBAL_BATCH_TOKENS,
    MAX_GPUS,
    MAX_MICROBATCH_SEQS,
    MAX_SEQ_LEN,
    MAX_TOTAL_TOKENS,
    MAX_VIRTUAL_STAGES,
    MAX_ZERO_STAGE,
    MIN_CHECKPOINT_INTERVAL_H,
    MIN_EFFICIENCY,
    choice,
    flag,
    integer,
    layout_row,
    num,
    obj,
    overlap_row,
)
from solvers.inputs.table import Field
from solvers.specs import (
    EFFECT_DOCUMENT_DEFAULTS,
    EFFECT_SOURCES,
    GOODPUT_LEDGERS,
    GRAD_REDUCE_DTYPES,
    INTERVAL_METHODS,
    MOE_DISPATCHES,
    MOE_TOKEN_DISPATCHERS,
    OPTIMIZERS,
    PIPELINE_SPLITS,
    PRECISIONS,
    RECOMPUTE_POLICIES,
    SCHEDULES,
    ZERO3_EXCHANGES,
)

# The step effects of solvers.effects (docs/CONVENTIONS.md "Step effects"); false turns one off, and with all
# of them off the engine is the hand-calibrated model of solvers.catalog.calibration.
_EFFECTS = EFFECT_SOURCES  # (name, source) of each switch: the fields of solvers.specs.EffectsSpec


_LAYOUT_FIELDS: tuple[Field, ...] = (
    obj("training.layout", or_const="auto"),
    layout_row("tp", 1, MAX_GPUS, 1, "convention: no tensor parallelism unless given"),
    layout_row("pp", 1, MAX_GPUS, 1, "convention: no pipeline parallelism unless given"),
    layout_row("cp", 1, MAX_GPUS, 1, "convention: no context parallelism unless given"),
    layout_row("ep", 1, MAX_GPUS, 1, "convention: no expert parallelism unless given"),
    integer("training.layout.dp", 1, MAX_GPUS, nullable=True),
    layout_row(
        "microbatch_seqs",
        1,
        MAX_MICROBATCH_SEQS,
        1,
        "convention: one sequence per microbatch (Megatron-LM default)",
        "sequences",
    ),
    choice(
        "training.layout.schedule",
        SCHEDULES,
        "1f1b",
        source="convention: 1F1B (PipeDream-Flush, Narayanan et al. 2021), Megatron-LM's default",
    ),
    layout_row("virtual_stages", 1, MAX_VIRTUAL_STAGES, 1, "convention: one model chunk per pipeline stage"),
    flag(
        "training.layout.sequence_parallel",
        default=True,
        source="convention: sequence parallelism with TP (Korthikanti et al. 2022)",
    ),
    layout_row(
        "zero_stage",
        0,
        MAX_ZERO_STAGE,
        1,
        "convention: optimizer state sharded over DP (ZeRO-1, Megatron distributed optimizer)",
    ),
    flag(
        "training.layout.fsdp_reshard_after_forward",
        default=True,
        source="CONTRACT.md v1: FSDP re-gathers parameters for the backward pass",
    ),
    integer("training.layout.expert_tp", 1, MAX_GPUS, nullable=True),
    choice(
        "training.layout.recompute",
        RECOMPUTE_POLICIES,
        "none",
        source="convention: no activation recomputation unless given",
    ),
    choice(
        "training.layout.grad_reduce_dtype",
        GRAD_REDUCE_DTYPES,
        "bf16",
        source="convention: gradients reduced in BF16",
    ),
)

TRAINING_FIELDS: tuple[Field, ...] = (
    # --- training --------------------------------------------------------------------------------------
    obj("training"),
    integer("training.seq_len", 1, MAX_SEQ_LEN, "tokens"),
    integer("training.global_batch_tokens", 1, MAX_GLOBAL_BATCH_TOKENS, "tokens", nullable=True),
    integer("training.global_batch_seqs", 1, MAX_GLOBAL_BATCH_TOKENS, "sequences", nullable=True),
    num(
        "training.total_tokens",
        1,
        MAX_TOTAL_TOKENS,
        "tokens",
        nullable=True,
        default=None,
        source="none: time-based figures use economics.job_days or a 30-day window",
    ),
    choice("training.precision", PRECISIONS, "bf16", source="convention: BF16 mixed precision"),
    choice(
        "training.optimizer",
        OPTIMIZERS,
        "adam",
        source="convention: Adam (Kingma & Ba 2015), mixed precision",
    ),
    # Fused attention is the default of every current training stack: FlashAttention (Dao et al. 2022) is
    # what Megatron-Core, PyTorch's scaled_dot_product_attention and Transformer Engine run on A100 and later
    # GPUs. Runs from before 2023 (Megatron-LM SC'21, BLOOM, OPT) materialised the scores and say ``false``.
    flag(
        "training.fused_attention",
        default=True,
        source="convention: fused attention (FlashAttention, Dao et al. 2022; the default of Megatron-Core, "
        "PyTorch scaled_dot_product_attention and Transformer Engine): the s x s score matrix never reaches "
        "HBM",
    ),
    # Fused elementwise kernels: Megatron-Core and Transformer Engine ship fused norm, rotary and SwiGLU kernels,
    # torchtitan fuses them under torch.compile; PyTorch eager runs (torchtitan's ``compile = false``) say false.
    flag(
        "training.fused_elementwise",
        default=True,
        source="convention: fused normalisation, rotary-embedding and activation kernels (torch.compile; "
        "Megatron-Core and Transformer Engine fused kernels); false = PyTorch eager, one kernel per op",
    ),
    # The fused-attention implementation: FlashAttention-2 unless a source states or implies another
    # (Transformer Engine, under Megatron-Core and NeMo, selects cuDNN fused attention on Hopper and later).
    choice(
        "training.attention_kernel",
        ATTENTION_KERNELS,
        "flash2",
        source="convention: FlashAttention-2 (Dao 2023; PyTorch scaled_dot_product_attention's flash backend); "
        "cudnn = cuDNN fused attention (Transformer Engine's FusedAttention, preferred on Hopper and later), "
        "flash3 = FlashAttention-3 (Shah et al. 2024)",
    ),
    # How layers are assigned to pipeline stages: balanced unless a source states or implies an even split
    # (Megatron-LM split L/p layers per stage until uneven first and last stages, September 2024, and
    # account_for_loss_in_pipeline_split, February 2025).
    choice(
        "training.pipeline_split",
        PIPELINE_SPLITS,
        "balanced",
        source="convention: balanced, a stage planner moves layers away from the stage holding the output layer "
        "(Llama 3 §3.3.2; Megatron-Core account_for_loss_in_pipeline_split); even = ceil(L/p) layers per stage and "
        "the rest on the last (L/p each when p divides L), the "
        "output layer on top of the last (Megatron-LM before September 2024)",
    ),
    # How a TP group treats the vocabulary: split, as Megatron-Core and torchtitan's loss_parallel do.
    flag(
        "training.tp_vocab_parallel",
        default=True,
        source="convention: the embedding, the output layer and the loss split over the vocabulary across TP "
        "(Megatron-Core's VocabParallelEmbedding and vocab_parallel_cross_entropy; torchtitan's loss_parallel); "
        "false = the input embedding replicated on every TP rank and the output layer's logits all-gathered for "
        "a cross-entropy on the whole vocabulary on every rank (KempnerForge's tensor_parallel.py at 01b461a)",
    ),
    # How many microbatches one pipeline flush runs: all of the step's unless a source states a loop of
    # schedules (torch.distributed.pipelining's schedule.step per gradient-accumulation step).
    integer(
        "training.pipeline_flush_microbatches",
        1,
        MAX_MICROBATCH_SEQS,
        nullable=True,
        default=None,
        source="convention: every microbatch of the step in one pipeline flush (Megatron-Core's "
        "forward_backward_func over num_microbatches; Narayanan et al. SC'21 §2.2); n = a flush of n microbatches "
        "at a time, the fill and drain paid once per flush (a gradient-accumulation loop around "
        "torch.distributed.pipelining's schedule.step, whose n_microbatches is the local batch over the microbatch)",
    ),
    # When ZeRO-3 exchanges parameters and gradients in a step of several microbatches: once per step unless a
    # source states or implies a gradient-accumulation loop that gathers and reduces again each microbatch.
    choice(
        "training.zero3_exchange",
        ZERO3_EXCHANGES,
        "once_per_step",
        source="convention (CONTRACT.md v1): ZeRO-3 gathers the parameters and reduce-scatters the gradients once "
        "per step (a pipeline schedule over FSDP2, Megatron's distributed optimizer); every_microbatch = again in "
        "every microbatch, as PyTorch FSDP (FULL_SHARD or SHARD_GRAD_OP, without no_sync), Megatron-FSDP "
        "(optim_grads_params) and DeepSpeed ZeRO-3 do in a gradient-accumulation loop; gather_every_microbatch = "
        "the parameters gathered in every microbatch and the gradients reduce-scattered once a step, as FSDP2 "
        "does with set_requires_gradient_sync(False) on all but the last microbatch and its default resharding",
    ),
    choice(
        "training.moe_dispatch",
        MOE_DISPATCHES,
        "per_expert",
        source="convention: per_expert, one copy of a token per routed expert on another node crosses the NIC "
        "(Megatron-Core's all-to-all token dispatcher); per_node = one copy per target node over the NIC, "
        "forwarded inside the node over the scale-up link (DeepSeek-V3 §3.2.2; DeepEP's internode kernels, "
        "Megatron-Core's flex dispatcher)",
    ),
    # How routed tokens load the experts and travel: as the learned router and Megatron-Core send them by default.
    num(
        "training.moe_capacity_factor",
        0,
        MAX_EXPERTS,
        excl=True,
        nullable=True,
        default=None,
        source="convention: dropless routing, no expert capacity (Megatron-Core's default, "
        "moe_expert_capacity_factor None; DeepSeek-V3 §2.1.2 drops no token); a factor c caps the tokens an "
        "expert takes at c times the mean and drops the rest",
    ),
    flag(
        "training.moe_pad_to_capacity",
        default=False,
        source="convention: an expert computes the tokens routed to it; true = every expert's input padded to "
        "its capacity (Megatron-Core's moe_pad_expert_input_to_capacity; NeMo's MegatronTokenDropCallback)",
    ),
    flag(
        "training.moe_force_balance",
        default=False,
        source="convention: tokens go where the learned router sends them; true = the router bypassed for "
        "benchmarks, balanced in expectation and priced at the mean load (Megatron-Core's "
        "moe_router_force_load_balancing, random logits)",
    ),
    choice(
        "training.moe_token_dispatcher",
        MOE_TOKEN_DISPATCHERS,
        "alltoall",
        source="convention: Megatron-Core's all-to-all token dispatcher (moe_token_dispatcher_type 'alltoall', "
        "the Megatron-Bridge models' default; the all-gather dispatcher is priced alike); flex = "
        "MoEFlexTokenDispatcher over DeepEP or HybridEP (moe_flex_dispatcher_backend), whose dropless dispatch "
        "pays the padded share of the time per local expert (docs/CONVENTIONS.md, expert_kernels)",
    ),
    flag(
        "training.moe_fp8_dispatch",
        default=False,
        source="convention: the routed tokens dispatched in the activations' dtype, BF16 (Megatron-Core's "
        "dispatchers: moe_dispatch_fwd_dtype 'bf16'); true = in FP8, 1 byte an element, the combine in BF16 "
        "(DeepSeek-V3 §3.3.2); needs training.precision fp8",
    ),
    flag(
        "training.fp8_param_gather",
        default=False,
        source="convention: the weights all-gathered in BF16, 2 bytes (Megatron-Core's default, and what it does "
        "with MXFP8 weights); true = per-tensor scaled FP8 weights all-gathered in FP8, 1 byte, the embeddings and "
        "output layer in BF16 (Megatron-Core's --fp8-param-gather; NeMo's fp8_param_gather, formerly fp8_params); "
        "needs training.precision fp8",
    ),
    flag(
        "training.moe_shared_expert_overlap",
        default=False,
        source="convention: the shared experts run in series with the routed tokens' all-to-alls (Megatron-Core's "
        "default); true = on their own stream beside the dispatch and the combine (moe_shared_expert_overlap), "
        "hiding up to their math of the exchange; nothing to hide without shared experts",
    ),
    *_LAYOUT_FIELDS,
    obj("training.efficiency"),
    num("training.efficiency.compute", MIN_EFFICIENCY, 1, "fraction", nullable=True),
    obj("training.efficiency.overlap"),
    *(overlap_row(dim) for dim in ("tp", "cp", "pp", "dp", "ep")),
    obj("training.efficiency.effects"),
    *(
        flag(f"training.efficiency.effects.{name}", default=EFFECT_DOCUMENT_DEFAULTS[name], source=source)
        for name, source in _EFFECTS
    ),
    obj("training.checkpoint"),
    num(
        "training.checkpoint.interval_h",
        MIN_CHECKPOINT_INTERVAL_H,
        MAX_CHECKPOINT_INTERVAL_H,
        "h",
        nullable=True,
        default=None,
        source="None = the optimum of training.checkpoint.interval_method on the real write time",
    ),
    integer(
        "training.checkpoint.writers",
        1,
        MAX_GPUS,
        nullable=True,
        default=None,
        source="None = one writer per node: with ZeRO-1 or FSDP every node holds a distinct shard of the "
        "model and optimizer state, and sharded checkpointing (PyTorch DCP, Megatron dist-ckpt) has each "
        "node write its own shard in parallel",
    ),
    choice(
        "training.checkpoint.interval_method",
        INTERVAL_METHODS,
        "daly",
        source="Daly 2006, 'A higher order estimate of the optimum checkpoint interval for restart dumps', "
        "FGCS 22(3):303-312, eq. 37; 'young' = Young 1974, CACM 17(9), sqrt(2 C M); 'exact' = the optimum "
        "of the expected_loss ledger, T = M (1 + W0(-e^(-1-C/M)))",
    ),
    choice(
        "training.checkpoint.goodput_ledger",
        GOODPUT_LEDGERS,
        "expected_loss",
        source="writes + rework (the segment of an interval and its write lost per failure, (T + C)/2 on "
        "average when T + C is well below the MTBF) + restarts, each failure counted over the wall-clock time "
        "it lengthens (Daly 2006 §3 renewal argument)",
    ),
)
