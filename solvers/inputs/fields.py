"""The one table of the scenario document's fields: path, type, unit, limits, default and its source.

Every field a scenario document (CONTRACT.md v1) may hold is one ``Field`` row of ``FIELDS``. The part parsers
(``solvers.inputs.model`` ... ``economics``) read their keys, numeric limits and static defaults from it;
``FIELD_LIMITS`` (API documentation, form validation, ``solvers.prices.price_limits``), the JSON Schema
(``solvers.inputs.json_schema``) and ``solvers.ledger_defaults.DEFAULTS`` are derived from it. A default that
depends on other fields (``model.ffn_hidden`` from ``hidden``, ``training.seq_len`` from the model preset,
``cluster.gpus`` from the node) is computed by its parser, which names its source there.

Limits are inclusive unless ``exclusive_min``; change them only with the CHANGELOG. Rows are listed in the
order of the document, which is the order in which errors are reported and unknown keys are matched.

Adding a field is one row here and its physics: a number with a static default in ``site``, ``economics``,
``cluster.storage``, ``cluster.power`` or an accelerator is read, limit-checked, defaulted, written to the
document and to the assumptions by its part's parser without further code (``tests/solvers/test_inputs.py``
shows one); the physics that uses it takes it through a spec or ``LedgerFields`` (``scenario.py``).
"""

from __future__ import annotations

from typing import Any

from solvers.catalog import calibration
from solvers.catalog.attention_kernels import ATTENTION_KERNELS
from solvers.inputs.table import NO_DEFAULT, NUMERIC, Field, FieldTable
from solvers.specs import (
    EFFECT_DOCUMENT_DEFAULTS,
    EFFECT_SOURCES,
    GOODPUT_LEDGERS,
    GRAD_REDUCE_DTYPES,
    INTERVAL_METHODS,
    MOE_DISPATCHES,
    MTBF_CONVENTIONS,
    OPTIMIZERS,
    PIPELINE_SPLITS,
    PRECISIONS,
    RECOMPUTE_POLICIES,
    SCHEDULES,
    ZERO3_EXCHANGES,
)

SCHEMA_VERSION = 1

# ---- limits (inclusive). The API documents and reuses these; change them only with the CHANGELOG. ----------
MAX_GPUS = 1_048_576
MAX_GPUS_PER_NODE = 1_024
MAX_LAYERS = 1_000
MAX_HIDDEN = 1_000_000
MAX_FFN_HIDDEN = 10_000_000
MAX_HEADS = 100_000
MAX_VOCAB = 10_000_000
MAX_PARAMS = 1e15
MAX_EXPERTS = 100_000
# DeepSeek-V3 trains one module; Gloeckle et al. 2024 (arXiv:2404.19737) compare up to 8 predicted tokens.
MAX_MTP_LAYERS = 16
MAX_SEQ_LEN = 10_000_000
MAX_GLOBAL_BATCH_TOKENS = 1e11
MAX_TOTAL_TOKENS = 1e16
MAX_MICROBATCH_SEQS = 1_000_000
MAX_VIRTUAL_STAGES = MAX_LAYERS
MAX_PEAK_TFLOPS = 1e6
MAX_HBM_GB = 1e5
MAX_HBM_TB_S = 1e3
MAX_TDP_W = 1e5
MAX_UNIT_PRICE_USD = 1e8
MAX_EMBODIED_KGCO2E = 1e6
MAX_BANDWIDTH_GB_S = 1e5
MAX_LATENCY_US = 1e6
MAX_OVERSUBSCRIPTION = 1_000.0
MAX_MTTF_H = 1e9
MAX_COMPONENTS_PER_NODE = 10_000
MAX_OTHER_COMPONENTS = 1_000
MAX_RESTART_S = 1e7
MAX_STORAGE_GB_S = 1e7
MAX_HOST_W_PER_NODE = 1e6
MAX_GRID_GCO2_PER_KWH = 3_000.0
MIN_PUE = 1.0
MAX_PUE = 5.0
MAX_WUE_L_PER_KWH = 100.0
MAX_ELECTRICITY_USD_PER_KWH = 10.0
MAX_JOB_DAYS = 36_500.0
MAX_YEARS = 100.0
MAX_INFRA_MULTIPLIER = 100.0
MAX_MAINTENANCE_PER_YEAR = 10.0
MAX_CLOUD_USD_PER_GPU_HOUR = 10_000.0
MAX_CHECKPOINT_INTERVAL_H = 1e5
MAX_ZERO_STAGE = 3

