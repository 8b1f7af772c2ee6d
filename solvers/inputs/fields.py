"""The one table of the scenario document's fields: path, type, unit, limits, default and its source.

Every field a scenario document (CONTRACT.md v1) may hold is one ``Field`` row of ``FIELDS``. The part parsers
(``solvers.inputs.model`` ... ``economics``) read their keys, numeric limits and static defaults from it;
``FIELD_LIMITS`` (API documentation, form validation, ``solvers.prices.price_limits``), the JSON Schema
(``solvers.inputs.json_schema``) and ``solvers.ledger_defaults.DEFAULTS`` are derived from it. A default that
depends on other fields (``model.ffn_hidden`` from ``hidden``, ``training.seq_len`` from the model preset,
``cluster.gpus`` from the node) is computed by its parser, which names its source there.

Limits are inclusive unless ``exclusive_min``; change them only with the CHANGELOG. Rows are listed in the
order of the document, which is the order in which errors are reported and unknown keys are matched.

Adding a field is one row here (or in ``solvers.inputs.training_fields``) and its physics: a number with a static default in ``site``, ``economics``,
``cluster.storage``, ``cluster.power`` or an accelerator is read, limit-checked, defaulted, written to the
document and to the assumptions by its part's parser without further code (``tests/solvers/test_inputs.py``
shows one); the physics that uses it takes it through a spec or ``LedgerFields`` (``scenario.py``).
"""

from typing import Any

from solvers.catalog import calibration
from solvers.inputs.rows import (
    MAX_CLOUD_USD_PER_GPU_HOUR,
    MAX_COMPONENTS_PER_NODE,
    MAX_ELECTRICITY_USD_PER_KWH,
    MAX_EMBODIED_KGCO2E,
    MAX_EXPERTS,
    MAX_FFN_HIDDEN,
    MAX_GPUS,
    MAX_GPUS_PER_NODE,
    MAX_GRID_GCO2_PER_KWH,
    MAX_HBM_GB,
    MAX_HBM_TB_S,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_HOST_W_PER_NODE,
    MAX_INFRA_MULTIPLIER,
    MAX_JOB_DAYS,
    MAX_LAYERS,
    MAX_MAINTENANCE_PER_YEAR,
    MAX_MTP_LAYERS,
    MAX_MTTF_H,
    MAX_OTHER_COMPONENTS,
    MAX_PARAMS,
    MAX_PEAK_TFLOPS,
    MAX_PUE,
    MAX_RESTART_S,
    MAX_STORAGE_GB_S,
    MAX_TDP_W,
    MAX_UNIT_PRICE_USD,
    MAX_VOCAB,
    MAX_WUE_L_PER_KWH,
    MAX_YEARS,
    MIN_EFFICIENCY,
    MIN_HBM_TB_S,
    MIN_MTTF_H,
    MIN_PEAK_TFLOPS,
    MIN_PUE,
    MIN_STORAGE_GB_S,
    MIN_YEARS,
    choice,
    flag,
    integer,
    link,
    num,
    obj,
)
from solvers.inputs.table import NO_DEFAULT, NUMERIC, Field, FieldTable
from solvers.inputs.training_fields import TRAINING_FIELDS
from solvers.specs import MTBF_CONVENTIONS, PRECISIONS

SCHEMA_VERSION = 1

PARTS: tuple[str, ...] = ("model", "cluster", "site", "training", "economics")

__all__ = ["FIELDS", "FIELD_LIMITS", "NO_DEFAULT", "NUMERIC", "TABLE", "Field", "FieldTable", "field_limits"]

_SEED000 = "seed 000 §3 (mlsysim 0.1.2 ReliabilityModel defaults)"
_TEXT = 200

