"""Resolved inputs of the step engine.

The scenario document (CONTRACT.md) is parsed and validated by ``solvers.inputs`` into these frozen
dataclasses: every catalog preset merged, every default filled, every number checked. The engine never sees
a raw document, so it never has to guess a unit or a missing value.

``LayoutBatch`` holds one or many layouts as parallel numpy arrays: a single solve is a batch of one, and the
design-space search is the same engine over a batch of thousands (one code path, no second model).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType, SimpleNamespace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

Precision = Literal["bf16", "fp16", "fp8", "fp32"]
Optimizer = Literal["adam", "sgd"]
Recompute = Literal["none", "selective", "full", "per_op"]

PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp32")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe")
RECOMPUTE_POLICIES: tuple[str, ...] = ("none", "selective", "full", "per_op")
# The policies a search tries unless its space names others: ``per_op`` is one framework's policy (torchtitan's
# op-level selective checkpointing), not a choice every framework offers.
SEARCHED_RECOMPUTE: tuple[str, ...] = ("none", "selective", "full")
GRAD_REDUCE_DTYPES: tuple[str, ...] = ("bf16", "fp32")
PIPELINE_SPLITS: tuple[str, ...] = ("balanced", "even")
# When ZeRO-3 exchanges parameters and gradients in a step of several microbatches (``training.zero3_exchange``).
ZERO3_EXCHANGES: tuple[str, ...] = ("once_per_step", "every_microbatch", "gather_every_microbatch")
# How the MoE token dispatcher sends a token's routed copies across nodes (``training.moe_dispatch``).
MOE_DISPATCHES: tuple[str, ...] = ("per_expert", "per_node")
# Which Megatron-Core token dispatcher moves the routed tokens (``training.moe_token_dispatcher``).
MOE_TOKEN_DISPATCHERS: tuple[str, ...] = ("alltoall", "flex")

# Reliability conventions (``cluster.reliability``, ``training.checkpoint``) are named strings, never booleans,
# so that a report can say which one produced a figure.
MTBF_CONVENTIONS: tuple[str, ...] = ("node_series", "gpu_only")
INTERVAL_METHODS: tuple[str, ...] = ("daly", "young", "exact")
GOODPUT_LEDGERS: tuple[str, ...] = (
    # Expected wall-clock cost per failure-renewal cycle: checkpoint writes, the lost part of a segment of an
    # interval and its write ((T + C)/2 on average for T + C well below the MTBF) of rework and a restart per
    # failure, all inside the wall-clock time they lengthen.
    "expected_loss",
    # Seed 000 §3.3 / mlsysim tutorial 06 §5: lost time over a window = writes + failures x half an interval;
    # no restart term, reported against the window.
    "sec5_writes_half_interval",
    # Seed 000 §3.3 / mlsysim ReliabilityResult.goodput_ratio: 1 - C/T - R/MTBF (steady-state shares).
    "mlsysim_goodput_ratio",
)

# Integer codes used inside LayoutBatch arrays; the index in the tuples above.
SCHEDULE_CODE: dict[str, int] = {name: i for i, name in enumerate(SCHEDULES)}
RECOMPUTE_CODE: dict[str, int] = {name: i for i, name in enumerate(RECOMPUTE_POLICIES)}


@dataclass(frozen=True)
class MoESpec:
    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int
    moe_layers: int
    # Node-limited routing (DeepSeek-V3 §2.1.2): each token's routed experts lie on at most this many nodes;
    # None: not limited. Read only with ``training.moe_dispatch`` ``per_node`` (``solvers.exchanges``).
    max_nodes_per_token: int | None = None
    # Device-limited routing (DeepSeek-V2 §2.2.1): each token's routed experts lie on at most this many GPUs;
    # None: not limited. Read only with ``per_node``, whose dispatcher sends a token once per target GPU.
    max_gpus_per_token: int | None = None


@dataclass(frozen=True)
class MLASpec:
    """Multi-head Latent Attention (DeepSeek-V2 §2.1, DeepSeek-V3 §2.1.1): queries and keys/values pass
    through low-rank latents; each head's query/key has a non-positional part and a rotary part."""

    q_lora_rank: int  # query latent width (0: queries projected from hidden directly)
    kv_lora_rank: int  # key/value latent width
    qk_nope_head_dim: int  # per-head query/key width without rotary embedding
    qk_rope_head_dim: int  # per-head query/key width with rotary embedding (the key part shared by heads)
    v_head_dim: int  # per-head value width


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    params: float  # total parameters (all experts), the multi-token-prediction modules included
    active_params: float  # parameters touched per token (= params for dense models), MTP modules included
    moe: MoESpec | None = None
    gated_mlp: bool = True  # SwiGLU-style: three FFN matrices instead of two
    dropout: bool = True  # dropout after attention and MLP (and on the attention probabilities) is stored
    mla: MLASpec | None = None  # Multi-head Latent Attention in place of (grouped-query) multi-head attention
    mtp_layers: int = 0  # multi-token-prediction modules (DeepSeek-V3 §2.2), each on the last pipeline stage
    mtp_active_params: float = (
        0.0  # the part of active_params in those modules (inputs.model.mtp_module_params)
    )
    head_dim: int | None = (
        None  # per-head width where it is not hidden / heads (Qwen3, Gemma); None: hidden / heads
    )
    tied_embeddings: bool = False  # one vocab x hidden matrix serves the input embedding and the output layer


