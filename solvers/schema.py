"""Scenario document (CONTRACT.md v1) -> resolved scenario: validated specs, a layout batch and the ledger.

Parsing is strict: an unknown key is an error (with "did you mean" when a known key is close), every number
must be finite, of the right type and inside the documented limits below, and every catalog key must exist.
All errors found are collected into one ``ScenarioError``, each naming its field path.

Resolution merges presets and fills defaults in this order, highest first:
  explicit field > preset the scenario names (model.preset, cluster.node, cluster.accelerator,
  cluster.scale_up / scale_out, site.region) > default (``solvers.ledger_defaults.DEFAULTS`` for the
  reliability / storage / power / site / economics fields, the conventions named below otherwise).
Every value the numbers rest on is written to the assumptions ledger ``[{key, value, unit, source}]``:
"scenario" when the user gave it, the preset's citation when a preset did, the default's source otherwise.

The resolved ``document`` is itself a complete, valid scenario document (presets expanded, every default
explicit), so re-solving it gives the same report and ``canonical_hash(document)`` identifies the input
(``Resolved.input_hash``). The model, cluster, site and economics parts are pure functions of their own
content and are cached by it (``_parsed_part``): a preset or a stored cluster scenario that many plans share
is parsed once, and every resolve gets fresh copies of its documents and assumptions.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from solvers import catalog
from solvers.canonical import canonical_json
from solvers.errors import FieldError, ScenarioError, SolverInternalError
from solvers.ledger_defaults import DEFAULTS, GOODPUT_LEDGERS, INTERVAL_METHODS, MTBF_CONVENTIONS
from solvers.plain import all_plain_finite, fresh_entries, plain_key, read_only_entries, to_plain
from solvers.specs import (
    GRAD_REDUCE_DTYPES,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE_CODE,
    RECOMPUTE_POLICIES,
    SCHEDULE_CODE,
    SCHEDULES,
    AcceleratorSpec,
    ClusterSpec,
    LayoutBatch,
    LinkSpec,
    ModelSpec,
    MoESpec,
    OverlapSpec,
    TrainingSpec,
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

# Default global batch when the scenario gives none: ~4M tokens, the order of GPT-3 175B's 3.2M
# (Brown et al. 2020, Table 2.1) and Llama 3's first stage (4M, Llama 3 §3.4.1).
DEFAULT_BATCH_TOKENS = 4_194_304
DEFAULT_SEQ_LEN = 4096
DEFAULT_MODEL_PRESET = "llama3-8b"

PARTS: tuple[str, ...] = ("model", "cluster", "site", "training", "economics")
TOP_KEYS: tuple[str, ...] = ("schema_version", "name", "description", *PARTS)

SCENARIO = "scenario"  # source of a value the user gave


@dataclass(frozen=True)
class Resolved:
    """A fully resolved scenario: what the engine and the ledger need, and how each value was chosen."""

    document: dict[str, Any]  # complete explicit scenario document (presets expanded, defaults filled)
    model: ModelSpec
    cluster: ClusterSpec
    training: TrainingSpec
    layouts: LayoutBatch  # one layout; empty when layout_auto (solvers.search enumerates the candidates)
    layout_auto: bool
    ledger_fields: dict[
        str, Any
    ]  # every LedgerInputs field except step_s, gpu_busy_fraction, tokens_per_step
    assumptions: list[dict[str, Any]]
    warnings: list[str]
    # canonical_hash(document), computed by ``resolve`` from the canonical text of each part; empty when
    # the Resolved was built some other way (the report then hashes the document itself).
    input_hash: str = ""


# ------------------------------------------------------------------------------------------------------------
# low-level readers
# ------------------------------------------------------------------------------------------------------------


class _Reader:
    """Collects field errors and assumptions while a document is read."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.assumptions: list[dict[str, Any]] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path=path, message=message))

    def note(self, key: str, value: Any, unit: str, source: str) -> None:
        if value.__class__ not in _PLAIN_TYPES:
            value = to_plain(value)
        self.assumptions.append({"key": key, "value": value, "unit": unit, "source": source})

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
        """``value`` as a dict whose keys are all in ``allowed``; None (and an error) otherwise."""
        if not isinstance(value, Mapping):
            self.error(path, f"must be an object, got {_type_name(value)}")
            return None
        ok = True
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                hint = catalog.did_you_mean(str(key), allowed)
                self.error(_join(path, str(key)), f"unknown field{hint}")
                ok = False
        return dict(value) if ok else {k: v for k, v in value.items() if k in allowed}

    def number(
        self,
        value: Any,
        path: str,
        *,
        minimum: float,
        maximum: float,
        integer: bool = False,
        exclusive_min: bool = False,
    ) -> float | int | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "an integer" if integer else "a number"
            self.error(path, f"must be {kind}, got {_type_name(value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.error(path, "must be finite")
            return None
        if value > maximum:  # before any float() of a huge int, which would overflow
            self.error(path, f"must be <= {_fmt(maximum)}, got {_fmt(value)}")
            return None
        if integer:
            if isinstance(value, float) and not value.is_integer():
                self.error(path, f"must be an integer, got {value!r}")
                return None
            value = int(value)
        too_low = value <= minimum if exclusive_min else value < minimum
        if too_low:
            rel = ">" if exclusive_min else ">="
            self.error(path, f"must be {rel} {_fmt(minimum)}, got {_fmt(value)}")
            return None
        return value if integer else float(value)

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be one of {', '.join(choices)}; got {_type_name(value)}")
            return None
        if value not in choices:
            hint = catalog.did_you_mean(value, choices)
            self.error(path, f"must be one of {', '.join(choices)}; got '{value}'{hint}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.error(path, f"must be true or false, got {_type_name(value)}")
            return None
        return value

    def text(self, value: Any, path: str, max_len: int = 200) -> str | None:
        if not isinstance(value, str) or len(value) > max_len:
            self.error(path, f"must be a string of at most {max_len} characters")
            return None
        return value

    def key(self, value: Any, path: str, table: Mapping[str, Any], kind: str) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be a {kind} catalog key (string), got {_type_name(value)}")
            return None
        if value not in table:
            hint = catalog.did_you_mean(value, table)
            self.error(path, f"unknown {kind} '{value}'{hint}")
            return None
        return str.__str__(value)  # an exact str even for a str subclass (an enum member)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _fmt(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 10**18:
        return f"~1e{len(str(abs(value))) - 1}"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


_PLAIN_TYPES = frozenset({int, float, str, bool, type(None)})


# Numeric field table: path tail -> (minimum, maximum, integer, exclusive_min, unit)
_Num = tuple[float, float, bool, bool, str]


def _read_fields(
    r: _Reader,
    given: dict[str, Any],
    path: str,
    fields: Mapping[str, _Num],
    *,
    nullable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Read each numeric field present in ``given``; absent ones are left out of the result."""
    out: dict[str, Any] = {}
    for name, (lo, hi, integer, excl, _unit) in fields.items():
        if name not in given:
            continue
        value = given[name]
        if value is None and name in nullable:
            out[name] = None
            continue
        parsed = r.number(
            value, _join(path, name), minimum=lo, maximum=hi, integer=integer, exclusive_min=excl
        )
        if parsed is not None:
            out[name] = parsed
    return out


def _resolve_value(
    r: _Reader,
    path: str,
    name: str,
    given: Mapping[str, Any],
    *,
    preset: Mapping[str, Any] | None,
    preset_source: Callable[[str], str] | None,
    default: Any,
    default_source: str,
    unit: str,
) -> Any:
    """Pick explicit > preset > default for ``name`` and record the choice in the assumptions ledger."""
    if name in given:
        value, source = given[name], SCENARIO
    elif preset is not None and name in preset and preset_source is not None:
        value, source = preset[name], preset_source(name)
    else:
        value, source = default, default_source
    # r.note, inlined: this runs for every field of every scenario.
    r.assumptions.append(
        {
            "key": f"{path}.{name}" if path else name,
            "value": value if value.__class__ in _PLAIN_TYPES else to_plain(value),
            "unit": unit,
            "source": source,
        }
    )
    return value


# Defaults of fields the ledger's table does not carry.
_LOCAL_DEFAULTS: dict[str, tuple[Any, str, str]] = {
    "economics.job_days": (
        None,
        "days",
        "None = the wall-clock time to train training.total_tokens, or economics.window_days when no "
        "total is given (CONTRACT.md v1 Duration convention)",
    ),
}


def _ledger_default(
    r: _Reader, path: str, name: str, given: Mapping[str, Any], unit: str | None = None
) -> Any:
    key = _join(path, name)
    if key in _LOCAL_DEFAULTS:
        value, local_unit, source = _LOCAL_DEFAULTS[key]
        return _resolve_value(
            r,
            path,
            name,
            given,
            preset=None,
            preset_source=None,
            default=value,
            default_source=source,
            unit=local_unit if unit is None else unit,
        )
    d = DEFAULTS[key]
    return _resolve_value(
        r,
        path,
        name,
        given,
        preset=None,
        preset_source=None,
        default=d.value,
        default_source=d.source,
        unit=d.unit if unit is None else unit,
    )


# ------------------------------------------------------------------------------------------------------------
# model
# ------------------------------------------------------------------------------------------------------------

_MODEL_NUMS: dict[str, _Num] = {
    "layers": (1, MAX_LAYERS, True, False, ""),
    "hidden": (1, MAX_HIDDEN, True, False, ""),
    "ffn_hidden": (1, MAX_FFN_HIDDEN, True, False, ""),
    "heads": (1, MAX_HEADS, True, False, ""),
    "kv_heads": (1, MAX_HEADS, True, False, ""),
    "vocab": (1, MAX_VOCAB, True, False, ""),
    "params": (1, MAX_PARAMS, False, False, "parameters"),
    "active_params": (1, MAX_PARAMS, False, False, "parameters"),
}
_MOE_NUMS: dict[str, _Num] = {
    "experts": (1, MAX_EXPERTS, True, False, ""),
    "top_k": (1, MAX_EXPERTS, True, False, ""),
    "expert_ffn_hidden": (1, MAX_FFN_HIDDEN, True, False, ""),
    "shared_experts": (0, MAX_EXPERTS, True, False, ""),
    "moe_layers": (1, MAX_LAYERS, True, False, ""),
}
MODEL_KEYS: tuple[str, ...] = (
    "preset",
    "name",
    *_MODEL_NUMS,
    "gated_mlp",
    "tied_embeddings",
    "dropout",
    "moe",
)
MOE_KEYS: tuple[str, ...] = tuple(_MOE_NUMS)


@functools.cache
def _model_preset_source(key: str, field: str) -> str:
    sources = catalog.MODELS[key]["sources"]
    cite = sources.get(field) or sources.get("shape") or ""
    return f"model preset '{key}': {cite}".rstrip(": ")


@functools.cache
def _accelerator_preset_source(key: str, field: str) -> str:
    return f"accelerator preset '{key}': {catalog.accelerator_entry(key)['sources'][field]}"


def transformer_params(
    *,
    layers: int,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    gated_mlp: bool,
    tied_embeddings: bool,
    moe: Mapping[str, int] | None,
) -> tuple[float, float]:
    """(total, active) parameter counts of a decoder-only transformer from its shape.

    Per layer: attention 2 h^2 + 2 h (kv_heads x h/heads) (Q and O full width, K and V shared by the
    grouped-query heads, Ainslie et al. 2023), MLP m x h x ffn with m = 3 for SwiGLU (Shazeer 2020) and 2
    otherwise, two norms 2h. An MoE layer has (experts + shared) MLPs of width ``expert_ffn_hidden`` plus a
    router h x experts, and a token touches top_k + shared of them. Embeddings: vocab x h, twice unless tied;
    biases are left out (< 0.1%).

    Example: Llama 3 405B (126 x 16,384, FFN 53,248, 128/8 heads, vocab 128,256, SwiGLU, untied):
    126 x (570.4M + 2,617.2M + 32.8K) + 2 x 2.10B = 405.8B, against 405B published (Llama 3 Table 3).
    """
    head_dim = hidden / heads
    attention = 2.0 * hidden * hidden + 2.0 * hidden * kv_heads * head_dim
    mats = 3.0 if gated_mlp else 2.0
    norms = 2.0 * hidden
    dense_layer = attention + mats * hidden * ffn_hidden + norms
    embeddings = vocab * hidden * (1.0 if tied_embeddings else 2.0) + hidden
    if not moe:
        total = layers * dense_layer + embeddings
        return total, total
    expert = mats * hidden * moe["expert_ffn_hidden"]
    moe_layers = moe["moe_layers"]
    base = attention + norms + hidden * moe["experts"]
    moe_total = base + (moe["experts"] + moe["shared_experts"]) * expert
    moe_active = base + (moe["top_k"] + moe["shared_experts"]) * expert
    dense = (layers - moe_layers) * dense_layer + embeddings
    return dense + moe_layers * moe_total, dense + moe_layers * moe_active


def _parse_model(
    r: _Reader, raw: Any, path: str = "model"
) -> tuple[ModelSpec | None, dict[str, Any], int | None]:
    """Returns the ModelSpec, its explicit document and the preset's pre-training sequence length."""
    given = r.mapping(raw if raw is not None else {}, path, MODEL_KEYS)
    if given is None:
        return None, {}, None
    preset_key: str | None = None
    preset: dict[str, Any] | None = None
    shape_fields = ("layers", "hidden", "heads", "vocab")
    if "preset" in given and given["preset"] is not None:
        preset_key = r.key(given["preset"], _join(path, "preset"), catalog.MODELS, "model")
        if preset_key is None:
            return None, {}, None
        preset = catalog.MODELS[preset_key]
        r.note(_join(path, "preset"), preset_key, "", SCENARIO)
    elif not any(f in given for f in shape_fields):
        preset_key = DEFAULT_MODEL_PRESET
        preset = catalog.MODELS[preset_key]
        r.note(_join(path, "preset"), preset_key, "", "convention: Llama 3 8B when no model is described")
        r.warnings.append(f"model: no model given; using the catalog preset '{preset_key}'")
    nums = _read_fields(r, given, path, _MODEL_NUMS)
    for flag in ("gated_mlp", "tied_embeddings", "dropout"):
        if flag in given:
            parsed = r.boolean(given[flag], _join(path, flag))
            if parsed is not None:
                nums[flag] = parsed
    name = given.get("name")
    if name is not None and r.text(name, _join(path, "name")) is None:
        name = None

    def psrc(field: str) -> str:
        return _model_preset_source(preset_key or "", field)

    if preset is None:
        missing = [f for f in shape_fields if f not in given]
        for field in missing:
            r.error(_join(path, field), "required (or give model.preset)")
    if any(e.path.startswith(path) for e in r.errors):
        return None, {}, None

    def pick(field: str, default: Any, source: str, unit: str = "") -> Any:
        return _resolve_value(
            r,
            path,
            field,
            nums,
            preset=preset,
            preset_source=psrc if preset else None,
            default=default,
            default_source=source,
            unit=unit,
        )

    layers = int(pick("layers", None, ""))
    hidden = int(pick("hidden", None, ""))
    heads = int(pick("heads", None, ""))
    vocab = int(pick("vocab", None, ""))
    gated = bool(pick("gated_mlp", True, "convention: SwiGLU MLP with three matrices (Llama family)"))
    if gated:
        ffn_default = int(math.ceil(8 * hidden / 3 / 256) * 256)
        ffn_src = "convention: SwiGLU width 8h/3 rounded up to a multiple of 256 (Llama reference code)"
    else:
        ffn_default, ffn_src = 4 * hidden, "convention: 4 x hidden (GPT-3, Brown et al. 2020 §2.1)"
    ffn_hidden = int(pick("ffn_hidden", ffn_default, ffn_src))
    kv_heads = int(pick("kv_heads", heads, "convention: multi-head attention, kv_heads = heads"))
    tied = bool(pick("tied_embeddings", False, "convention: separate input and output embeddings"))
    dropout = bool(
        pick(
            "dropout",
            True,
            "convention: trained with dropout, whose masks are stored (Korthikanti et al. 2022 §4.2 count; "
            "GPT-3-style models in Megatron-LM)",
        )
    )

    if hidden % heads:
        r.error(_join(path, "hidden"), f"must be divisible by model.heads (={heads:,})")
    if heads % kv_heads:
        r.error(_join(path, "kv_heads"), f"must divide model.heads (={heads:,})")

    moe_doc: dict[str, int] | None = None
    moe_src_given = "moe" in given
    moe_raw = given["moe"] if moe_src_given else (preset or {}).get("moe")
    if moe_raw is not None:
        moe_path = _join(path, "moe")
        moe_given = r.mapping(moe_raw, moe_path, MOE_KEYS)
        if moe_given is not None:
            moe_nums = _read_fields(r, moe_given, moe_path, _MOE_NUMS)
            if moe_src_given:
                for field in ("experts", "top_k", "expert_ffn_hidden"):
                    if field not in moe_given:
                        r.error(_join(moe_path, field), "required for a mixture-of-experts model")
            if len(moe_nums) == len(moe_given) and not any(e.path.startswith(moe_path) for e in r.errors):
                source = SCENARIO if moe_src_given else f"model preset '{preset_key}': " + psrc("shape")
                moe_doc = {
                    "experts": int(moe_nums["experts"]),
                    "top_k": int(moe_nums["top_k"]),
                    "expert_ffn_hidden": int(moe_nums["expert_ffn_hidden"]),
                    "shared_experts": int(moe_nums.get("shared_experts", 0)),
                    "moe_layers": int(moe_nums.get("moe_layers", layers)),
                }
                for field, value in moe_doc.items():
                    src = source if field in moe_given or not moe_src_given else "convention: default"
                    if field == "shared_experts" and field not in moe_given:
                        src = "convention: no shared expert"
                    if field == "moe_layers" and field not in moe_given:
                        src = "convention: every layer is an MoE layer"
                    r.note(_join(moe_path, field), value, "", src)
                if moe_doc["top_k"] > moe_doc["experts"]:
                    r.error(
                        _join(moe_path, "top_k"), f"must be <= model.moe.experts (={moe_doc['experts']:,})"
                    )
                if moe_doc["moe_layers"] > layers:
                    r.error(_join(moe_path, "moe_layers"), f"must be <= model.layers (={layers:,})")

    derived_total, derived_active = transformer_params(
        layers=layers,
        hidden=hidden,
        ffn_hidden=ffn_hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        gated_mlp=gated,
        tied_embeddings=tied,
        moe=moe_doc,
    )
    derived_src = "derived from the architecture (solvers.schema.transformer_params)"
    params = float(pick("params", derived_total, derived_src, "parameters"))
    if moe_doc is None:
        active_default, active_src = params, "dense model: active_params = params"
    else:
        # Keep the published total and remove the experts a token does not visit.
        active_default = params - (derived_total - derived_active)
        active_src = "params minus the routed experts a token skips (solvers.schema.transformer_params)"
    active = float(pick("active_params", active_default, active_src, "parameters"))
    if active <= 0:
        r.error(_join(path, "active_params"), "must be > 0 (the experts outweigh params)")
    elif active > params:
        r.error(_join(path, "active_params"), f"must be <= model.params (={params:.4g})")
    model_name = name if name is not None else (preset["name"] if preset else "custom")
    if any(e.path.startswith(path) for e in r.errors):
        return None, {}, None

    doc: dict[str, Any] = {
        "name": model_name,
        "layers": layers,
        "hidden": hidden,
        "ffn_hidden": ffn_hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "vocab": vocab,
        "params": params,
        "active_params": active,
        "gated_mlp": gated,
        "tied_embeddings": tied,
        "dropout": dropout,
        "moe": moe_doc,
    }
    spec = ModelSpec(
        name=model_name,
        layers=layers,
        hidden=hidden,
        ffn_hidden=ffn_hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        params=params,
        active_params=active,
        moe=MoESpec(**moe_doc) if moe_doc else None,
        gated_mlp=gated,
        dropout=dropout,
    )
    preset_seq = int(preset["seq_len"]) if preset is not None and "seq_len" in preset else None
    return spec, doc, preset_seq


# ------------------------------------------------------------------------------------------------------------
# cluster
# ------------------------------------------------------------------------------------------------------------

_ACCEL_NUMS: dict[str, _Num] = {
    "hbm_gb": (0, MAX_HBM_GB, False, True, "GB"),
    "hbm_tb_s": (0, MAX_HBM_TB_S, False, True, "TB/s"),
    "tdp_w": (0, MAX_TDP_W, False, True, "W"),
    "unit_price_usd": (0, MAX_UNIT_PRICE_USD, False, False, "USD"),
    "embodied_kgco2e": (0, MAX_EMBODIED_KGCO2E, False, False, "kgCO2e"),
    "compute_efficiency": (0, 1, False, True, "fraction"),
}
ACCELERATOR_KEYS: tuple[str, ...] = ("preset", "name", "peak_tflops", *_ACCEL_NUMS)
_LINK_NUMS: dict[str, _Num] = {
    "bandwidth_gb_s": (0, MAX_BANDWIDTH_GB_S, False, True, "GB/s"),
    "latency_us": (0, MAX_LATENCY_US, False, False, "us"),
    "oversubscription": (1, MAX_OVERSUBSCRIPTION, False, False, ""),
}
LINK_KEYS: tuple[str, ...] = ("preset", *_LINK_NUMS)
_CLUSTER_NUMS: dict[str, _Num] = {
    "gpus": (1, MAX_GPUS, True, False, ""),
    "gpus_per_node": (1, MAX_GPUS_PER_NODE, True, False, ""),
}
CLUSTER_KEYS: tuple[str, ...] = (
    "node",
    "accelerator",
    "gpus",
    "gpus_per_node",
    "scale_up",
    "scale_out",
    "storage",
    "reliability",
    "power",
)
STORAGE_KEYS: tuple[str, ...] = ("write_gb_s", "per_writer_gb_s")
RELIABILITY_KEYS: tuple[str, ...] = (
    "gpu_mttf_h",
    "nic_mttf_h",
    "psu_mttf_h",
    "psus_per_node",
    "nics_per_node",
    "other_mttf_h",
    "restart_s",
    "mtbf_convention",
)
POWER_KEYS: tuple[str, ...] = ("host_w_per_node", "idle_fraction")
_STORAGE_NUMS: dict[str, _Num] = {
    "write_gb_s": (0, MAX_STORAGE_GB_S, False, True, "GB/s"),
    "per_writer_gb_s": (0, MAX_STORAGE_GB_S, False, True, "GB/s"),
}
_RELIABILITY_NUMS: dict[str, _Num] = {
    "gpu_mttf_h": (0, MAX_MTTF_H, False, True, "h"),
    "nic_mttf_h": (0, MAX_MTTF_H, False, True, "h"),
    "psu_mttf_h": (0, MAX_MTTF_H, False, True, "h"),
    "psus_per_node": (0, MAX_COMPONENTS_PER_NODE, True, False, ""),
    "nics_per_node": (0, MAX_COMPONENTS_PER_NODE, True, False, ""),
    "restart_s": (0, MAX_RESTART_S, False, False, "s"),
}
_POWER_NUMS: dict[str, _Num] = {
    "host_w_per_node": (0, MAX_HOST_W_PER_NODE, False, False, "W"),
    "idle_fraction": (0, 1, False, False, "fraction"),
}


@dataclass(frozen=True)
class _ClusterParts:
    spec: ClusterSpec
    doc: dict[str, Any]
    ledger: dict[str, Any]


def _parse_accelerator(
    r: _Reader, raw: Any, path: str, node_accel: str | None, node_key: str | None
) -> tuple[AcceleratorSpec | None, dict[str, Any], str | None]:
    """Returns the spec, its explicit document and the catalog key it came from (if any)."""
    key: str | None = None
    given: dict[str, Any] = {}
    if raw is None:
        key = node_accel or "h100-sxm"
        src_default = (
            f"node preset '{node_key}'" if node_accel else "convention: NVIDIA H100 SXM when none is named"
        )
        r.note(path, key, "", src_default)
    elif isinstance(raw, str):
        key = r.key(raw, path, catalog.ACCELERATORS, "accelerator")
        if key is None:
            return None, {}, None
        r.note(path, key, "", SCENARIO)
    else:
        mapped = r.mapping(raw, path, ACCELERATOR_KEYS)
        if mapped is None:
            return None, {}, None
        given = mapped
        if given.get("preset") is not None:
            key = r.key(given["preset"], _join(path, "preset"), catalog.ACCELERATORS, "accelerator")
            if key is None:
                return None, {}, None
    base: dict[str, Any] = catalog.accelerator_entry(key) if key else {}
    nums = _read_fields(r, given, path, _ACCEL_NUMS)
    peaks: dict[str, float] = dict(base.get("peak_tflops", {}))
    peak_source = f"accelerator preset '{key}': {base['sources']['peak_tflops']}" if key else SCENARIO
    if "peak_tflops" in given:
        pk_path = _join(path, "peak_tflops")
        pk = r.mapping(given["peak_tflops"], pk_path, PRECISIONS)
        if pk is not None:
            for prec, value in pk.items():
                parsed = r.number(
                    value, _join(pk_path, prec), minimum=0, maximum=MAX_PEAK_TFLOPS, exclusive_min=True
                )
                if parsed is not None:
                    peaks[prec] = float(parsed)
        peak_source = SCENARIO if not key else f"{SCENARIO} over accelerator preset '{key}'"
    if not key:
        for field in ("peak_tflops", "hbm_gb", "hbm_tb_s", "tdp_w"):
            if field not in given:
                r.error(_join(path, field), "required for a custom accelerator (or give a preset)")
    if "bf16" not in peaks and not any(e.path.startswith(_join(path, "peak_tflops")) for e in r.errors):
        r.error(_join(path, "peak_tflops.bf16"), "required: mfu_bf16 is reported against the BF16 dense peak")
    if any(e.path.startswith(path) for e in r.errors):
        return None, {}, None

    def psrc(field: str) -> str:
        return _accelerator_preset_source(key or "", field)

    for prec, value in sorted(peaks.items()):
        r.note(_join(path, f"peak_tflops.{prec}"), value, "TFLOP/s", peak_source)
    values: dict[str, float] = {}
    defaults = {
        "unit_price_usd": (0.0, "custom accelerator without a price: capex counts 0"),
        "embodied_kgco2e": (0.0, "custom accelerator without an embodied figure: 0 (mlsysim's default)"),
        "compute_efficiency": (
            _generic_efficiency(),
            "custom accelerator: the calibration's generic compute efficiency",
        ),
    }
    for field, (_lo, _hi, _i, _e, unit) in _ACCEL_NUMS.items():
        default, dsrc = defaults.get(field, (None, ""))
        values[field] = float(
            _resolve_value(
                r,
                path,
                field,
                nums,
                preset=base or None,
                preset_source=psrc if key else None,
                default=default,
                default_source=dsrc,
                unit=unit,
            )
        )
    name = given.get("name")
    if name is not None and r.text(name, _join(path, "name")) is None:
        return None, {}, None
    name = name or (base.get("name") if key else "custom accelerator")
    spec = AcceleratorSpec(
        name=str(name),
        peak_tflops=peaks,
        hbm_gb=values["hbm_gb"],
        hbm_tb_s=values["hbm_tb_s"],
        tdp_w=values["tdp_w"],
        unit_price_usd=values["unit_price_usd"],
        embodied_kgco2e=values["embodied_kgco2e"],
        compute_efficiency=values["compute_efficiency"],
    )
    doc = {"name": str(name), "peak_tflops": dict(sorted(peaks.items())), **values}
    return spec, doc, key


@functools.cache
def _generic_efficiency() -> float:
    from solvers.catalog import calibration

    generic = getattr(calibration, "GENERIC_COMPUTE_EFFICIENCY", None)
    if generic is not None:
        return float(generic[0] if isinstance(generic, tuple) else generic)
    values = [float(v[0]) for v in calibration.COMPUTE_EFFICIENCY.values()]
    return float(np.median(values))


def _parse_link(
    r: _Reader, raw: Any, path: str, default_key: str, default_source: str
) -> tuple[LinkSpec | None, dict[str, Any]]:
    key: str | None = None
    given: dict[str, Any] = {}
    if raw is None:
        key = default_key
        r.note(path, key, "", default_source)
    elif isinstance(raw, str):
        key = r.key(raw, path, catalog.FABRICS, "fabric")
        if key is None:
            return None, {}
        r.note(path, key, "", SCENARIO)
    else:
        mapped = r.mapping(raw, path, LINK_KEYS)
        if mapped is None:
            return None, {}
        given = mapped
        if given.get("preset") is not None:
            key = r.key(given["preset"], _join(path, "preset"), catalog.FABRICS, "fabric")
            if key is None:
                return None, {}
        elif "bandwidth_gb_s" not in given:
            key = default_key
            r.note(path, key, "", default_source)
    nums = _read_fields(r, given, path, _LINK_NUMS)
    if any(e.path.startswith(path) for e in r.errors):
        return None, {}
    base = catalog.fabric_entry(key) if key else {}
    if key:
        src = base["sources"]
        r.note(
            _join(path, "nominal_gb_s"),
            base["nominal_gb_s"],
            "GB/s",
            f"fabric '{key}': {src['nominal_gb_s']}",
        )
        r.note(
            _join(path, "achievable_factor"),
            base["achievable_factor"],
            "fraction",
            f"fabric '{key}': {src['achievable_factor']}",
        )
    if "bandwidth_gb_s" in nums:
        bandwidth, bw_src = (
            float(nums["bandwidth_gb_s"]),
            f"{SCENARIO} (used as the rate a collective achieves)",
        )
    else:
        bandwidth = float(base["bandwidth_gb_s"])
        bw_src = f"fabric '{key}': nominal x achievable factor"
    r.note(_join(path, "bandwidth_gb_s"), bandwidth, "GB/s", bw_src)
    if "latency_us" in nums:
        latency, lat_src = float(nums["latency_us"]), SCENARIO
    elif key:
        latency, lat_src = float(base["latency_us"]), f"fabric '{key}': {base['sources']['latency_us']}"
    else:
        default_base = catalog.fabric_entry(default_key)
        latency = float(default_base["latency_us"])
        lat_src = f"fabric '{default_key}' ({default_source}): {default_base['sources']['latency_us']}"
    r.note(_join(path, "latency_us"), latency, "us", lat_src)
    if "oversubscription" in nums:
        over, over_src = float(nums["oversubscription"]), SCENARIO
    else:
        over, over_src = 1.0, "convention: non-blocking fabric (full bisection), 1.0"
    r.note(_join(path, "oversubscription"), over, "", over_src)
    return (
        LinkSpec(bandwidth_gb_s=bandwidth, latency_us=latency, oversubscription=over),
        {"bandwidth_gb_s": bandwidth, "latency_us": latency, "oversubscription": over},
    )


def _node_for_accelerator(key: str | None) -> str | None:
    if key is None:
        return None
    for node_key, node in catalog.NODES.items():
        if node["accelerator"] == key:
            return node_key
    return None


def _parse_cluster(r: _Reader, raw: Any, path: str = "cluster") -> _ClusterParts | None:
    given = r.mapping(raw if raw is not None else {}, path, CLUSTER_KEYS)
    if given is None:
        return None
    node_key: str | None = None
    if given.get("node") is not None:
        node_key = r.key(given["node"], _join(path, "node"), catalog.NODES, "node")
        if node_key is None:
            return None
        r.note(_join(path, "node"), node_key, "", SCENARIO)
    elif given.get("accelerator") is None:
        node_key = "dgx-h100"
        r.note(
            _join(path, "node"),
            node_key,
            "",
            "convention: NVIDIA DGX H100 when neither node nor accelerator is named",
        )
    node = catalog.NODES[node_key] if node_key else None
    accel, accel_doc, accel_key = _parse_accelerator(
        r,
        given.get("accelerator"),
        _join(path, "accelerator"),
        node["accelerator"] if node else None,
        node_key,
    )
    if node is None:
        fallback = _node_for_accelerator(accel_key)
        node_src = (
            f"node preset '{fallback}' (the catalog node of this accelerator)"
            if fallback
            else "convention: DGX H100 fabrics for a custom accelerator"
        )
        link_node = catalog.NODES[fallback or "dgx-h100"]
    else:
        link_node = node
        node_src = f"node preset '{node_key}': {node['sources']['node']}"

    nums = _read_fields(
        r,
        given,
        path,
        _CLUSTER_NUMS,
    )
    scale_up, up_doc = _parse_link(
        r, given.get("scale_up"), _join(path, "scale_up"), link_node["scale_up"], node_src
    )
    scale_out, out_doc = _parse_link(
        r, given.get("scale_out"), _join(path, "scale_out"), link_node["scale_out"], node_src
    )
    if "gpus_per_node" in nums:
        gpn, gpn_src = int(nums["gpus_per_node"]), SCENARIO
    else:
        gpn, gpn_src = int(link_node["gpus_per_node"]), node_src
    if "gpus" in nums:
        gpus, gpus_src = int(nums["gpus"]), SCENARIO
    else:
        gpus, gpus_src = gpn, "convention: one node when cluster.gpus is not given"
    if ("gpus_per_node" in nums or "gpus" in nums) and gpus % gpn:
        r.error(
            _join(path, "gpus"),
            f"must be a multiple of cluster.gpus_per_node (={gpn:,}); set gpus_per_node for a partial node",
        )
    r.note(_join(path, "gpus_per_node"), gpn, "", gpn_src)
    r.note(_join(path, "gpus"), gpus, "", gpus_src)

    storage = _section_with_defaults(r, given, path, "storage", STORAGE_KEYS, _STORAGE_NUMS)
    power = _section_with_defaults(r, given, path, "power", POWER_KEYS, _POWER_NUMS)
    rel = _parse_reliability(r, given.get("reliability"), _join(path, "reliability"), gpn)
    if (
        accel is None
        or scale_up is None
        or scale_out is None
        or storage is None
        or power is None
        or rel is None
    ):
        return None
    if any(e.path.startswith(path) for e in r.errors):
        return None
    spec = ClusterSpec(
        accelerator=accel, gpus=gpus, gpus_per_node=gpn, scale_up=scale_up, scale_out=scale_out
    )
    doc = {
        "accelerator": accel_doc,
        "gpus": gpus,
        "gpus_per_node": gpn,
        "scale_up": up_doc,
        "scale_out": out_doc,
        "storage": storage,
        "reliability": rel[0],
        "power": power,
    }
    ledger = {
        "gpus": gpus,
        "gpus_per_node": gpn,
        "accelerator_tdp_w": accel.tdp_w,
        "accelerator_unit_price_usd": accel.unit_price_usd,
        "accelerator_embodied_kgco2e": accel.embodied_kgco2e,
        "storage_write_gb_s": storage["write_gb_s"],
        "storage_per_writer_gb_s": storage["per_writer_gb_s"],
        "host_w_per_node": power["host_w_per_node"],
        "idle_fraction": power["idle_fraction"],
        **rel[1],
    }
    return _ClusterParts(spec=spec, doc=doc, ledger=ledger)


def _section_with_defaults(
    r: _Reader,
    parent: Mapping[str, Any],
    parent_path: str,
    name: str,
    keys: tuple[str, ...],
    fields: Mapping[str, _Num],
    nullable: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """A sub-object whose every field has a ledger default; returns the explicit resolved values."""
    path = _join(parent_path, name)
    raw = parent.get(name)
    given = r.mapping(raw if raw is not None else {}, path, keys)
    if given is None:
        return None
    before = len(r.errors)
    nums = _read_fields(r, given, path, fields, nullable=nullable)
    if len(r.errors) > before:
        return None
    out: dict[str, Any] = {}
    for field in keys:
        if field in fields:
            value = _ledger_default(r, path, field, nums)
            out[field] = None if value is None else (int(value) if fields[field][2] else float(value))
    return out


def _parse_reliability(
    r: _Reader, raw: Any, path: str, gpus_per_node: int
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    given = r.mapping(raw if raw is not None else {}, path, RELIABILITY_KEYS)
    if given is None:
        return None
    before = len(r.errors)
    nums = _read_fields(r, given, path, _RELIABILITY_NUMS, nullable=("nics_per_node",))
    others: tuple[float, ...] | None = None
    if "other_mttf_h" in given:
        raw_others = given["other_mttf_h"]
        op = _join(path, "other_mttf_h")
        if not isinstance(raw_others, list | tuple):
            r.error(op, f"must be a list of MTTFs in hours, got {_type_name(raw_others)}")
        elif len(raw_others) > MAX_OTHER_COMPONENTS:
            r.error(op, f"must have at most {MAX_OTHER_COMPONENTS:,} entries")
        else:
            parsed = [
                r.number(v, f"{op}[{i}]", minimum=0, maximum=MAX_MTTF_H, exclusive_min=True)
                for i, v in enumerate(raw_others)
            ]
            if all(p is not None for p in parsed):
                others = tuple(float(p) for p in parsed if p is not None)
        if others is not None:
            nums["other_mttf_h"] = others
    convention = None
    if "mtbf_convention" in given:
        convention = r.choice(given["mtbf_convention"], _join(path, "mtbf_convention"), MTBF_CONVENTIONS)
        if convention is not None:
            nums["mtbf_convention"] = convention
    if len(r.errors) > before:
        return None
    doc: dict[str, Any] = {}
    for field in RELIABILITY_KEYS:
        doc[field] = _ledger_default(r, path, field, nums)
    if doc["nics_per_node"] is None:
        doc["nics_per_node"] = gpus_per_node
        key = _join(path, "nics_per_node")
        for entry in r.assumptions:
            if entry["key"] == key:  # the default's None becomes the count it stands for
                entry["value"] = gpus_per_node
    doc["other_mttf_h"] = [float(v) for v in doc["other_mttf_h"]]
    for field in ("gpu_mttf_h", "nic_mttf_h", "psu_mttf_h", "restart_s"):
        doc[field] = float(doc[field])
    doc["psus_per_node"] = int(doc["psus_per_node"])
    doc["nics_per_node"] = int(doc["nics_per_node"])
    ledger = {
        "gpu_mttf_h": doc["gpu_mttf_h"],
        "nic_mttf_h": doc["nic_mttf_h"],
        "psu_mttf_h": doc["psu_mttf_h"],
        "nics_per_node": doc["nics_per_node"],
        "psus_per_node": doc["psus_per_node"],
        "other_mttf_h": tuple(doc["other_mttf_h"]),
        "restart_s": doc["restart_s"],
        "mtbf_convention": str(doc["mtbf_convention"]),
    }
    return doc, ledger


# ------------------------------------------------------------------------------------------------------------
# site and economics
# ------------------------------------------------------------------------------------------------------------

_SITE_NUMS: dict[str, _Num] = {
    "grid_gco2_per_kwh": (0, MAX_GRID_GCO2_PER_KWH, False, False, "gCO2e/kWh"),
    "pue": (MIN_PUE, MAX_PUE, False, False, ""),
    "wue_l_per_kwh": (0, MAX_WUE_L_PER_KWH, False, False, "L/kWh"),
    "electricity_usd_per_kwh": (0, MAX_ELECTRICITY_USD_PER_KWH, False, False, "USD/kWh"),
}
SITE_KEYS: tuple[str, ...] = ("region", *_SITE_NUMS)
_ECON_NUMS: dict[str, _Num] = {
    "job_days": (0, MAX_JOB_DAYS, False, True, "days"),
    "amortization_years": (0, MAX_YEARS, False, True, "years"),
    "infra_multiplier": (0, MAX_INFRA_MULTIPLIER, False, True, ""),
    "maintenance_per_year": (0, MAX_MAINTENANCE_PER_YEAR, False, False, "fraction"),
    "cloud_usd_per_gpu_hour": (0, MAX_CLOUD_USD_PER_GPU_HOUR, False, False, "USD/GPU-h"),
    "embodied_lifetime_years": (0, MAX_YEARS, False, True, "years"),
}
ECONOMICS_KEYS: tuple[str, ...] = tuple(_ECON_NUMS)


def _parse_site(r: _Reader, raw: Any, path: str = "site") -> dict[str, Any] | None:
    given = r.mapping(raw if raw is not None else {}, path, SITE_KEYS)
    if given is None:
        return None
    before = len(r.errors)
    region_key: str | None
    if "region" in given:
        region_key = None
        if given["region"] is not None:
            region_key = r.key(given["region"], _join(path, "region"), catalog.REGIONS, "region")
        r.note(_join(path, "region"), region_key, "", SCENARIO)
    else:
        region_key = _ledger_default(r, path, "region", given)
    nums = _read_fields(r, given, path, _SITE_NUMS)
    if len(r.errors) > before:
        return None
    region = catalog.REGIONS[region_key] if region_key else None
    doc: dict[str, Any] = {}
    for field, (_lo, _hi, _i, _e, unit) in _SITE_NUMS.items():
        d = DEFAULTS[_join(path, field)]
        doc[field] = float(
            _resolve_value(
                r,
                path,
                field,
                nums,
                preset=region,
                preset_source=(lambda f: f"region '{region_key}': {region['sources'][f]}")
                if region
                else None,
                default=d.value,
                default_source=d.source,
                unit=unit,
            )
        )
    return doc


def _parse_economics(r: _Reader, raw: Any, path: str = "economics") -> dict[str, Any] | None:
    nullable = ("job_days", "cloud_usd_per_gpu_hour")
    return _section_with_defaults(r, {path: raw}, "", path, ECONOMICS_KEYS, _ECON_NUMS, nullable=nullable)


# ------------------------------------------------------------------------------------------------------------
# training and layout
# ------------------------------------------------------------------------------------------------------------

LAYOUT_KEYS: tuple[str, ...] = (
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "microbatch_seqs",
    "schedule",
    "virtual_stages",
    "sequence_parallel",
    "zero_stage",
    "fsdp_reshard_after_forward",
    "expert_tp",
    "recompute",
    "grad_reduce_dtype",
)
_LAYOUT_NUMS: dict[str, _Num] = {
    "tp": (1, MAX_GPUS, True, False, ""),
    "pp": (1, MAX_GPUS, True, False, ""),
    "cp": (1, MAX_GPUS, True, False, ""),
    "ep": (1, MAX_GPUS, True, False, ""),
    "dp": (1, MAX_GPUS, True, False, ""),
    "microbatch_seqs": (1, MAX_MICROBATCH_SEQS, True, False, "sequences"),
    "virtual_stages": (1, MAX_VIRTUAL_STAGES, True, False, ""),
    "zero_stage": (0, MAX_ZERO_STAGE, True, False, ""),
    "expert_tp": (1, MAX_GPUS, True, False, ""),
}
_LAYOUT_DEFAULTS: dict[str, tuple[Any, str]] = {
    "tp": (1, "convention: no tensor parallelism unless given"),
    "pp": (1, "convention: no pipeline parallelism unless given"),
    "cp": (1, "convention: no context parallelism unless given"),
    "ep": (1, "convention: no expert parallelism unless given"),
    "microbatch_seqs": (1, "convention: one sequence per microbatch (Megatron-LM default)"),
    "schedule": ("1f1b", "convention: 1F1B (PipeDream-Flush, Narayanan et al. 2021), Megatron-LM's default"),
    "virtual_stages": (1, "convention: one model chunk per pipeline stage"),
    "sequence_parallel": (True, "convention: sequence parallelism with TP (Korthikanti et al. 2022)"),
    "zero_stage": (1, "convention: optimizer state sharded over DP (ZeRO-1, Megatron distributed optimizer)"),
    "fsdp_reshard_after_forward": (True, "CONTRACT.md v1: FSDP re-gathers parameters for the backward pass"),
    "recompute": ("none", "convention: no activation recomputation unless given"),
    "grad_reduce_dtype": ("bf16", "convention: gradients reduced in BF16"),
}
TRAINING_KEYS: tuple[str, ...] = (
    "seq_len",
    "global_batch_tokens",
    "global_batch_seqs",
    "total_tokens",
    "precision",
    "optimizer",
    "fused_attention",
    "layout",
    "efficiency",
    "checkpoint",
)
# Fused attention is the default of every current training stack: FlashAttention (Dao et al. 2022) is what
# Megatron-Core, PyTorch's scaled_dot_product_attention and Transformer Engine run on A100 and later GPUs.
# Runs from before 2023 (Megatron-LM SC'21, BLOOM, OPT) materialised the scores and say so with ``false``.
FUSED_ATTENTION_DEFAULT: tuple[bool, str] = (
    True,
    "convention: fused attention (FlashAttention, Dao et al. 2022; the default of Megatron-Core, PyTorch "
    "scaled_dot_product_attention and Transformer Engine): the s x s score matrix never reaches HBM",
)
EFFICIENCY_KEYS: tuple[str, ...] = ("compute", "overlap")
_TRAINING_NUMS: dict[str, _Num] = {
    "seq_len": (1, MAX_SEQ_LEN, True, False, "tokens"),
    "global_batch_tokens": (1, MAX_GLOBAL_BATCH_TOKENS, True, False, "tokens"),
    "global_batch_seqs": (1, MAX_GLOBAL_BATCH_TOKENS, True, False, "sequences"),
    "total_tokens": (1, MAX_TOTAL_TOKENS, False, False, "tokens"),
}
_EFFICIENCY_NUMS: dict[str, _Num] = {"compute": (0, 1, False, True, "fraction")}
_OVERLAP_NUMS: dict[str, _Num] = {k: (0, 1, False, False, "fraction") for k in ("tp", "cp", "pp", "dp", "ep")}
_CHECKPOINT_NUMS: dict[str, _Num] = {
    "interval_h": (0, MAX_CHECKPOINT_INTERVAL_H, False, True, "h"),
    "writers": (1, MAX_GPUS, True, False, ""),
}
OVERLAP_KEYS: tuple[str, ...] = ("tp", "cp", "pp", "dp", "ep")
CHECKPOINT_KEYS: tuple[str, ...] = ("interval_h", "writers", "interval_method", "goodput_ledger")


def _parse_layout(r: _Reader, raw: Any, path: str, gpus: int) -> dict[str, Any] | None:
    given = r.mapping(raw if raw is not None else {}, path, LAYOUT_KEYS)
    if given is None:
        return None
    before = len(r.errors)
    nums = _read_fields(r, given, path, _LAYOUT_NUMS, nullable=("dp", "expert_tp"))
    for field, choices in (
        ("schedule", SCHEDULES),
        ("recompute", RECOMPUTE_POLICIES),
        ("grad_reduce_dtype", GRAD_REDUCE_DTYPES),
    ):
        if field in given:
            value = r.choice(given[field], _join(path, field), choices)
            if value is not None:
                nums[field] = value
    for field in ("sequence_parallel", "fsdp_reshard_after_forward"):
        if field in given:
            flag = r.boolean(given[field], _join(path, field))
            if flag is not None:
                nums[field] = flag
    if len(r.errors) > before:
        return None
    out: dict[str, Any] = {}
    for field in LAYOUT_KEYS:
        if field in ("dp", "expert_tp"):
            continue
        default, source = _LAYOUT_DEFAULTS[field]
        out[field] = _resolve_value(
            r,
            path,
            field,
            nums,
            preset=None,
            preset_source=None,
            default=default,
            default_source=source,
            unit="",
        )
    model_parallel = out["tp"] * out["pp"] * out["cp"]
    if gpus % model_parallel:
        r.error(
            _join(path, "tp"),
            f"tp*cp*pp (={model_parallel:,}) must divide gpus (={gpus:,})",
        )
        return None
    dp = gpus // model_parallel
    if nums.get("dp") is not None and nums["dp"] != dp:
        r.error(_join(path, "dp"), f"must equal gpus / (tp*cp*pp) (={dp:,}), got {nums['dp']:,}")
        return None
    r.note(_join(path, "dp"), dp, "", SCENARIO if nums.get("dp") is not None else "gpus / (tp*cp*pp)")
    out["dp"] = dp
    expert_tp = nums.get("expert_tp")
    r.note(
        _join(path, "expert_tp"),
        expert_tp if expert_tp is not None else out["tp"],
        "",
        SCENARIO if expert_tp is not None else "CONTRACT.md v1: experts use tp unless expert_tp is given",
    )
    out["expert_tp"] = int(expert_tp) if expert_tp is not None else int(out["tp"])
    return out


_LAYOUT_INT_FIELDS: tuple[str, ...] = (
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "microbatch_seqs",
    "virtual_stages",
    "zero_stage",
    "expert_tp",
)


def layout_batch(layouts: list[dict[str, Any]]) -> LayoutBatch:
    """Parallel arrays from resolved layout dicts (every LAYOUT_KEYS field explicit, dp resolved)."""
    # One int64 and one bool matrix, one row per field: each LayoutBatch field is a row of them (two
    # array constructions instead of fourteen).
    ints = np.array(
        [[int(lay[field]) for lay in layouts] for field in _LAYOUT_INT_FIELDS]
        + [
            [SCHEDULE_CODE[lay["schedule"]] for lay in layouts],
            [RECOMPUTE_CODE[lay["recompute"]] for lay in layouts],
        ],
        dtype=np.int64,
    ).reshape(len(_LAYOUT_INT_FIELDS) + 2, len(layouts))
    flags = np.array(
        [
            [bool(lay["sequence_parallel"]) for lay in layouts],
            [bool(lay["fsdp_reshard_after_forward"]) for lay in layouts],
            [lay["grad_reduce_dtype"] == "fp32" for lay in layouts],
        ],
        dtype=np.bool_,
    ).reshape(3, len(layouts))
    named = dict(zip(_LAYOUT_INT_FIELDS, ints, strict=False))
    return LayoutBatch(
        tp=named["tp"],
        pp=named["pp"],
        cp=named["cp"],
        ep=named["ep"],
        dp=named["dp"],
        microbatch_seqs=named["microbatch_seqs"],
        schedule=ints[len(_LAYOUT_INT_FIELDS)],
        virtual_stages=named["virtual_stages"],
        sequence_parallel=flags[0],
        zero_stage=named["zero_stage"],
        fsdp_reshard_after_forward=flags[1],
        expert_tp=named["expert_tp"],
        recompute=ints[len(_LAYOUT_INT_FIELDS) + 1],
        grad_reduce_fp32=flags[2],
    )


def layout_from_batch(batch: LayoutBatch, i: int) -> dict[str, Any]:
    """Row ``i`` of a LayoutBatch as a resolved layout dict (the inverse of ``layout_batch``)."""
    if i == 0 and len(batch) == 1:
        one = batch.single  # python scalars, kept on a read-only batch
    else:
        one = SimpleNamespace(**{f.name: getattr(batch, f.name)[i].item() for f in dataclasses.fields(batch)})
    return {
        "tp": one.tp,
        "pp": one.pp,
        "cp": one.cp,
        "ep": one.ep,
        "dp": one.dp,
        "microbatch_seqs": one.microbatch_seqs,
        "schedule": SCHEDULES[one.schedule],
        "virtual_stages": one.virtual_stages,
        "sequence_parallel": one.sequence_parallel,
        "zero_stage": one.zero_stage,
        "fsdp_reshard_after_forward": one.fsdp_reshard_after_forward,
        "expert_tp": one.expert_tp,
        "recompute": RECOMPUTE_POLICIES[one.recompute],
        "grad_reduce_dtype": "fp32" if one.grad_reduce_fp32 else "bf16",
    }


def _parse_training(
    r: _Reader,
    raw: Any,
    path: str,
    *,
    model: ModelSpec | None,
    cluster: ClusterSpec | None,
    preset_seq: int | None,
) -> tuple[TrainingSpec, dict[str, Any], list[dict[str, Any]], bool, dict[str, Any]] | None:
    given = r.mapping(raw if raw is not None else {}, path, TRAINING_KEYS)
    if given is None:
        return None
    before = len(r.errors)
    nums = _read_fields(
        r,
        given,
        path,
        _TRAINING_NUMS,
        nullable=("total_tokens", "global_batch_tokens", "global_batch_seqs"),
    )
    for field, choices in (("precision", PRECISIONS), ("optimizer", OPTIMIZERS)):
        if field in given:
            value = r.choice(given[field], _join(path, field), choices)
            if value is not None:
                nums[field] = value
    if "fused_attention" in given:
        flag = r.boolean(given["fused_attention"], _join(path, "fused_attention"))
        if flag is not None:
            nums["fused_attention"] = flag
    eff_path = _join(path, "efficiency")
    eff = r.mapping(given.get("efficiency") or {}, eff_path, EFFICIENCY_KEYS) or {}
    compute_eff: float | None = None
    if eff.get("compute") is not None:
        lo, hi, _i, excl, _u = _EFFICIENCY_NUMS["compute"]
        parsed = r.number(
            eff["compute"], _join(eff_path, "compute"), minimum=lo, maximum=hi, exclusive_min=excl
        )
        compute_eff = float(parsed) if parsed is not None else None
    ov_path = _join(eff_path, "overlap")
    ov_given = r.mapping(eff.get("overlap") or {}, ov_path, OVERLAP_KEYS) or {}
    overlap_nums = _read_fields(r, ov_given, ov_path, _OVERLAP_NUMS)
    ck_path = _join(path, "checkpoint")
    ck_given = r.mapping(given.get("checkpoint") or {}, ck_path, CHECKPOINT_KEYS) or {}
    ck_nums = _read_fields(
        r,
        ck_given,
        ck_path,
        _CHECKPOINT_NUMS,
        nullable=("interval_h", "writers"),
    )
    for field, choices in (("interval_method", INTERVAL_METHODS), ("goodput_ledger", GOODPUT_LEDGERS)):
        if field in ck_given:
            value = r.choice(ck_given[field], _join(ck_path, field), choices)
            if value is not None:
                ck_nums[field] = value
    layout_raw = given.get("layout")
    auto = isinstance(layout_raw, str)
    if auto and layout_raw != "auto":
        r.error(_join(path, "layout"), f"must be an object or the string 'auto', got '{layout_raw}'")
        return None
    if model is None or cluster is None:
        return None
    # Fields already in error fall back to their defaults below so that the layout is still checked and
    # every broken rule is reported at once; the function returns None at the end.

    seq_default = preset_seq or DEFAULT_SEQ_LEN
    seq_src = "model preset: its pre-training sequence length" if preset_seq else "convention: 4,096 tokens"
    seq_len = int(
        _resolve_value(
            r,
            path,
            "seq_len",
            nums,
            preset=None,
            preset_source=None,
            default=seq_default,
            default_source=seq_src,
            unit="tokens",
        )
    )
    precision = str(
        _resolve_value(
            r,
            path,
            "precision",
            nums,
            preset=None,
            preset_source=None,
            default="bf16",
            default_source="convention: BF16 mixed precision",
            unit="",
        )
    )
    if precision not in cluster.accelerator.peak_tflops:
        r.error(
            _join(path, "precision"),
            f"accelerator '{cluster.accelerator.name}' has no {precision} peak "
            f"(has {', '.join(sorted(cluster.accelerator.peak_tflops))})",
        )
    optimizer = str(
        _resolve_value(
            r,
            path,
            "optimizer",
            nums,
            preset=None,
            preset_source=None,
            default="adam",
            default_source="convention: Adam (Kingma & Ba 2015), mixed precision",
            unit="",
        )
    )
    fused_attention = bool(
        _resolve_value(
            r,
            path,
            "fused_attention",
            nums,
            preset=None,
            preset_source=None,
            default=FUSED_ATTENTION_DEFAULT[0],
            default_source=FUSED_ATTENTION_DEFAULT[1],
            unit="",
        )
    )
    total_tokens = _resolve_value(
        r,
        path,
        "total_tokens",
        nums,
        preset=None,
        preset_source=None,
        default=None,
        default_source="none: time-based figures use economics.job_days or a 30-day window",
        unit="tokens",
    )

    layouts: list[dict[str, Any]]
    if len(r.errors) > before:
        if not auto:
            _parse_layout(r, layout_raw, _join(path, "layout"), cluster.gpus)
        return None
    if auto:
        # The candidates are enumerated by solvers.search, the same engine run over every layout.
        r.note(_join(path, "layout"), "auto", "", SCENARIO)
        layouts = []
    else:
        layout = _parse_layout(r, layout_raw, _join(path, "layout"), cluster.gpus)
        if layout is None:
            return None
        layouts = [layout]

    # Global batch: tokens or sequences; both must agree.
    tokens = nums.get("global_batch_tokens")
    seqs = nums.get("global_batch_seqs")
    if tokens is not None and tokens % seq_len:
        r.error(_join(path, "global_batch_tokens"), f"must be a multiple of training.seq_len (={seq_len:,})")
        return None
    if tokens is not None and seqs is not None and tokens != seqs * seq_len:
        r.error(
            _join(path, "global_batch_seqs"),
            f"must equal global_batch_tokens / seq_len (={tokens // seq_len:,}) when both are given",
        )
        return None
    if tokens is not None:
        batch_seqs, batch_src = tokens // seq_len, SCENARIO
    elif seqs is not None:
        batch_seqs, batch_src = int(seqs), SCENARIO
    else:
        target = max(1, DEFAULT_BATCH_TOKENS // seq_len)
        if auto:
            batch_seqs = target
        else:
            unit = layouts[0]["dp"] * layouts[0]["microbatch_seqs"]
            batch_seqs = -(-target // unit) * unit
        batch_src = (
            "convention: ~4M tokens per step (GPT-3 Table 2.1; Llama 3 §3.4.1), rounded up to a multiple of "
            "dp x microbatch_seqs"
        )
    r.note(_join(path, "global_batch_seqs"), batch_seqs, "sequences", batch_src)
    r.note(_join(path, "global_batch_tokens"), batch_seqs * seq_len, "tokens", batch_src)

    if compute_eff is not None:
        efficiency, eff_src = compute_eff, SCENARIO
    else:
        efficiency = cluster.accelerator.compute_efficiency
        eff_src = "cluster.accelerator.compute_efficiency"
    r.note(_join(eff_path, "compute"), efficiency, "fraction", eff_src)
    overlap_defaults = _overlap_defaults()
    overlap: dict[str, float] = {}
    for dim in OVERLAP_KEYS:
        default, source = overlap_defaults[dim]
        overlap[dim] = float(
            _resolve_value(
                r,
                ov_path,
                dim,
                overlap_nums,
                preset=None,
                preset_source=None,
                default=default,
                default_source=source,
                unit="fraction",
            )
        )
    checkpoint: dict[str, Any] = {}
    for field in CHECKPOINT_KEYS:
        checkpoint[field] = _ledger_default(r, ck_path, field, ck_nums)
    if len(r.errors) > before:
        return None

    spec = TrainingSpec(
        seq_len=seq_len,
        global_batch_tokens=batch_seqs * seq_len,
        precision=precision,
        optimizer=optimizer,
        compute_efficiency=efficiency,
        overlap=OverlapSpec(**overlap),
        fused_attention=fused_attention,
    )
    doc = {
        "seq_len": seq_len,
        "global_batch_tokens": batch_seqs * seq_len,
        "total_tokens": None if total_tokens is None else float(total_tokens),
        "precision": precision,
        "optimizer": optimizer,
        "fused_attention": fused_attention,
        "layout": "auto" if auto else dict(layouts[0]),
        "efficiency": {"compute": efficiency, "overlap": overlap},
        "checkpoint": checkpoint,
    }
    ledger = {
        "optimizer": optimizer,
        "precision": precision,
        "total_tokens": None if total_tokens is None else float(total_tokens),
        "checkpoint_interval_h": None
        if checkpoint["interval_h"] is None
        else float(checkpoint["interval_h"]),
        "checkpoint_writers": None if checkpoint["writers"] is None else int(checkpoint["writers"]),
        "interval_method": str(checkpoint["interval_method"]),
        "goodput_ledger": str(checkpoint["goodput_ledger"]),
    }
    return spec, doc, layouts, auto, ledger


@functools.cache
def _overlap_defaults() -> dict[str, tuple[float, str]]:
    """Default hidden share per exchange: the calibration's when it names one, else none hidden."""
    from solvers.catalog import calibration

    table = getattr(calibration, "DEFAULT_OVERLAP", None) or {}
    out: dict[str, tuple[float, str]] = {}
    for dim in OVERLAP_KEYS:
        if dim in table:
            value, source = table[dim]
            out[dim] = (float(value), str(source))
        else:
            out[dim] = (0.0, "CONTRACT.md v1: nothing is hidden unless the scenario says so")
    return out


def _limits_table() -> dict[str, dict[str, Any]]:
    tables: tuple[tuple[str, Mapping[str, _Num]], ...] = (
        ("model", _MODEL_NUMS),
        ("model.moe", _MOE_NUMS),
        ("cluster", _CLUSTER_NUMS),
        ("cluster.accelerator", _ACCEL_NUMS),
        ("cluster.scale_up", _LINK_NUMS),
        ("cluster.scale_out", _LINK_NUMS),
        ("cluster.storage", _STORAGE_NUMS),
        ("cluster.reliability", _RELIABILITY_NUMS),
        ("cluster.power", _POWER_NUMS),
        ("site", _SITE_NUMS),
        ("training", _TRAINING_NUMS),
        ("training.layout", _LAYOUT_NUMS),
        ("training.efficiency", _EFFICIENCY_NUMS),
        ("training.efficiency.overlap", _OVERLAP_NUMS),
        ("training.checkpoint", _CHECKPOINT_NUMS),
        ("economics", _ECON_NUMS),
    )
    out: dict[str, dict[str, Any]] = {}
    for prefix, table in tables:
        for name, (lo, hi, integer, excl, unit) in table.items():
            out[f"{prefix}.{name}"] = {
                "minimum": lo,
                "maximum": hi,
                "exclusive_minimum": excl,
                "integer": integer,
                "unit": unit,
            }
    for prec in PRECISIONS:
        out[f"cluster.accelerator.peak_tflops.{prec}"] = {
            "minimum": 0,
            "maximum": MAX_PEAK_TFLOPS,
            "exclusive_minimum": True,
            "integer": False,
            "unit": "TFLOP/s",
        }
    out["cluster.reliability.other_mttf_h[]"] = {
        "minimum": 0,
        "maximum": MAX_MTTF_H,
        "exclusive_minimum": True,
        "integer": False,
        "unit": "h",
        "max_items": MAX_OTHER_COMPONENTS,
    }
    return out


# Every numeric field's bounds by document path, for API documentation and form validation; the parser
# enforces exactly these (inclusive unless exclusive_minimum).
FIELD_LIMITS: dict[str, dict[str, Any]] = _limits_table()

# ------------------------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------------------------


def resolve(document: Any) -> Resolved:
    """Validate a scenario document and resolve it; raises ``ScenarioError`` listing every broken rule.

    Layout rules that need the engine (batch divisibility, ep, heads, experts) are checked by
    ``solvers.engine.check_layouts`` in ``solvers.report.solve``; this function checks types, limits, catalog
    keys, the GPU count split (tp*cp*pp divides gpus) and the batch's multiple of the sequence length.

    A document seen before (the same content, types included) is not parsed again: see ``_RESOLVED_CACHE``.
    The Resolved returned is the caller's own: its dicts and lists are fresh copies.
    """
    shared = resolve_shared(document)
    if shared is not None:
        return shared.copy()
    return _with_read_only_entries(_resolve(document))


def resolve_shared(document: Any) -> SharedResolved | None:
    """The cache's own entry for ``document`` (resolved and kept on a first sight), or None when the document
    cannot be a cache key (not made of exact JSON types; ``resolve`` then parses it every time).

    Nothing is copied: the entry's Resolved is shared with every later call, so it is only for a caller that
    reads it and hands on copies (``document()``, ``assumptions()``), as ``solvers.report.solve`` does.
    Raises ``ScenarioError`` like ``resolve``.
    """
    key = plain_key(document)
    if key is None:
        return None
    hit = _RESOLVED_CACHE.get(key)
    if hit is None:
        hit = _to_cache(_resolve(document))
        if len(_RESOLVED_CACHE) >= _RESOLVED_CACHE_MAX:
            _RESOLVED_CACHE.clear()
        _RESOLVED_CACHE[key] = hit
    return hit


def _with_read_only_entries(resolved: Resolved) -> Resolved:
    """``resolved`` with its assumption entries as ``ReadOnlyDict``s, as a cached Resolved has them."""
    shared, containers = read_only_entries(resolved.assumptions)
    return dataclasses.replace(resolved, assumptions=fresh_entries(shared, containers))


_CopyPlan = tuple[bool, list[tuple[Any, Any]]]

# ------------------------------------------------------------------------------------------------------------
# resolved documents, cached by content
# ------------------------------------------------------------------------------------------------------------

# A scenario resolves to the same specs, document, assumptions and warnings every time: resolution is a pure
# function of the document's content and the built-in catalog. Plans are re-solved far more often than they
# are edited (every price book, every comparison), so a resolved document is kept, keyed by
# ``solvers.plain.plain_key`` (a pickle of exact JSON types only: 1, 1.0, true and -0.0 stay apart, equal keys
# mean equal content of equal types, a reordered document is merely a miss, anything else is not cached).
# The immutable parts (frozen specs, read-only layout arrays, strings and numbers, and the assumption entries,
# which are read-only dicts: ``solvers.plain.ReadOnlyDict``) are shared; every other dict and list (document,
# ledger fields, the assumptions list, warnings, a list-valued assumption's value) is copied on each hit, so a
# caller that edits its report cannot change the next one. Documents with errors raise before they are stored.
_RESOLVED_CACHE_MAX = 256  # some 40 kB each in memory (document, assumptions, specs)
_RESOLVED_CACHE: dict[bytes, SharedResolved] = {}


def _copy_plan(value: Any) -> _CopyPlan:
    """How to copy ``value`` (a dict or list) so that every dict and list in it is fresh.

    ``(each, nested)``: ``each`` is True for a list made only of dicts, copied all at once (the assumptions
    list); ``nested`` lists ``(key or index, plan or None)`` for the items that hold containers themselves,
    None marking a container with no containers inside (one shallow copy makes it fresh).
    """
    items = list(value.items() if type(value) is dict else enumerate(value))
    each = type(value) is list and bool(value) and all(type(item) is dict for item in value)
    nested = []
    for key, item in items:
        if type(item) is dict or type(item) is list:
            inner = _copy_plan(item)
            if inner[1] or not each:
                nested.append((key, inner if inner[1] else None))
    return each, nested


def _copy_with(value: Any, plan: _CopyPlan) -> Any:
    """A copy of ``value`` with every dict and list in it fresh (``plan`` from ``_copy_plan(value)``)."""
    each, nested = plan
    out = list(map(dict.copy, value)) if each else value.copy()
    for key, inner in nested:
        item = value[key]
        out[key] = item.copy() if inner is None else _copy_with(item, inner)
    return out


class SharedResolved(NamedTuple):
    """A resolved scenario as the cache keeps it. ``resolved`` shares its document, ledger fields,
    assumptions and warnings with every caller of ``resolve_shared``: read it, never change it. ``copy()`` is
    a Resolved of the caller's own; ``document()`` and ``assumptions()`` are fresh copies of those two alone.
    """

    resolved: Resolved
    document_plan: _CopyPlan
    ledger_plan: _CopyPlan
    entries: tuple[dict[str, Any], ...]  # read-only assumption entries (solvers.plain.ReadOnlyDict)
    containers: tuple[int, ...]  # entries whose value is a list or a dict (copied for each caller)

    def document(self) -> dict[str, Any]:
        return _copy_with(self.resolved.document, self.document_plan)

    def assumptions(self) -> list[dict[str, Any]]:
        return fresh_entries(self.entries, self.containers)

    def copy(self) -> Resolved:
        kept = self.resolved
        return Resolved(
            document=self.document(),
            model=kept.model,
            cluster=kept.cluster,
            training=kept.training,
            layouts=kept.layouts,
            layout_auto=kept.layout_auto,
            ledger_fields=_copy_with(kept.ledger_fields, self.ledger_plan),
            assumptions=self.assumptions(),
            warnings=list(kept.warnings),
            input_hash=kept.input_hash,
        )


def _to_cache(resolved: Resolved) -> SharedResolved:
    resolved.layouts.freeze()
    # The cache keeps its own copies: a resolved document may hold objects of the caller's input document.
    document, ledger_fields = _copied((resolved.document, resolved.ledger_fields))
    entries, containers = read_only_entries(resolved.assumptions)
    kept = dataclasses.replace(
        resolved,
        document=document,
        ledger_fields=ledger_fields,
        assumptions=list(entries),
        warnings=list(resolved.warnings),
    )
    return SharedResolved(kept, _copy_plan(document), _copy_plan(ledger_fields), entries, containers)


def _resolve(document: Any) -> Resolved:
    r = _Reader()
    top = r.mapping(document, "", TOP_KEYS)
    if top is None:
        raise ScenarioError(r.errors)
    if "schema_version" in top and top["schema_version"] != SCHEMA_VERSION:
        r.error("schema_version", f"must be {SCHEMA_VERSION}, got {top['schema_version']!r}")
    for text_field in ("name", "description"):
        if text_field in top:
            r.text(top[text_field], text_field, max_len=2000)
    (model, model_doc, preset_seq), model_text = _parsed_part(r, "model", top.get("model"))
    cluster, cluster_text = _parsed_part(r, "cluster", top.get("cluster"))
    site, site_text = _parsed_part(r, "site", top.get("site"))
    economics, economics_text = _parsed_part(r, "economics", top.get("economics"))
    training = _parse_training(
        r,
        top.get("training"),
        "training",
        model=model,
        cluster=cluster.spec if cluster else None,
        preset_seq=preset_seq,
    )
    if r.errors or model is None or cluster is None or site is None or economics is None or training is None:
        raise ScenarioError(r.errors)
    # Checked here once, so that no report has to walk these again (solvers.report._checked).
    if not all_plain_finite([a["value"] for a in r.assumptions]):
        raise SolverInternalError("an assumption of the resolved scenario is not a plain finite value")
    train_spec, train_doc, layouts, auto, train_ledger = training
    document_out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": model_doc,
        "cluster": cluster.doc,
        "site": site,
        "training": train_doc,
        "economics": economics,
    }
    for text_field in ("name", "description"):
        if text_field in top:
            document_out[text_field] = top[text_field]
    ledger_fields: dict[str, Any] = {
        **cluster.ledger,
        "params": model.params,
        **train_ledger,
        "grid_gco2_per_kwh": site["grid_gco2_per_kwh"],
        "pue": site["pue"],
        "wue_l_per_kwh": site["wue_l_per_kwh"],
        "electricity_usd_per_kwh": site["electricity_usd_per_kwh"],
        "job_days": economics["job_days"],
        "amortization_years": economics["amortization_years"],
        "infra_multiplier": economics["infra_multiplier"],
        "maintenance_per_year": economics["maintenance_per_year"],
        "cloud_usd_per_gpu_hour": economics["cloud_usd_per_gpu_hour"],
        "embodied_lifetime_years": economics["embodied_lifetime_years"],
    }
    # canonical_json(document_out, drop_labels=True) spliced from its parts (keys in sorted order).
    hashed = (
        f'{{"cluster":{cluster_text},"economics":{economics_text},"model":{model_text},'
        f'"schema_version":{SCHEMA_VERSION},"site":{site_text},"training":{_part_text(train_doc)}}}'
    )
    return Resolved(
        document=document_out,
        model=model,
        cluster=cluster.spec,
        training=train_spec,
        layouts=layout_batch(layouts),
        layout_auto=auto,
        ledger_fields=ledger_fields,
        assumptions=r.assumptions,
        warnings=r.warnings,
        input_hash=hashlib.sha256(hashed.encode("utf-8")).hexdigest(),
    )


# ------------------------------------------------------------------------------------------------------------
# parsed parts, cached by content
# ------------------------------------------------------------------------------------------------------------

# Model, cluster, site and economics parts are pure functions of their own text: the same part (a preset,
# a stored cluster or site scenario that many plans share) always resolves to the same specs, document,
# assumptions and warnings. They are kept here, keyed by the part's exact content (types included, so 1,
# 1.0 and true are different keys), and handed out as fresh copies. Parts with errors are never kept.
_PART_CACHE_MAX = 2048
_PART_CACHE: dict[
    tuple[str, Any], tuple[Any, tuple[dict[str, Any], ...], tuple[int, ...], tuple[str, ...], str]
] = {}
_NO_KEY = object()


def _frozen(value: Any) -> Any:
    """A hashable image of a JSON-like value that tells types apart; ``_NO_KEY`` for anything else."""
    kind = type(value)
    if kind is dict:
        items = []
        for key, item in value.items():
            frozen = _frozen(item)
            if frozen is _NO_KEY or type(key) is not str:
                return _NO_KEY
            items.append((key, frozen))
        return (dict, tuple(items))
    if kind is list or kind is tuple:
        frozen_items = tuple(_frozen(item) for item in value)
        return _NO_KEY if any(f is _NO_KEY for f in frozen_items) else (kind, frozen_items)
    if kind is float:
        return (kind, value.hex())  # hex tells -0.0 from 0.0, which compare and hash equal
    if kind is str or kind is int or kind is bool or value is None:
        return (kind, value)
    return _NO_KEY


def _copied(value: Any) -> Any:
    """A copy of the dicts and lists in ``value`` (leaves and frozen dataclasses are shared)."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) if type(v) in (dict, list) else v for k, v in value.items()}
    if kind is list:
        return [_copied(v) if type(v) in (dict, list) else v for v in value]
    if kind is _ClusterParts:
        return _ClusterParts(spec=value.spec, doc=_copied(value.doc), ledger=dict(value.ledger))
    if kind is tuple:
        return tuple(_copied(v) if type(v) in (dict, list) else v for v in value)
    return value


def _part_text(doc: Any) -> str:
    """The canonical JSON of one part of the resolved document (labels dropped), as ``canonical_json``."""
    return canonical_json(doc, drop_labels=True)


def _parse_part(r: _Reader, part: str, raw: Any) -> Any:
    if part == "model":
        return _parse_model(r, raw)
    if part == "cluster":
        return _parse_cluster(r, raw)
    if part == "site":
        return _parse_site(r, raw)
    return _parse_economics(r, raw)


def _part_doc(part: str, result: Any) -> Any:
    if part == "model":
        return result[1]
    if part == "cluster":
        return None if result is None else result.doc
    return result


def _parsed_part(r: _Reader, part: str, raw: Any) -> tuple[Any, str]:
    """``_parse_<part>(r, raw)`` and the canonical text of its document ("" when it failed)."""
    key = (part, _frozen(raw))
    hit = _PART_CACHE.get(key) if key[1] is not _NO_KEY else None
    if hit is not None:
        result, notes, list_valued, warnings, text = hit
        start = len(r.assumptions)
        r.assumptions.extend(map(dict.copy, notes))
        for i in list_valued:  # a list value (other_mttf_h) gets its own copy too
            entry = r.assumptions[start + i]
            entry["value"] = _copied(entry["value"])
        r.warnings.extend(warnings)
        return _copied(result), text
    errors, assumptions, warned = len(r.errors), len(r.assumptions), len(r.warnings)
    result = _parse_part(r, part, raw)
    doc = _part_doc(part, result)
    if len(r.errors) > errors or doc is None or (part == "model" and result[0] is None):
        return result, ""
    text = _part_text(doc)
    if key[1] is not _NO_KEY:
        if len(_PART_CACHE) >= _PART_CACHE_MAX:
            _PART_CACHE.clear()
        notes = tuple(_copied(a) for a in r.assumptions[assumptions:])
        list_valued = tuple(i for i, a in enumerate(notes) if type(a["value"]) in (list, dict))
        _PART_CACHE[key] = (_copied(result), notes, list_valued, tuple(r.warnings[warned:]), text)
    return result, text


def validate_part(part: str, data: Any) -> dict[str, Any]:
    """Validate one part of a scenario on its own ("model", "cluster", "site", "training", "economics").

    Returns the part's resolved document (presets expanded, defaults filled); raises ``ScenarioError`` with
    paths prefixed by the part name (``cluster.gpus: ...``). ``training`` alone is checked for its own
    fields, types, limits and enums; the rules that need the model and cluster (GPU split, batch
    divisibility, precision supported by the accelerator) wait until a plan joins the parts.
    """
    if part not in PARTS:
        raise ScenarioError.single("", f"unknown part '{part}'; expected one of {', '.join(PARTS)}")
    r = _Reader()
    if part == "model":
        _spec, doc, _seq = _parse_model(r, data)
        out: dict[str, Any] | None = doc
    elif part == "cluster":
        parts = _parse_cluster(r, data)
        out = parts.doc if parts else None
    elif part == "site":
        out = _parse_site(r, data)
    elif part == "economics":
        out = _parse_economics(r, data)
    else:
        out = _validate_training_alone(r, data)
    if r.errors or out is None:
        raise ScenarioError(r.errors)
    return out


def _validate_training_alone(r: _Reader, data: Any) -> dict[str, Any] | None:
    """Training without its model and cluster: check fields and enums; layout divisibility waits for a plan."""
    given = r.mapping(data if data is not None else {}, "training", TRAINING_KEYS)
    if given is None:
        return None
    layout = given.get("layout")
    # A stand-in cluster large enough for any layout's product keeps the GPU-count rule out of this check.
    probe_gpus = 1
    if isinstance(layout, Mapping):
        for dim in ("tp", "pp", "cp"):
            value = layout.get(dim, 1)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_GPUS:
                probe_gpus *= value
        probe_gpus = min(probe_gpus, MAX_GPUS)
        dp = layout.get("dp")
        if isinstance(dp, int) and not isinstance(dp, bool) and 1 <= dp <= MAX_GPUS:
            probe_gpus = min(probe_gpus * dp, MAX_GPUS * MAX_GPUS)
    probe_accel = AcceleratorSpec(
        name="any",
        peak_tflops={p: 1.0 for p in PRECISIONS},
        hbm_gb=1.0,
        hbm_tb_s=1.0,
        tdp_w=1.0,
        unit_price_usd=0.0,
        embodied_kgco2e=0.0,
        compute_efficiency=0.5,
    )
    link = LinkSpec(bandwidth_gb_s=1.0, latency_us=0.0)
    probe_cluster = ClusterSpec(
        accelerator=probe_accel, gpus=probe_gpus, gpus_per_node=1, scale_up=link, scale_out=link
    )
    probe_model = ModelSpec(
        name="any",
        layers=1,
        hidden=1,
        ffn_hidden=1,
        heads=1,
        kv_heads=1,
        vocab=1,
        params=1.0,
        active_params=1.0,
    )
    out = _parse_training(r, given, "training", model=probe_model, cluster=probe_cluster, preset_seq=None)
    if out is None:
        return None
    doc = out[1]
    if isinstance(doc.get("layout"), dict) and not (isinstance(layout, Mapping) and "dp" in layout):
        doc["layout"]["dp"] = None
    return doc


# ------------------------------------------------------------------------------------------------------------
# JSON Schema of the scenario document (for API documentation and client-side forms)
# ------------------------------------------------------------------------------------------------------------

_NULLABLE: frozenset[str] = frozenset(
    {
        "model.preset",
        "model.moe",
        "cluster.node",
        "cluster.accelerator",
        "cluster.scale_up",
        "cluster.scale_out",
        "cluster.accelerator.preset",
        "cluster.scale_up.preset",
        "cluster.scale_out.preset",
        "cluster.reliability.nics_per_node",
        "site.region",
        "training.total_tokens",
        "training.global_batch_tokens",
        "training.global_batch_seqs",
        "training.layout.dp",
        "training.layout.expert_tp",
        "training.efficiency.compute",
        "training.checkpoint.interval_h",
        "training.checkpoint.writers",
        "economics.job_days",
        "economics.cloud_usd_per_gpu_hour",
        # sections: null means "all defaults", as if left out
        "model",
        "cluster",
        "site",
        "training",
        "economics",
        "cluster.storage",
        "cluster.reliability",
        "cluster.power",
        "training.layout",
        "training.efficiency",
        "training.efficiency.overlap",
        "training.checkpoint",
    }
)


def _nullable(path: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]} if path in _NULLABLE else schema


def _number_schema(path: str) -> dict[str, Any]:
    limit = FIELD_LIMITS[path]
    out: dict[str, Any] = {"type": "integer" if limit["integer"] else "number", "maximum": limit["maximum"]}
    out["exclusiveMinimum" if limit["exclusive_minimum"] else "minimum"] = limit["minimum"]
    if limit["unit"]:
        out["description"] = f"unit: {limit['unit']}"
    return _nullable(path, out)


def _object_schema(path: str, keys: tuple[str, ...], special: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for key in keys:
        full = f"{path}.{key}" if path else key
        if key in special:
            properties[key] = _nullable(full, special[key])
        elif full in FIELD_LIMITS:
            properties[key] = _number_schema(full)
        else:
            raise KeyError(full)  # every key must be described: a new field needs its schema here
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _enum(values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the scenario document: keys, types, enums, catalog keys and limits.

    It describes what ``resolve`` accepts field by field; rules across fields (tp*cp*pp divides gpus, the
    batch divides into dp x microbatches, heads divide hidden, ...) are checked by ``resolve`` and the engine.
    """
    text = {"type": "string", "maxLength": 200}
    flag = {"type": "boolean"}
    moe = _object_schema("model.moe", MOE_KEYS, {})
    model = _object_schema(
        "model",
        MODEL_KEYS,
        {
            "preset": _enum(list(catalog.MODELS)),
            "name": text,
            "gated_mlp": flag,
            "tied_embeddings": flag,
            "dropout": flag,
            "moe": moe,
        },
    )
    peaks = {
        "type": "object",
        "additionalProperties": False,
        "properties": {p: _number_schema(f"cluster.accelerator.peak_tflops.{p}") for p in PRECISIONS},
    }
    accelerators = _enum(list(catalog.ACCELERATORS))
    fabrics = _enum(list(catalog.FABRICS))

    def link(path: str) -> dict[str, Any]:
        return {"anyOf": [fabrics, _object_schema(path, LINK_KEYS, {"preset": fabrics})]}

    other = FIELD_LIMITS["cluster.reliability.other_mttf_h[]"]
    reliability = _object_schema(
        "cluster.reliability",
        RELIABILITY_KEYS,
        {
            "other_mttf_h": {
                "type": "array",
                "maxItems": other["max_items"],
                "items": {
                    "type": "number",
                    "exclusiveMinimum": other["minimum"],
                    "maximum": other["maximum"],
                },
            },
            "mtbf_convention": _enum(MTBF_CONVENTIONS),
        },
    )
    cluster = _object_schema(
        "cluster",
        CLUSTER_KEYS,
        {
            "node": _enum(list(catalog.NODES)),
            "accelerator": {
                "anyOf": [
                    accelerators,
                    _object_schema(
                        "cluster.accelerator",
                        ACCELERATOR_KEYS,
                        {"preset": accelerators, "name": text, "peak_tflops": peaks},
                    ),
                ]
            },
            "scale_up": link("cluster.scale_up"),
            "scale_out": link("cluster.scale_out"),
            "storage": _object_schema("cluster.storage", STORAGE_KEYS, {}),
            "reliability": reliability,
            "power": _object_schema("cluster.power", POWER_KEYS, {}),
        },
    )
    site = _object_schema("site", SITE_KEYS, {"region": _enum(list(catalog.REGIONS))})
    layout = _object_schema(
        "training.layout",
        LAYOUT_KEYS,
        {
            "schedule": _enum(SCHEDULES),
            "recompute": _enum(RECOMPUTE_POLICIES),
            "grad_reduce_dtype": _enum(GRAD_REDUCE_DTYPES),
            "sequence_parallel": flag,
            "fsdp_reshard_after_forward": flag,
        },
    )
    training = _object_schema(
        "training",
        TRAINING_KEYS,
        {
            "precision": _enum(PRECISIONS),
            "optimizer": _enum(OPTIMIZERS),
            "fused_attention": flag,
            "layout": {"anyOf": [layout, {"const": "auto"}]},
            "efficiency": _object_schema(
                "training.efficiency",
                EFFICIENCY_KEYS,
                {"overlap": _object_schema("training.efficiency.overlap", OVERLAP_KEYS, {})},
            ),
            "checkpoint": _object_schema(
                "training.checkpoint",
                CHECKPOINT_KEYS,
                {"interval_method": _enum(INTERVAL_METHODS), "goodput_ledger": _enum(GOODPUT_LEDGERS)},
            ),
        },
    )
    economics = _object_schema("economics", ECONOMICS_KEYS, {})
    top = _object_schema(
        "",
        TOP_KEYS,
        {
            "schema_version": {"const": SCHEMA_VERSION},
            "name": {"type": "string", "maxLength": 2000},
            "description": {"type": "string", "maxLength": 2000},
            "model": model,
            "cluster": cluster,
            "site": site,
            "training": training,
            "economics": economics,
        },
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Planner scenario document v{SCHEMA_VERSION}",
        **top,
    }