FIELDS: tuple[Field, ...] = (
    Field("schema_version", "const", default=SCHEMA_VERSION),
    Field("name", "text", max_len=2000),
    Field("description", "text", max_len=2000),
    # --- model -----------------------------------------------------------------------------------------
    obj("model"),
    Field("model.preset", "key", catalog="MODELS", nullable=True),
    Field("model.name", "text", max_len=_TEXT, nullable=True),
    integer("model.layers", 1, MAX_LAYERS),
    integer("model.hidden", 1, MAX_HIDDEN),
    integer("model.ffn_hidden", 1, MAX_FFN_HIDDEN),
    integer("model.heads", 1, MAX_HEADS),
    integer("model.kv_heads", 1, MAX_HEADS),
    integer("model.head_dim", 1, MAX_HIDDEN),
    integer("model.vocab", 1, MAX_VOCAB),
    num("model.params", 1, MAX_PARAMS, "parameters"),
    num("model.active_params", 1, MAX_PARAMS, "parameters"),
    flag("model.gated_mlp", default=True, source="convention: SwiGLU MLP with three matrices (Llama family)"),
    flag("model.tied_embeddings", default=False, source="convention: separate input and output embeddings"),
    flag(
        "model.dropout",
        default=True,
        source="convention: trained with dropout, whose masks are stored (Korthikanti et al. 2022 §4.2 count; "
        "GPT-3-style models in Megatron-LM)",
    ),
    integer(
        "model.mtp_layers",
        0,
        MAX_MTP_LAYERS,
        default=0,
        source="convention: next-token loss only, no multi-token-prediction module",
    ),
    obj("model.moe"),
    integer("model.moe.experts", 1, MAX_EXPERTS),
    integer("model.moe.top_k", 1, MAX_EXPERTS),
    integer("model.moe.expert_ffn_hidden", 1, MAX_FFN_HIDDEN),
    integer("model.moe.shared_experts", 0, MAX_EXPERTS, default=0, source="convention: no shared expert"),
    integer("model.moe.moe_layers", 1, MAX_LAYERS),
    integer(
        "model.moe.max_nodes_per_token",
        1,
        MAX_GPUS,
        nullable=True,
        default=None,
        source="convention: routing not limited by node (node-limited routing: DeepSeek-V3 §2.1.2, at most 4 "
        "nodes a token; read only with training.moe_dispatch per_node)",
    ),
    integer(
        "model.moe.max_gpus_per_token",
        1,
        MAX_GPUS,
        nullable=True,
        default=None,
        source="convention: routing not limited by device (device-limited routing: DeepSeek-V2 §2.2.1, at most 3 "
        "devices a token; read only with training.moe_dispatch per_node)",
    ),
    obj("model.mla"),
    integer(
        "model.mla.q_lora_rank",
        0,
        MAX_HIDDEN,
        default=0,
        source="convention: queries projected from the hidden state without a latent (DeepSeek-V2-Lite)",
    ),
    integer("model.mla.kv_lora_rank", 1, MAX_HIDDEN),
    integer("model.mla.qk_nope_head_dim", 1, MAX_HIDDEN),
    integer("model.mla.qk_rope_head_dim", 0, MAX_HIDDEN),
    integer("model.mla.v_head_dim", 1, MAX_HIDDEN),
    # --- cluster ---------------------------------------------------------------------------------------
    obj("cluster"),
    Field("cluster.node", "key", catalog="NODES", nullable=True),
    obj("cluster.accelerator", or_key="ACCELERATORS"),
    Field("cluster.accelerator.preset", "key", catalog="ACCELERATORS", nullable=True),
    Field("cluster.accelerator.name", "text", max_len=_TEXT),
    Field("cluster.accelerator.peak_tflops", "object"),
    *(
        num(f"cluster.accelerator.peak_tflops.{p}", MIN_PEAK_TFLOPS, MAX_PEAK_TFLOPS, "TFLOP/s")
        for p in PRECISIONS
    ),
    num("cluster.accelerator.hbm_gb", 0, MAX_HBM_GB, "GB", excl=True),
    num("cluster.accelerator.hbm_tb_s", MIN_HBM_TB_S, MAX_HBM_TB_S, "TB/s"),
    num("cluster.accelerator.tdp_w", 0, MAX_TDP_W, "W", excl=True),
    num(
        "cluster.accelerator.unit_price_usd",
        0,
        MAX_UNIT_PRICE_USD,
        "USD",
        default=0.0,
        source="custom accelerator without a price: capex counts 0",
        price=True,
    ),
    num(
        "cluster.accelerator.embodied_kgco2e",
        0,
        MAX_EMBODIED_KGCO2E,
        "kgCO2e",
        default=0.0,
        source="custom accelerator without an embodied figure: 0 (mlsysim's default)",
    ),
    num(
        "cluster.accelerator.compute_efficiency",
        MIN_EFFICIENCY,
        1,
        "fraction",
        default=float(calibration.GENERIC_COMPUTE_EFFICIENCY[0]),
        source="custom accelerator: the calibration's generic compute efficiency",
    ),
    integer("cluster.gpus", 1, MAX_GPUS),
    integer("cluster.gpus_per_node", 1, MAX_GPUS_PER_NODE),
    *link("cluster.scale_up"),
    integer(
        "cluster.scale_up.mesh_gpus",
        2,
        MAX_GPUS_PER_NODE,
        nullable=True,
        default=None,
        source="convention: a switched scale-up domain (NVSwitch), every GPU's full link rate to any peer; n = "
        "the GPUs of a direct full mesh without a switch (an HGX 4-GPU board: 18 NVLink4 links, 6 to each of 3 "
        "peers), each GPU's links split evenly over the other n - 1",
    ),
    *link("cluster.scale_out"),
    obj("cluster.storage"),
    num(
        "cluster.storage.write_gb_s",
        MIN_STORAGE_GB_S,
        MAX_STORAGE_GB_S,
        "GB/s",
        default=500.0,
        source="mlsysim CheckpointModel parallel file-system cap, 500 GB/s (seed 000 §3.2)",
    ),
    num(
        "cluster.storage.per_writer_gb_s",
        MIN_STORAGE_GB_S,
        MAX_STORAGE_GB_S,
        "GB/s",
        default=7.0,
        source="effective write rate of one writing node: 988.4 GB / 141.2 s in mlsysim (seed 000 §3.2); "
        "close to the ~7 GB/s sequential write of one data-center NVMe SSD or one 100 GbE client stream",
    ),
    obj("cluster.reliability"),
    num(
        "cluster.reliability.gpu_mttf_h",
        MIN_MTTF_H,
        MAX_MTTF_H,
        "h",
        default=50_000.0,
        source=f"{_SEED000}; CONTRACT.md v1 reliability convention. Llama 3 (Dubey et al. 2024, §3.3.4, Table 5) "
        "observed about 246 GPU interruptions (GPU issues, 58.7% of 419) in 54 days on 16,384 H100, i.e. "
        "~86,000 GPU-hours per GPU interruption.",
    ),
    num(
        "cluster.reliability.nic_mttf_h",
        MIN_MTTF_H,
        MAX_MTTF_H,
        "h",
        default=150_000.0,
        source=f"{_SEED000}; CONTRACT.md v1",
    ),
    num(
        "cluster.reliability.psu_mttf_h",
        MIN_MTTF_H,
        MAX_MTTF_H,
        "h",
        default=100_000.0,
        source=f"{_SEED000}; CONTRACT.md v1",
    ),
    integer(
        "cluster.reliability.psus_per_node",
        0,
        MAX_COMPONENTS_PER_NODE,
        default=2,
        source=f"{_SEED000}: 2 PSUs in series per 8-GPU node",
    ),
    integer(
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
        MIN_MTTF_H,
        MAX_MTTF_H,
        max_items=MAX_OTHER_COMPONENTS,
        default=(),
        source="none: only the components the cluster names are in series (CONTRACT.md v1)",
    ),
    num(
        "cluster.reliability.restart_s",
        0,
        MAX_RESTART_S,
        "s",
        default=300.0,
        source="mlsysim ReliabilityModel recovery time R = 300 s (seed 000 §3.3)",
    ),
    choice(
        "cluster.reliability.mtbf_convention",
        MTBF_CONVENTIONS,
        "node_series",
        source="node-level series model: node MTBF = 1/sum(count_i/MTTF_i), cluster MTBF = node MTBF / nodes "
        "(seed 000 §3; any component stops a synchronous job)",
    ),
    obj("cluster.power"),
    num(
        "cluster.power.host_w_per_node",
        0,
        MAX_HOST_W_PER_NODE,
        "W",
        default=2_000.0,
        source="CPUs, memory, NICs, NVSwitches and fans of an 8-GPU node under training load; NVIDIA DGX H100 "
        "data sheet gives 10.2 kW max for the system, 8 x 700 W of which are GPUs (4.6 kW non-GPU ceiling)",
    ),
    num(
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
    obj("site"),
    Field(
        "site.region",
        "key",
        catalog="REGIONS",
        nullable=True,
        default=None,
        source="None = no region: the site.* defaults above apply",
    ),
    num(
        "site.grid_gco2_per_kwh",
        0,
        MAX_GRID_GCO2_PER_KWH,
        "gCO2e/kWh",
        default=480.0,
        source="world average 2023, Ember Global Electricity Review 2024",
    ),
    num(
        "site.pue",
        MIN_PUE,
        MAX_PUE,
        default=1.56,
        source="global average PUE, Uptime Institute Global Data Center Survey 2024",
    ),
    num(
        "site.wue_l_per_kwh",
        0,
        MAX_WUE_L_PER_KWH,
        "L/kWh",
        default=1.8,
        source="industry average on-site WUE, Shehabi et al. 'United States Data Center Energy Usage Report' "
        "(LBNL 2016); The Green Grid WP#35 defines WUE per kWh of IT energy",
    ),
    num(
        "site.electricity_usd_per_kwh",
        0,
        MAX_ELECTRICITY_USD_PER_KWH,
        "USD/kWh",
        default=0.12,
        source="mlsysim EconomicsModel default electricity price (seed 000 §5)",
        price=True,
    ),
)

FIELDS += TRAINING_FIELDS

FIELDS += (
    # --- economics -------------------------------------------------------------------------------------
    obj("economics"),
    num(
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
    num(
        "economics.amortization_years",
        MIN_YEARS,
        MAX_YEARS,
        "years",
        default=3.0,
        source="straight-line over 3 years, mlsysim EconomicsModel (seed 000 §5); CONTRACT.md v1",
    ),
    num(
        "economics.infra_multiplier",
        0,
        MAX_INFRA_MULTIPLIER,
        excl=True,
        default=1.0,
        source="1.0 = accelerators only (CONTRACT.md v1, mlsysim default); mlsysim source comments put full "
        "facility cost at 2.0-2.5 (seed 000 §5)",
    ),
    num(
        "economics.maintenance_per_year",
        0,
        MAX_MAINTENANCE_PER_YEAR,
        "fraction",
        default=0.05,
        source="5% of capex per year, mlsysim EconomicsModel (seed 000 §5)",
    ),
    num(
        "economics.cloud_usd_per_gpu_hour",
        0,
        MAX_CLOUD_USD_PER_GPU_HOUR,
        "USD/GPU-h",
        nullable=True,
        default=None,
        source="None = no cloud comparison unless a price book gives one",
        price=True,
    ),
    num(
        "economics.embodied_lifetime_years",
        MIN_YEARS,
        MAX_YEARS,
        "years",
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