class PeakTflops(Mapping[str, float]):
    """Dense peak TFLOP/s by precision, immutable: reads like a dict (``peaks["bf16"]``, ``"fp8" in peaks``,
    ``peaks.get``), compares equal to a dict of the same items, and holds them as a sorted tuple.
    Example: ``PeakTflops({"fp8": 1978.9, "bf16": 989.4})["bf16"] == 989.4``."""

    __slots__ = ("_items",)
    _items: tuple[tuple[str, float], ...]

    def __init__(self, peaks: Mapping[str, float] | Iterable[tuple[str, float]] = ()) -> None:
        pairs = peaks.items() if isinstance(peaks, Mapping) else peaks
        object.__setattr__(self, "_items", tuple(sorted((str(k), float(v)) for k, v in pairs)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("PeakTflops is immutable")

    def __getitem__(self, precision: str) -> float:
        for key, value in self._items:
            if key == precision:
                return value
        raise KeyError(precision)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PeakTflops):
            return self._items == other._items
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items)

    def __repr__(self) -> str:
        return f"PeakTflops({dict(self._items)!r})"

    def __reduce__(self) -> tuple[type[PeakTflops], tuple[tuple[tuple[str, float], ...]]]:
        return (PeakTflops, (self._items,))


@dataclass(frozen=True)
class AcceleratorSpec:
    name: str
    peak_tflops: Mapping[str, float]  # dense peak by precision: {"bf16": 989, "fp8": 1979, ...} (PeakTflops)
    hbm_gb: float  # capacity, 1e9 bytes
    hbm_tb_s: float  # bandwidth, 1e12 bytes/s
    tdp_w: float
    unit_price_usd: float
    embodied_kgco2e: float
    compute_efficiency: float  # fraction of dense peak that large GEMMs reach in training
    # The catalog preset it came from (``cluster.accelerator.preset``), whatever its display name; None for a
    # custom accelerator or a spec built by hand.
    catalog_key: str | None = None

    def __post_init__(self) -> None:
        if type(self.peak_tflops) is not PeakTflops:  # a dict given by a caller becomes immutable
            object.__setattr__(self, "peak_tflops", PeakTflops(self.peak_tflops))

    @property
    def catalog_ref(self) -> str:
        """What the catalog's per-accelerator tables look it up by (``solvers.catalog.accelerators.catalog_key``
        takes a key or a display name): its preset key when it has one, so that a preset renamed in a scenario
        keeps its calibration family and attention gain, else its name (a spec built by hand with a catalog
        name is found by that name)."""
        return self.catalog_key or self.name


@dataclass(frozen=True)
class LinkSpec:
    """One direction of one GPU's share of a link, as a collective achieves it."""

    bandwidth_gb_s: float  # 1e9 bytes/s actually achieved (nominal x achievable factor when from the catalog)
    latency_us: float
    oversubscription: float = 1.0  # scale-out only: >1 divides the bandwidth across the fabric's core
    # scale-up only: the GPUs of a direct full mesh (no switch), each GPU's links split over the other n - 1;
    # None: switched, the full rate to any peer (``collectives.Links.up_rate``)
    mesh_gpus: int | None = None


@dataclass(frozen=True)
class ClusterSpec:
    accelerator: AcceleratorSpec
    gpus: int
    gpus_per_node: int
    scale_up: LinkSpec
    scale_out: LinkSpec

    @property
    def nodes(self) -> int:
        return self.gpus // self.gpus_per_node