PARTS: tuple[str, ...] = ("model", "cluster", "site", "training", "economics")

__all__ = ["FIELDS", "FIELD_LIMITS", "NO_DEFAULT", "NUMERIC", "TABLE", "Field", "FieldTable", "field_limits"]


def _num(path: str, lo: float, hi: float, unit: str = "", *, excl: bool = False, **kw: Any) -> Field:
    return Field(path, "number", unit, lo, hi, excl, **kw)


def _int(path: str, lo: float, hi: float, unit: str = "", **kw: Any) -> Field:
    return Field(path, "integer", unit, lo, hi, **kw)


def _obj(path: str, **kw: Any) -> Field:
    return Field(path, "object", nullable=True, **kw)


def _flag(path: str, **kw: Any) -> Field:
    return Field(path, "bool", **kw)


def _choice(path: str, choices: tuple[str, ...], default: str, source: str) -> Field:
    return Field(path, "choice", choices=choices, default=default, source=source)


def _link(path: str) -> tuple[Field, ...]:
    return (
        _obj(path, or_key="FABRICS"),
        Field(f"{path}.preset", "key", catalog="FABRICS", nullable=True),
        _num(f"{path}.bandwidth_gb_s", 0, MAX_BANDWIDTH_GB_S, "GB/s", excl=True),
        _num(f"{path}.latency_us", 0, MAX_LATENCY_US, "us"),
        _num(
            f"{path}.oversubscription",
            1,
            MAX_OVERSUBSCRIPTION,
            default=1.0,
            source="convention: non-blocking fabric (full bisection), 1.0",
        ),
    )


def _layout(name: str, lo: float, hi: float, default: Any, source: str, unit: str = "") -> Field:
    return _int(f"training.layout.{name}", lo, hi, unit, default=default, source=source)


def _overlap(dim: str) -> Field:
    """Default hidden share per exchange: the calibration's when it names one, else none hidden."""
    table = getattr(calibration, "DEFAULT_OVERLAP", None) or {}
    value, source = table.get(dim, (0.0, "CONTRACT.md v1: nothing is hidden unless the scenario says so"))
    return _num(
        f"training.efficiency.overlap.{dim}", 0, 1, "fraction", default=float(value), source=str(source)
    )


# The step effects of solvers.effects (docs/CONVENTIONS.md "Step effects"); false turns one off, and with all
# of them off the engine is the hand-calibrated model of solvers.catalog.calibration.
_EFFECTS = EFFECT_SOURCES  # (name, source) of each switch: the fields of solvers.specs.EffectsSpec

_SEED000 = "seed 000 §3 (mlsysim 0.1.2 ReliabilityModel defaults)"
_TEXT = 200