@dataclass(frozen=True)
class OverlapSpec:
    """Share of each exchange that software hides behind compute (0..1)."""

    tp: float = 0.0
    cp: float = 0.0
    pp: float = 0.0
    dp: float = 0.0
    ep: float = 0.0


def _switch(source: str, *, in_documents: bool = True) -> Any:
    """An ``EffectsSpec`` switch (off in a bare spec) whose field-table source is ``source``; ``in_documents``
    is its default in a scenario document (on, unless the effect describes one framework version that a
    scenario has to state)."""
    return field(default=False, metadata={"effect_source": source, "in_documents": in_documents})


@dataclass(frozen=True)
class EffectsSpec:
    """The step-model effects of ``solvers.effects``, each with its switch, and their fitted constants.

    The default (every switch off) is the engine before the effects: a ``TrainingSpec`` built without this
    field gives the same numbers as before they existed. A scenario document turns them on by default
    (``training.efficiency.effects.<name>``), with the constants of ``solvers.catalog.fitted``.
    """

    matrix_shape: bool = _switch(
        "tile quantisation and a saturating curve in the narrowest GEMM dimension (NVIDIA, Matrix "
        "Multiplication Background User's Guide, ch. 3); half-rate dimension fitted (solvers.catalog.fitted)"
    )
    stragglers: bool = _switch(
        "the step waits for the slowest of N ranks: 1 + sigma sqrt(2 ln N) (extreme-value bound; Dean & "
        "Barroso, The Tail at Scale, CACM 2013); sigma fitted (solvers.catalog.fitted)"
    )
    moe_overhead: bool = _switch(
        "MoE token permutation (8 HBM passes over the routed copies, Megatron-Core token dispatcher), the "
        "busiest expert rank's load skew (fitted, solvers.catalog.fitted) and the expert-parallel overlap "
        "only in the steady 1F1B phase (Megatron-Core schedules.py warm-up count)"
    )
    pipeline_ends: bool = _switch(
        "the output layer runs on the last stage, which a stage planner rebalances (Llama 3 §3.3.2), or on top "
        "of the last stage's layers with training.pipeline_split even (Megatron-LM before September 2024)"
    )
    context_parallel: bool = _switch(
        "the attention core runs on s/cp blocks at the matrix-shape curve (ring attention, Liu et al. 2023)"
    )
    attention_core: bool = _switch(
        "the attention core (QK^T, softmax, AV) runs at its own rate, a fitted factor of the large-GEMM rate "
        "(FlashAttention kernels reach a different share of peak than GEMMs; Dao 2023, FlashAttention-2)"
    )
    zero3_recompute_regather: bool = _switch(
        "ZeRO-3 with parameters resharded after the forward pass and full recomputation gathers the weights "
        "again for the recomputed forward, and a third time in the backward only when one block's parameters "
        "on the GPU reach DeepSpeed's stage3_max_reuse_distance (1e9; PartitionedParameterCoordinator keeps "
        "parameters reused within it, deepspeed/runtime/zero/partitioned_param_coordinator.py); no constant"
    )
    zero3_per_tensor_collectives: bool = _switch(
        "DeepSpeed ZeRO-3 before its coalesced collectives (v0.5.x) all-gathers and reduce-scatters each "
        "parameter tensor separately, synchronised (deepspeed/runtime/zero/partition_parameters.py, "
        "_allgather_param, _reduce_scatter_gradient; PR #1188, #1453), each paying NCCL's ring latency over "
        "the whole group (NCCL 2.9.6 src/graph/tuning.cc: no tree for all-gather or reduce-scatter), and passes "
        "each as a list of one view per rank, which PyTorch's ProcessGroupNCCL copies entry by entry (one eager "
        "op each, 4.5 us; Ansel, PyTorch dev-discuss 1836); no fitted constant. Off unless stated: DeepSpeed "
        "since v0.5.x and FSDP gather one flat buffer per bucket or layer",
        in_documents=False,
    )
    fp8_scope: bool = _switch(
        "in FP8 training only the transformer blocks' linear layers run in FP8: the attention core and the "
        "output layer run at the BF16 rate (Transformer Engine: FP8 attention is opt-in, fp8_dpa=False; "
        "torchtitan's float8 leaves the output layer out; DeepSeek-V3 §3.3.1); no constant"
    )
    unfused_elementwise: bool = _switch(
        "without fused elementwise kernels (training.fused_elementwise false: PyTorch eager, no torch.compile) "
        "each RMSNorm, rotary embedding and SwiGLU product runs as separate kernels that each read and write "
        "HBM: the extra bytes over one fused kernel per op, counted from torchtitan's Llama model "
        "(torchtitan/models/norms.py RMSNorm, torchtitan/models/llama/model.py apply_rotary_emb and "
        "FeedForward.forward), forward, backward (2x) and a full recomputation, at the HBM bandwidth; no "
        "constant"
    )
    expert_kernels: bool = _switch(
        "the local experts' GEMMs run as one kernel sequence per expert (Transformer Engine's GroupedLinear "
        "splits the routed tokens by expert and issues one GEMM, with its casts, per expert): a fixed time per "
        "local expert, MoE layer and microbatch, fitted (solvers.catalog.fitted), of which a dispatch padded to "
        "capacity (training.moe_pad_to_capacity), whose host never waits for the token counts, and a flex "
        "dispatch (training.moe_token_dispatcher: DeepEP, HybridEP), measured as fast as a padded one, pay a "
        "fitted share. On by default, as in "
        "Megatron-Core with Transformer Engine (TEGroupedMLP); false for single-kernel grouped GEMMs (DeepGEMM, "
        "Megatron-Core's GroupedMLP, torch._grouped_mm), which have no per-expert cost"
    )
    expert_tp_exchange: bool = _switch(
        "with expert tensor parallelism the routed copies a GPU receives are all-gathered over the expert-TP "
        "group before the experts and reduce-scattered after (Megatron-Core MoEAlltoAllTokenDispatcher."
        "dispatch_postprocess and combine_preprocess, gather_from_sequence_parallel_region over the expert-TP "
        "group; Liu et al. 2025, MoE Parallel Folding, arXiv:2504.14960 §3): the dispatcher's exchange gains that "
        "all-gather and reduce-scatter of etp times its per-GPU volume, a MoE layer's MLP keeps over TP only the "
        "attention TP's pair for shared experts, and each GPU's experts see etp/tp of its TP group's tokens; off, "
        "the MLP of a MoE layer all-reduces A over expert_tp as a dense MLP does over tp; no constant"
    )
    attention_kernels: bool = _switch(
        "the attention core's rate depends on the fused-attention implementation (training.attention_kernel): "
        "its forward-and-backward rate over FlashAttention-2's, from the published H100 benchmarks of "
        "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608, Figures 5(d) and 6: FlashAttention-2 333/318, "
        "cuDNN 529/518, FlashAttention-3 602/559 TFLOPS at 8k, head dim 128; solvers.catalog.attention_kernels), "
        "times the fitted attention_rate_factor, on Hopper (measured) and Blackwell (assumed), elsewhere as "
        "FlashAttention-2, and on GB300 times its measured gain over GB200 (cuDNN SDPA training benchmarks, "
        "NVIDIA/cudnn-frontend, 1.10 at 8k tokens; solvers.catalog.attention_kernels.GENERATION_MS); scores "
        "materialised (fused_attention false) keep the factor alone; no fitted constant"
    )
    fp8_casts: bool = _switch(
        "FP8 training quantises through HBM every linear layer's input that no norm writes in FP8 (the attention "
        "output, the MLP activation, the experts' routed tokens) and every output gradient: read BF16, write "
        "row-wise and column-wise FP8 copies, 4 bytes an element (Transformer Engine's cast-transpose in "
        "Linear, GroupedLinear and their backward), forward, backward and a full recomputation, at the HBM "
        "bandwidth; no constant"
    )
    shape_by_precision: bool = _switch(
        "the matrix-shape curve's half-rate dimension, fitted to FP8 kernels, scales with the large-GEMM rate "
        "over the accelerator's FP8 rate on tensor-core precisions (a GEMM's fixed costs take the same time at "
        "any precision: at a lower rate a smaller dimension reaches the same share of the plateau); no constant"
    )
    fp8_tp_gather: bool = _switch(
        "in FP8 training with sequence parallelism the tensor-parallel all-gathers of the attention's and a "
        "dense MLP's inputs (forward, and a recomputed forward) and of their output gradients (backward) carry "
        "FP8, 1 byte an element: Transformer Engine's LayerNormLinear writes its norm's output in FP8 and "
        "gathers that (transformer_engine/pytorch/module/layernorm_linear.py, _LayerNormLinear.forward, v1.11 "
        "and later) and casts a row-parallel layer's output gradient to FP8 before gathering it "
        "(module/base.py, grad_output_preprocess); torchao's Float8ColwiseParallel and Float8RowwiseParallel "
        "gather Float8 tensors (torchtitan's float8 tensorwise TP); the reduce-scatters and a MoE layer's MLP "
        "(its router reads the norm's BF16 output) stay BF16; no constant"
    )
    shape_half_dim: float = 0.0  # GEMM dimension at which the saturating curve reaches half its plateau
    jitter: float = 0.0  # relative standard deviation of one rank's step time (straggler term)
    moe_skew: float = 0.0  # busiest expert rank's load over the mean, minus one
    fp8_rate_factor: float = 0.0  # share of the FP8 peak at the BF16 efficiency; 0 = the hand calibration's
    attention_rate_factor: float = 1.0  # attention core's rate (PaLM-counted FLOPs) over the large-GEMM rate
    expert_kernel_s: float = 0.0  # fixed time per local expert, MoE layer and microbatch (forward + backward)
    # the share of it a dispatch padded to capacity pays (no host synchronisation; effects.expert_kernels_s)
    expert_kernel_padded_share: float = 1.0

    @property
    def any_on(self) -> bool:
        return any(getattr(self, name) for name in EFFECT_SWITCHES)


# The switches, in the order of the fields above: the one list the field table
# (``training.efficiency.effects.<name>``, with each field's text as its source), the resolver and
# ``solvers.fit`` read. A new effect is one more ``_switch`` field of ``EffectsSpec``.
EFFECT_SOURCES: tuple[tuple[str, str], ...] = tuple(
    (f.name, str(f.metadata["effect_source"])) for f in fields(EffectsSpec) if "effect_source" in f.metadata
)
EFFECT_SWITCHES: tuple[str, ...] = tuple(name for name, _ in EFFECT_SOURCES)
# Each switch's default in a scenario document (the field table's ``default``): on, but for an effect of one
# framework version, which a scenario states.
EFFECT_DOCUMENT_DEFAULTS: Mapping[str, bool] = MappingProxyType(
    {f.name: bool(f.metadata["in_documents"]) for f in fields(EffectsSpec) if "effect_source" in f.metadata}
)


@dataclass(frozen=True)
class TrainingSpec:
    seq_len: int
    global_batch_tokens: int
    precision: str
    optimizer: str
    compute_efficiency: float  # resolved: user value or the accelerator's catalog value
    overlap: OverlapSpec = field(default_factory=OverlapSpec)
    # Whether attention is fused (FlashAttention-style, Dao et al. 2022: the s x s score matrix never reaches
    # HBM), for every recompute policy. False: the scores are materialised (stored without recompute, written
    # and read again when recomputed), as in Megatron-LM before 2023. None means unspecified and is read as
    # True, the scenario document's default (``training.fused_attention``).
    fused_attention: bool | None = True
    # Whether the non-GEMM elementwise and normalisation ops are fused (torch.compile, or the fused kernels of
    # Megatron-Core and Transformer Engine). False: PyTorch eager, each op a kernel of its own reading and
    # writing HBM (the ``unfused_elementwise`` effect). None is read as True, the scenario document's default
    # (``training.fused_elementwise``).
    fused_elementwise: bool | None = True
    # The fused-attention implementation (``solvers.catalog.attention_kernels``): ``flash2`` (FlashAttention-2,
    # PyTorch scaled_dot_product_attention's flash backend; the scenario document's default), ``cudnn`` (cuDNN
    # fused attention, Transformer Engine's choice on Hopper and later) or ``flash3`` (FlashAttention-3). Read
    # only by the ``attention_kernels`` effect and only with fused attention.
    attention_kernel: str = "flash2"
    # How the framework assigns layers to pipeline stages (``PIPELINE_SPLITS``): ``balanced`` (a stage planner
    # moves layers away from the stage that holds the output layer; the scenario document's default) or
    # ``even`` (every stage ``ceil(L/p)`` layers and the last the rest, the output layer on top of the last
    # one's). Read only by the ``pipeline_ends`` effect.
    pipeline_split: str = "balanced"
    # When ZeRO-3 (``zero_stage`` 3) gathers the parameters and reduce-scatters the gradients in a step of several
    # microbatches (``ZERO3_EXCHANGES``): ``once_per_step`` (the scenario document's default, the v1 convention),
    # ``every_microbatch`` or ``gather_every_microbatch`` (the gathers in every microbatch, the gradients
    # reduce-scattered once); which framework does which is the source of the field ``training.zero3_exchange``
    # (``solvers.inputs.fields``). Read by the engine for ZeRO-3 layouts only.
    zero3_exchange: str = "once_per_step"
    # How the MoE dispatcher sends a token's routed copies to other nodes (``MOE_DISPATCHES``): ``per_expert``
    # (one copy per routed expert, Megatron-Core's all-to-all dispatcher; the scenario document's default) or
    # ``per_node`` (one copy per target node over the NIC, forwarded inside the node over the scale-up link:
    # DeepSeek-V3 §3.2.2, DeepEP). Read by the expert-parallel exchange only (``solvers.exchanges``).
    moe_dispatch: str = "per_expert"
    # How routed tokens load the experts (``solvers.effects.expert_load``): an expert capacity as a factor of the
    # mean load (None: dropless), every expert's input padded to it, or the router bypassed for an even load.
    moe_capacity_factor: float | None = None
    moe_pad_to_capacity: bool = False
    moe_force_balance: bool = False
    # Megatron-Core's token dispatcher (``MOE_TOKEN_DISPATCHERS``): ``alltoall`` (MoEAlltoAllTokenDispatcher, and
    # the all-gather one) or ``flex`` (MoEFlexTokenDispatcher over DeepEP or HybridEP). Read by the expert_kernels
    # effect only: a flex dispatch pays the padded share of the time per local expert (``pays_padded_share``).
    moe_token_dispatcher: str = "alltoall"
    # The dispatched tokens in FP8 (1 byte an element; DeepSeek-V3 §3.3.2), else in the activations' dtype
    # (Megatron-Core's dispatchers). FP8 training only.
    moe_fp8_dispatch: bool = False
    # Per-tensor scaled FP8 weights all-gathered in FP8, 1 byte (Megatron-Core's --fp8-param-gather; MXFP8 weights
    # gather in BF16). FP8 training only.
    fp8_param_gather: bool = False
    # The shared experts computed beside the dispatch and combine all-to-alls (Megatron-Core's
    # moe_shared_expert_overlap), hiding up to their math of the expert-parallel exchange.
    moe_shared_expert_overlap: bool = False
    # The microbatches of one pipeline flush (``training.pipeline_flush_microbatches``): a framework that runs
    # each gradient-accumulation step as its own schedule fills and drains the pipeline once per step of that
    # many microbatches; None: every microbatch of the step in one flush (Megatron-Core).
    pipeline_flush_microbatches: int | None = None
    # The embedding, the output layer and the loss split over the vocabulary across TP (Megatron-Core's
    # VocabParallelEmbedding and vocab-parallel cross-entropy); False: the embedding replicated on every TP rank
    # and the logits all-gathered for a loss on every rank (``training.tp_vocab_parallel``).
    tp_vocab_parallel: bool = True
    effects: EffectsSpec = field(default_factory=EffectsSpec)