FIELDS: tuple[Field, ...] = (
    Field("schema_version", "const", default=SCHEMA_VERSION),
    Field("name", "text", max_len=2000),
    Field("description", "text", max_len=2000),
    # --- model -----------------------------------------------------------------------------------------
    _obj("model"),
    Field("model.preset", "key", catalog="MODELS", nullable=True),
    Field("model.name", "text", max_len=_TEXT),
    _int("model.layers", 1, MAX_LAYERS),
    _int("model.hidden", 1, MAX_HIDDEN),
    _int("model.ffn_hidden", 1, MAX_FFN_HIDDEN),
    _int("model.heads", 1, MAX_HEADS),
    _int("model.kv_heads", 1, MAX_HEADS),
    _int("model.head_dim", 1, MAX_HIDDEN),
    _int("model.vocab", 1, MAX_VOCAB),
    _num("model.params", 1, MAX_PARAMS, "parameters"),
    _num("model.active_params", 1, MAX_PARAMS, "parameters"),
    _flag(
        "model.gated_mlp", default=True, source="convention: SwiGLU MLP with three matrices (Llama family)"
    ),
    _flag("model.tied_embeddings", default=False, source="convention: separate input and output embeddings"),
    _flag(
        "model.dropout",
        default=True,
        source="convention: trained with dropout, whose masks are stored (Korthikanti et al. 2022 §4.2 count; "
        "GPT-3-style models in Megatron-LM)",
    ),
    _int(
        "model.mtp_layers",
        0,
        MAX_MTP_LAYERS,
        default=0,
        source="convention: next-token loss only, no multi-token-prediction module",
    ),
    _obj("model.moe"),
    _int("model.moe.experts", 1, MAX_EXPERTS),
    _int("model.moe.top_k", 1, MAX_EXPERTS),
    _int("model.moe.expert_ffn_hidden", 1, MAX_FFN_HIDDEN),
    _int("model.moe.shared_experts", 0, MAX_EXPERTS, default=0, source="convention: no shared expert"),
    _int("model.moe.moe_layers", 1, MAX_LAYERS),
    _int(
        "model.moe.max_nodes_per_token",
        1,
        MAX_GPUS,
        nullable=True,
        default=None,
        source="convention: routing not limited by node (node-limited routing: DeepSeek-V3 §2.1.2, at most 4 "
        "nodes a token; read only with training.moe_dispatch per_node)",
    ),
    _obj("model.mla"),
    _int(
        "model.mla.q_lora_rank",
        0,
        MAX_HIDDEN,
        default=0,
        source="convention: queries projected from the hidden state without a latent (DeepSeek-V2-Lite)",
    ),
    _int("model.mla.kv_lora_rank", 1, MAX_HIDDEN),
    _int("model.mla.qk_nope_head_dim", 1, MAX_HIDDEN),
    _int("model.mla.qk_rope_head_dim", 0, MAX_HIDDEN),
    _int("model.mla.v_head_dim", 1, MAX_HIDDEN),
    # --- cluster ---------------------------------------------------------------------------------------
    _obj("cluster"),
    Field("cluster.node", "key", catalog="NODES", nullable=True),
    _obj("cluster.accelerator", or_key="ACCELERATORS"),
    Field("cluster.accelerator.preset", "key", catalog="ACCELERATORS", nullable=True),
    Field("cluster.accelerator.name", "text", max_len=_TEXT),
    Field("cluster.accelerator.peak_tflops", "object"),
    *(
        _num(f"cluster.accelerator.peak_tflops.{p}", 0, MAX_PEAK_TFLOPS, "TFLOP/s", excl=True)
        for p in PRECISIONS
    ),
    _num("cluster.accelerator.hbm_gb", 0, MAX_HBM_GB, "GB", excl=True),
    _num("cluster.accelerator.hbm_tb_s", 0, MAX_HBM_TB_S, "TB/s", excl=True),
    _num("cluster.accelerator.tdp_w", 0, MAX_TDP_W, "W", excl=True),
    _num(
        "cluster.accelerator.unit_price_usd",
        0,
        MAX_UNIT_PRICE_USD,
        "USD",
        default=0.0,
        source="custom accelerator without a price: capex counts 0",
        price=True,
    ),
    _num(
        "cluster.accelerator.embodied_kgco2e",
        0,
        MAX_EMBODIED_KGCO2E,
        "kgCO2e",
        default=0.0,
        source="custom accelerator without an embodied figure: 0 (mlsysim's default)",
    ),
    _num(
        "cluster.accelerator.compute_efficiency",
        0,
        1,
        "fraction",
        excl=True,
        default=float(calibration.GENERIC_COMPUTE_EFFICIENCY[0]),
        source="custom accelerator: the calibration's generic compute efficiency",
    ),
    _int("cluster.gpus", 1, MAX_GPUS),
    _int("cluster.gpus_per_node", 1, MAX_GPUS_PER_NODE),
    *_link("cluster.scale_up"),
    *_link("cluster.scale_out"),
    _obj("cluster.storage"),
    _num(
        "cluster.storage.write_gb_s",
        0,
        MAX_STORAGE_GB_S,
        "GB/s",
        excl=True,
        default=500.0,
        source="mlsysim CheckpointModel parallel file-system cap, 500 GB/s (seed 000 §3.2)",
    ),
    _num(
        "cluster.storage.per_writer_gb_s",
        0,
        MAX_STORAGE_GB_S,
        "GB/s",
        excl=True,
        default=7.0,
        source="effective write rate of one writing node: 988.4 GB / 141.2 s in mlsysim (seed 000 §3.2); "
        "close to the ~7 GB/s sequential write of one data-center NVMe SSD or one 100 GbE client stream",
    ),
    _obj("cluster.reliability"),
    _num(
        "cluster.reliability.gpu_mttf_h",
        0,
        MAX_MTTF_H,
        "h",
        excl=True,
        default=50_000.0,
        source=f"{_SEED000}; CONTRACT.md v1 reliability convention. Llama 3 (Dubey et al. 2024, Table 5) "
        "observed 148 faulty-GPU interruptions in 54 days on 16,384 H100, i.e. ~143,000 GPU-hours per GPU "
        "fault.",
    ),
    _num(
        "cluster.reliability.nic_mttf_h",
        0,
        MAX_MTTF_H,
        "h",
        excl=True,
        default=150_000.0,
        source=f"{_SEED000}; CONTRACT.md v1",
    ),
    _num(
        "cluster.reliability.psu_mttf_h",
        0,
        MAX_MTTF_H,
        "h",
        excl=True,
        default=100_000.0,
        source=f"{_SEED000}; CONTRACT.md v1",
    ),
    _int(
        "cluster.reliability.psus_per_node",
        0,
        MAX_COMPONENTS_PER_NODE,
        default=2,
        source=f"{_SEED000}: 2 PSUs in series per 8-GPU node",
    ),
    _int(
        "cluster.reliability.nics_per_node",
        0,
        MAX_COMPONENTS_PER_NODE,
        nullable=True,
        default=None,
        source="None = one NIC per GPU (gpus_per_node), the DGX H100 layout of 8 ConnectX-7 compute NICs",
    ),
    Field(
        "cluster.reliability.other_mttf_h",
        "list",
        "h",
        0,
        MAX_MTTF_H,
        exclusive_min=True,
        max_items=MAX_OTHER_COMPONENTS,
        default=(),
        source="none: only the components the cluster names are in series (CONTRACT.md v1)",
    ),
    _num(
        "cluster.reliability.restart_s",
        0,
        MAX_RESTART_S,
        "s",
        default=300.0,
        source="mlsysim ReliabilityModel recovery time R = 300 s (seed 000 §3.3)",
    ),
    _choice(
        "cluster.reliability.mtbf_convention",
        MTBF_CONVENTIONS,
        "node_series",
        source="node-level series model: node MTBF = 1/sum(count_i/MTTF_i), cluster MTBF = node MTBF / nodes "
        "(seed 000 §3; any component stops a synchronous job)",
    ),
    _obj("cluster.power"),
    _num(
        "cluster.power.host_w_per_node",
        0,
        MAX_HOST_W_PER_NODE,
        "W",
        default=2_000.0,
        source="CPUs, memory, NICs, NVSwitches and fans of an 8-GPU node under training load; NVIDIA DGX H100 "
        "data sheet gives 10.2 kW max for the system, 8 x 700 W of which are GPUs (4.6 kW non-GPU ceiling)",
    ),
    _num(
        "cluster.power.idle_fraction",
        0,
        1,
        "fraction",
        default=0.3,
        source="GPU draw while not computing (communication waits, pipeline bubbles, checkpoint writes, "
        "restarts) as a share of TDP: the 30% idle floor of mlsysim SustainabilityModel (P = 0.3 TDP + 0.7 "
        "TDP x utilisation). An H100 parked at idle draws nearer 10% of TDP, but clocks and HBM stay up "
        "during collectives (Patel et al., 'Characterizing Power Management Opportunities for LLMs in the "
        "Cloud', ASPLOS 2024)",
    ),
    # --- site (a value the user gives, else the region's, else the default) ----------------------------
    _obj("site"),
    Field(
        "site.region",
        "key",
        catalog="REGIONS",
        nullable=True,
        default=None,
        source="None = no region: the site.* defaults above apply",
    ),
    _num(
        "site.grid_gco2_per_kwh",
        0,
        MAX_GRID_GCO2_PER_KWH,
        "gCO2e/kWh",
        default=480.0,
        source="world average 2023, Ember Global Electricity Review 2024",
    ),
    _num(
        "site.pue",
        MIN_PUE,
        MAX_PUE,
        default=1.56,
        source="global average PUE, Uptime Institute Global Data Center Survey 2024",
    ),
    _num(
        "site.wue_l_per_kwh",
        0,
        MAX_WUE_L_PER_KWH,
        "L/kWh",
        default=1.8,
        source="industry average on-site WUE, Shehabi et al. 'United States Data Center Energy Usage Report' "
        "(LBNL 2016); The Green Grid WP#35 defines WUE per kWh of IT energy",
    ),
    _num(
        "site.electricity_usd_per_kwh",
        0,
        MAX_ELECTRICITY_USD_PER_KWH,
        "USD/kWh",
        default=0.12,
        source="mlsysim EconomicsModel default electricity price (seed 000 §5)",
        price=True,
    ),
)

_LAYOUT_FIELDS: tuple[Field, ...] = (
    _obj("training.layout", or_const="auto"),
    _layout("tp", 1, MAX_GPUS, 1, "convention: no tensor parallelism unless given"),
    _layout("pp", 1, MAX_GPUS, 1, "convention: no pipeline parallelism unless given"),
    _layout("cp", 1, MAX_GPUS, 1, "convention: no context parallelism unless given"),
    _layout("ep", 1, MAX_GPUS, 1, "convention: no expert parallelism unless given"),
    _int("training.layout.dp", 1, MAX_GPUS, nullable=True),
    _layout(
        "microbatch_seqs",
        1,
        MAX_MICROBATCH_SEQS,
        1,
        "convention: one sequence per microbatch (Megatron-LM default)",
        "sequences",
    ),
    _choice(
        "training.layout.schedule",
        SCHEDULES,
        "1f1b",
        source="convention: 1F1B (PipeDream-Flush, Narayanan et al. 2021), Megatron-LM's default",
    ),
    _layout("virtual_stages", 1, MAX_VIRTUAL_STAGES, 1, "convention: one model chunk per pipeline stage"),
    _flag(
        "training.layout.sequence_parallel",
        default=True,
        source="convention: sequence parallelism with TP (Korthikanti et al. 2022)",
    ),
    _layout(
        "zero_stage",
        0,
        MAX_ZERO_STAGE,
        1,
        "convention: optimizer state sharded over DP (ZeRO-1, Megatron distributed optimizer)",
    ),
    _flag(
        "training.layout.fsdp_reshard_after_forward",
        default=True,
        source="CONTRACT.md v1: FSDP re-gathers parameters for the backward pass",
    ),
    _int("training.layout.expert_tp", 1, MAX_GPUS, nullable=True),
    _choice(
        "training.layout.recompute",
        RECOMPUTE_POLICIES,
        "none",
        source="convention: no activation recomputation unless given",
    ),
    _choice(
        "training.layout.grad_reduce_dtype",
        GRAD_REDUCE_DTYPES,
        "bf16",
        source="convention: gradients reduced in BF16",
    ),
)