@dataclass(frozen=True)
class LayoutBatch:
    """N layouts as parallel arrays (N >= 1). ``dp`` is always resolved (gpus / (tp*pp*cp)).

    Codes: ``schedule`` indexes SCHEDULES, ``recompute`` indexes RECOMPUTE_POLICIES,
    ``grad_reduce_fp32`` is True when gradients are reduce-scattered in fp32 (Llama 3 §3.3.2).
    ``expert_tp`` equals ``tp`` unless the user gave one.
    """

    tp: IntArray
    pp: IntArray
    cp: IntArray
    ep: IntArray
    dp: IntArray
    microbatch_seqs: IntArray
    schedule: IntArray
    virtual_stages: IntArray
    sequence_parallel: BoolArray
    zero_stage: IntArray
    fsdp_reshard_after_forward: BoolArray
    expert_tp: IntArray
    recompute: IntArray
    grad_reduce_fp32: BoolArray

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def freeze(self) -> None:
        """Make every field array read-only, so that the batch never changes (``resolve`` freezes its own)."""
        for name in _BATCH_FIELDS:
            getattr(self, name).flags.writeable = False

    @property
    def read_only(self) -> bool:
        """True when no field array can be written: the batch can then never change."""
        return not any(getattr(self, name).flags.writeable for name in _BATCH_FIELDS)

    @property
    def single(self) -> SimpleNamespace:
        """The only layout of a batch of one, as python ints and bools (a new namespace on each read)."""
        if len(self) != 1:
            raise ValueError(f"a batch of {len(self)} layouts has no single layout")
        return SimpleNamespace(**{name: getattr(self, name)[0].item() for name in _BATCH_FIELDS})

    def take(self, index: IntArray | slice) -> LayoutBatch:
        """The layouts at ``index`` (an integer array, or a slice: views, no copy)."""
        return LayoutBatch(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


_BATCH_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(LayoutBatch))