FIELDS += (
    # --- training --------------------------------------------------------------------------------------
    _obj("training"),
    _int("training.seq_len", 1, MAX_SEQ_LEN, "tokens"),
    _int("training.global_batch_tokens", 1, MAX_GLOBAL_BATCH_TOKENS, "tokens", nullable=True),
    _int("training.global_batch_seqs", 1, MAX_GLOBAL_BATCH_TOKENS, "sequences", nullable=True),
    _num(
        "training.total_tokens",
        1,
        MAX_TOTAL_TOKENS,
        "tokens",
        nullable=True,
        default=None,
        source="none: time-based figures use economics.job_days or a 30-day window",
    ),
    _choice("training.precision", PRECISIONS, "bf16", source="convention: BF16 mixed precision"),
    _choice(
        "training.optimizer",
        OPTIMIZERS,
        "adam",
        source="convention: Adam (Kingma & Ba 2015), mixed precision",
    ),
    # Fused attention is the default of every current training stack: FlashAttention (Dao et al. 2022) is
    # what Megatron-Core, PyTorch's scaled_dot_product_attention and Transformer Engine run on A100 and later
    # GPUs. Runs from before 2023 (Megatron-LM SC'21, BLOOM, OPT) materialised the scores and say ``false``.
    _flag(
        "training.fused_attention",
        default=True,
        source="convention: fused attention (FlashAttention, Dao et al. 2022; the default of Megatron-Core, "
        "PyTorch scaled_dot_product_attention and Transformer Engine): the s x s score matrix never reaches "
        "HBM",
    ),
    # Fused elementwise kernels: Megatron-Core and Transformer Engine ship fused norm, rotary and SwiGLU kernels,
    # torchtitan fuses them under torch.compile; PyTorch eager runs (torchtitan's ``compile = false``) say false.
    _flag(
        "training.fused_elementwise",
        default=True,
        source="convention: fused normalisation, rotary-embedding and activation kernels (torch.compile; "
        "Megatron-Core and Transformer Engine fused kernels); false = PyTorch eager, one kernel per op",
    ),
    # The fused-attention implementation: FlashAttention-2 unless a source states or implies another
    # (Transformer Engine, under Megatron-Core and NeMo, selects cuDNN fused attention on Hopper and later).
    _choice(
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
    _choice(
        "training.pipeline_split",
        PIPELINE_SPLITS,
        "balanced",
        source="convention: balanced, a stage planner moves layers away from the stage holding the output layer "
        "(Llama 3 §3.3.2; Megatron-Core account_for_loss_in_pipeline_split); even = ceil(L/p) layers per stage and "
        "the rest on the last (L/p each when p divides L), the "
        "output layer on top of the last (Megatron-LM before September 2024)",
    ),
    # When ZeRO-3 exchanges parameters and gradients in a step of several microbatches: once per step unless a
    # source states or implies a gradient-accumulation loop that gathers and reduces again each microbatch.
    _choice(
        "training.zero3_exchange",
        ZERO3_EXCHANGES,
        "once_per_step",
        source="convention (CONTRACT.md v1): ZeRO-3 gathers the parameters and reduce-scatters the gradients once "
        "per step (a pipeline schedule over FSDP2, Megatron's distributed optimizer); every_microbatch = again in "
        "every microbatch, as PyTorch FSDP (FULL_SHARD or SHARD_GRAD_OP, without no_sync), Megatron-FSDP "
        "(optim_grads_params) and DeepSpeed ZeRO-3 do in a gradient-accumulation loop",
    ),
    _choice(
        "training.moe_dispatch",
        MOE_DISPATCHES,
        "per_expert",
        source="convention: per_expert, one copy of a token per routed expert on another node crosses the NIC "
        "(Megatron-Core's all-to-all token dispatcher); per_node = one copy per target node over the NIC, "
        "forwarded inside the node over the scale-up link (DeepSeek-V3 §3.2.2; DeepEP's internode kernels, "
        "Megatron-Core's flex dispatcher)",
    ),
    # How routed tokens load the experts and travel: as the learned router and Megatron-Core send them by default.
    _num(
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
    _flag(
        "training.moe_pad_to_capacity",
        default=False,
        source="convention: an expert computes the tokens routed to it; true = every expert's input padded to "
        "its capacity (Megatron-Core's moe_pad_expert_input_to_capacity; NeMo's MegatronTokenDropCallback)",
    ),
    _flag(
        "training.moe_force_balance",
        default=False,
        source="convention: tokens go where the learned router sends them; true = the router bypassed for "
        "benchmarks, balanced in expectation and priced at the mean load (Megatron-Core's "
        "moe_router_force_load_balancing, random logits)",
    ),
    _flag(
        "training.moe_fp8_dispatch",
        default=False,
        source="convention: the routed tokens dispatched in the activations' dtype, BF16 (Megatron-Core's "
        "dispatchers: moe_dispatch_fwd_dtype 'bf16'); true = in FP8, 1 byte an element, the combine in BF16 "
        "(DeepSeek-V3 §3.3.2); needs training.precision fp8",
    ),
    *_LAYOUT_FIELDS,
    _obj("training.efficiency"),
    _num("training.efficiency.compute", 0, 1, "fraction", excl=True, nullable=True),
    _obj("training.efficiency.overlap"),
    *(_overlap(dim) for dim in ("tp", "cp", "pp", "dp", "ep")),
    _obj("training.efficiency.effects"),
    *(
        _flag(f"training.efficiency.effects.{name}", default=EFFECT_DOCUMENT_DEFAULTS[name], source=source)
        for name, source in _EFFECTS
    ),
    _obj("training.checkpoint"),
    _num(
        "training.checkpoint.interval_h",
        0,
        MAX_CHECKPOINT_INTERVAL_H,
        "h",
        excl=True,
        nullable=True,
        default=None,
        source="None = the optimum of training.checkpoint.interval_method on the real write time",
    ),
    _int(
        "training.checkpoint.writers",
        1,
        MAX_GPUS,
        nullable=True,
        default=None,
        source="None = one writer per node: with ZeRO-1 or FSDP every node holds a distinct shard of the "
        "model and optimizer state, and sharded checkpointing (PyTorch DCP, Megatron dist-ckpt) has each "
        "node write its own shard in parallel",
    ),
    _choice(
        "training.checkpoint.interval_method",
        INTERVAL_METHODS,
        "daly",
        source="Daly 2006, 'A higher order estimate of the optimum checkpoint interval for restart dumps', "
        "FGCS 22(3):303-312, eq. 37; 'young' = Young 1974, CACM 17(9), sqrt(2 C M); 'exact' = the optimum "
        "of the expected_loss ledger, T = M (1 + W0(-e^(-1-C/M)))",
    ),
    _choice(
        "training.checkpoint.goodput_ledger",
        GOODPUT_LEDGERS,
        "expected_loss",
        source="writes + rework (half an interval plus the write in flight per failure) + restarts, each "
        "failure counted over the wall-clock time it lengthens (Daly 2006 §3 renewal argument)",
    ),
    # --- economics -------------------------------------------------------------------------------------
    _obj("economics"),
    _num(
        "economics.job_days",
        0,
        MAX_JOB_DAYS,
        "days",
        excl=True,
        nullable=True,
        default=None,
        source="None = the wall-clock time to train training.total_tokens, or economics.window_days when no "
        "total is given (CONTRACT.md v1 Duration convention)",
    ),
    _num(
        "economics.amortization_years",
        0,
        MAX_YEARS,
        "years",
        excl=True,
        default=3.0,
        source="straight-line over 3 years, mlsysim EconomicsModel (seed 000 §5); CONTRACT.md v1",
    ),
    _num(
        "economics.infra_multiplier",
        0,
        MAX_INFRA_MULTIPLIER,
        excl=True,
        default=1.0,
        source="1.0 = accelerators only (CONTRACT.md v1, mlsysim default); mlsysim source comments put full "
        "facility cost at 2.0-2.5 (seed 000 §5)",
    ),
    _num(
        "economics.maintenance_per_year",
        0,
        MAX_MAINTENANCE_PER_YEAR,
        "fraction",
        default=0.05,
        source="5% of capex per year, mlsysim EconomicsModel (seed 000 §5)",
    ),
    _num(
        "economics.cloud_usd_per_gpu_hour",
        0,
        MAX_CLOUD_USD_PER_GPU_HOUR,
        "USD/GPU-h",
        nullable=True,
        default=None,
        source="None = no cloud comparison unless a price book gives one",
        price=True,
    ),
    _num(
        "economics.embodied_lifetime_years",
        0,
        MAX_YEARS,
        "years",
        excl=True,
        default=5.0,
        source="service life over which embodied carbon is amortised; CONTRACT.md v1 (accelerator embodied "
        "carbon per unit comes from the accelerator catalog)",
    ),
)


# The table in force (a test may put another in its place to see a new row reach every consumer).
TABLE = FieldTable(FIELDS)


def field_limits() -> dict[str, dict[str, Any]]:
    """Every numeric field's bounds by document path, from the table in force (``TABLE``)."""
    return TABLE.limits()


# Every numeric field's bounds by document path, for API documentation and form validation; the parser
# enforces exactly these (inclusive unless exclusive_minimum).
FIELD_LIMITS: dict[str, dict[str, Any]] = TABLE.limits()
