"""The ``model`` part: a catalog preset or an explicit shape -> ``ModelSpec`` and its explicit document."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.inputs.reader import SCENARIO, Reader, join, preset_notes, read_numbers, resolve_value
from solvers.specs import MLASpec, ModelSpec, MoESpec

DEFAULT_MODEL_PRESET = "llama3-8b"
PATH = "model"


def _model_preset_source(key: str, field: str) -> str:
    sources = catalog.MODELS[key]["sources"]
    cite = sources.get(field) or sources.get("shape") or ""
    return f"model preset '{key}': {cite}".rstrip(": ")


# The entry each model preset writes for each shape field it gives (``preset_notes``).
_PRESET_NOTES = preset_notes(PATH, catalog.MODELS, _model_preset_source)


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
    mla: Mapping[str, int] | None = None,
    head_dim: int | None = None,
) -> tuple[float, float]:
    """(total, active) parameter counts of a decoder-only transformer from its shape.

    Per layer: attention 2 h^2 + 2 h (kv_heads x h/heads) (Q and O full width, K and V shared by the
    grouped-query heads, Ainslie et al. 2023), or 2 h (heads x d) + 2 h (kv_heads x d) with a stated head
    width d (``model.head_dim``: Qwen3-30B-A3B, h 2,048, 32 and 4 heads of 128, 18.9M), MLP m x h x ffn with
    m = 3 for SwiGLU (Shazeer 2020) and 2 otherwise, two norms 2h. An MoE layer has (experts + shared) MLPs
    of width ``expert_ffn_hidden`` plus a router h x experts, and a token touches top_k + shared of them.
    Embeddings: vocab x h, twice unless tied; biases are left out (< 0.1%).

    Example: Llama 3 405B (126 x 16,384, FFN 53,248, 128/8 heads, vocab 128,256, SwiGLU, untied):
    126 x (570.4M + 2,617.2M + 32.8K) + 2 x 2.10B = 405.8B, against 405B published (Llama 3 Table 3).
    With Multi-head Latent Attention the attention weights are ``mla_attention_params``: DeepSeek-V3 comes to
    671.0B total and 37.6B activated, against 671B and 37B (technical report §1, without the MTP module).
    """
    if mla:
        attention = mla_attention_params(hidden=hidden, heads=heads, mla=mla)
    elif head_dim is not None:
        attention = 2.0 * hidden * heads * head_dim + 2.0 * hidden * kv_heads * head_dim
    else:
        width = hidden / heads
        attention = 2.0 * hidden * hidden + 2.0 * hidden * kv_heads * width
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


def mtp_module_params(
    *,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int,
    gated_mlp: bool,
    moe: Mapping[str, int] | None,
    mla: Mapping[str, int] | None = None,
    head_dim: int | None = None,
) -> tuple[float, float]:
    """(total, active) parameters of one multi-token-prediction module (DeepSeek-V3 §2.2, Figure 3).

    A module normalises the previous depth's hidden state and the embedding of the next token (two RMSNorms,
    ``2h``), projects their concatenation with ``M_k`` (``2h x h``) and runs one transformer block; the
    embedding layer and the output head are the main model's (shared, no parameters of its own in training).
    The block is the model's last kind of layer: an MoE layer when the model has any (DeepSeek-V3's dense
    layers come first), whose final norm ``h`` is counted as ``transformer_params`` counts the model's.
    Example: DeepSeek-V3: block 11,507.3M (MLA 187.1M, router 1.8M, 257 experts of 44.0M) + projection
    102.8M + norms 0.014M = 11.61B total, 0.69B active (MLA, router, 8 routed + 1 shared expert), against the
    released checkpoint's 14B, which also stores copies of the embedding and head (2 x 0.93B).
    """
    one_layer = {**moe, "moe_layers": 1} if moe else None
    block_total, block_active = transformer_params(
        layers=1,
        hidden=hidden,
        ffn_hidden=ffn_hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=0,
        gated_mlp=gated_mlp,
        tied_embeddings=True,
        moe=one_layer,
        mla=mla,
        head_dim=head_dim,
    )
    projection_and_norms = 2.0 * hidden * hidden + 2.0 * hidden
    return block_total + projection_and_norms, block_active + projection_and_norms


def mla_attention_params(*, hidden: int, heads: int, mla: Mapping[str, int]) -> float:
    """Weights of one Multi-head Latent Attention block (DeepSeek-V2 §2.1.2-2.1.3, DeepSeek-V3 §2.1.1).

    Query: ``h x d_cq`` down-projection, its RMSNorm ``d_cq`` and ``d_cq x heads (d_nope + d_rope)``
    up-projection (one ``h x heads (d_nope + d_rope)`` matrix when ``q_lora_rank`` is 0). Key/value:
    ``h x (d_c + d_rope)`` down-projection (the latent and the rotary key shared by all heads), its RMSNorm
    ``d_c`` and ``d_c x heads (d_nope + d_v)`` up-projection. Output: ``heads d_v x h``.
    Example: DeepSeek-V3 (h 7,168, 128 heads, d_cq 1,536, d_c 512, 128 + 64, d_v 128): 11.0M + 37.7M + 4.1M
    + 16.8M + 117.4M = 187.1M per layer (inference/model.py of deepseek-ai/DeepSeek-V3 has these matrices).
    """
    qk_head = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
    q_rank = mla["q_lora_rank"]
    if q_rank > 0:
        query = float(hidden) * q_rank + q_rank + float(q_rank) * heads * qk_head
    else:
        query = float(hidden) * heads * qk_head
    kv_rank = mla["kv_lora_rank"]
    key_value = (
        float(hidden) * (kv_rank + mla["qk_rope_head_dim"])
        + kv_rank
        + float(kv_rank) * heads * (mla["qk_nope_head_dim"] + mla["v_head_dim"])
    )
    output = float(heads) * mla["v_head_dim"] * hidden
    return query + key_value + output


_MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _head_dim(
    r: Reader, nums: Mapping[str, float], preset: Mapping[str, Any] | None, preset_key: str | None, path: str
) -> int | None:
    """``model.head_dim`` from the scenario or the preset, or None: each head is ``hidden / heads`` wide."""
    if "head_dim" in nums:
        value, source = int(nums["head_dim"]), SCENARIO
    elif preset is not None and preset.get("head_dim") is not None:
        value, source = int(preset["head_dim"]), _model_preset_source(preset_key or "", "head_dim")
    else:
        return None
    r.note(join(path, "head_dim"), value, "", source)
    return value


def _preset_block(
    r: Reader, given: Mapping[str, Any], preset: Mapping[str, Any] | None, path: str, name: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
    """The object ``model.<name>`` as ``(fields, the scenario's, the preset's)``, or None when there is none.

    The scenario's fields are laid over the preset's block, so a partial block changes only what it names
    (``{preset: deepseek-v3, moe: {max_nodes_per_token: 8}}`` keeps the preset's 256 experts); ``null``
    removes the preset's block, and a model without a preset block takes the scenario's as it is."""
    block_path = join(path, name)
    base = (preset or {}).get(name)
    if name not in given:
        return None if base is None else (dict(base), {}, dict(base))
    if given[name] is None:
        return None
    user = r.mapping(given[name], block_path, fields.TABLE.keys(block_path))
    if user is None:
        return None
    base = dict(base or {})
    return {**base, **user}, user, base


def _parse_mla(
    r: Reader, given: Mapping[str, Any], preset: Mapping[str, Any] | None, preset_key: str | None, path: str
) -> dict[str, int] | None:
    """The ``model.mla`` block (Multi-head Latent Attention): the preset's, with the scenario's fields over it."""
    block = _preset_block(r, given, preset, path, "mla")
    if block is None:
        return None
    mla_given, user, _ = block
    mla_path = join(path, "mla")
    nums = read_numbers(r, mla_given, mla_path)
    for field in _MLA_FIELDS:
        if field not in mla_given and not fields.TABLE[join(mla_path, field)].has_default:
            r.error(join(mla_path, field), "required for Multi-head Latent Attention")
    if len(nums) != len(mla_given) or r.failed_under(mla_path):
        return None
    doc: dict[str, int] = {}
    for field in _MLA_FIELDS:
        row = fields.TABLE[join(mla_path, field)]
        if field in nums:
            doc[field] = int(nums[field])
            source = SCENARIO if field in user else _model_preset_source(preset_key or "", "mla")
            r.note(join(mla_path, field), doc[field], "", source)
        else:
            doc[field] = int(row.default)
            r.note(join(mla_path, field), doc[field], "", row.source)
    return doc


# The fields whose values set the parameter count (model.params): a preset's published count is for its own.
_COUNTED = (
    "layers",
    "hidden",
    "ffn_hidden",
    "heads",
    "kv_heads",
    "vocab",
    "gated_mlp",
    "tied_embeddings",
    "head_dim",
)


def _own_counts(preset: Mapping[str, Any]) -> tuple[float, float]:
    """``transformer_params`` of a preset's own shape (the catalog states every field it counts)."""
    return transformer_params(
        layers=preset["layers"],
        hidden=preset["hidden"],
        ffn_hidden=preset["ffn_hidden"],
        heads=preset["heads"],
        kv_heads=preset["kv_heads"],
        vocab=preset["vocab"],
        gated_mlp=preset["gated_mlp"],
        tied_embeddings=preset.get("tied_embeddings", fields.TABLE[join(PATH, "tied_embeddings")].default),
        moe=preset.get("moe"),
        mla=preset.get("mla"),
        head_dim=preset.get("head_dim"),
    )


# Each preset's own architecture count, from the static catalog when the module is imported (never changed).
_PRESET_OWN_COUNTS: dict[str, tuple[float, float]] = {
    key: _own_counts(p) for key, p in catalog.MODELS.items()
}


def _changed_shape(
    given: Mapping[str, Any],
    nums: Mapping[str, Any],
    preset: Mapping[str, Any],
    moe_doc: Mapping[str, Any] | None,
    mla_doc: Mapping[str, Any] | None,
) -> list[str]:
    """The counted fields a scenario sets to other values than its preset's (``vocab``, ``moe.experts``, ...)."""
    changed = [f for f in _COUNTED if f in nums and nums[f] != preset.get(f)]
    for name, doc in (("moe", moe_doc), ("mla", mla_doc)):
        if name in given and (doc is None) != (preset.get(name) is None):
            changed.append(f"{name} ({'removed' if doc is None else 'added'})")
        elif name in given and doc is not None:
            base = preset.get(name) or {}
            changed += [
                f"{name}.{k}" for k, v in (given[name] or {}).items() if k in doc and v != base.get(k)
            ]
    return changed


def _gpu_limit(limit: int | None) -> dict[str, int]:
    # only a model with device-limited routing carries the key, so other models' documents are unchanged
    return {} if limit is None else {"max_gpus_per_token": limit}


def parse_model(r: Reader, raw: Any, path: str = PATH) -> tuple[ModelSpec | None, dict[str, Any], int | None]:
    """Returns the ModelSpec, its explicit document and the preset's pre-training sequence length."""
    given = r.section(raw, path)
    if given is None:
        return None, {}, None
    preset_key: str | None = None
    preset: dict[str, Any] | None = None
    shape_fields = ("layers", "hidden", "heads", "vocab")
    if "preset" in given and given["preset"] is not None:
        preset_key = r.key(given["preset"], join(path, "preset"), catalog.MODELS, "model")
        if preset_key is None:
            return None, {}, None
        preset = catalog.MODELS[preset_key]
        r.note(join(path, "preset"), preset_key, "", SCENARIO)
    elif not any(f in given for f in shape_fields):
        preset_key = DEFAULT_MODEL_PRESET
        preset = catalog.MODELS[preset_key]
        r.note(join(path, "preset"), preset_key, "", "convention: Llama 3 8B when no model is described")
        r.warnings.append(f"model: no model given; using the catalog preset '{preset_key}'")
    nums = read_numbers(r, given, path)
    for flag in ("gated_mlp", "tied_embeddings", "dropout"):
        if flag in given:
            parsed = r.boolean(given[flag], join(path, flag))
            if parsed is not None:
                nums[flag] = parsed
    name = given.get("name")
    if name is not None and r.text(name, join(path, "name")) is None:
        name = None

    def psrc(field: str) -> str:
        return _model_preset_source(preset_key or "", field)

    if preset is None:
        missing = [f for f in shape_fields if f not in given]
        for field in missing:
            r.error(join(path, field), "required (or give model.preset)")
    if r.failed_under(path):
        return None, {}, None

    noted = _PRESET_NOTES.get(preset_key, {}) if preset is not None and preset_key and path == PATH else {}

    def pick(field: str, default: Any = None, source: str = "") -> Any:
        if field not in nums and field in noted:  # the preset's value: its entry is made once, at import
            r.assumptions.append(noted[field])
            return preset[field]  # type: ignore[index]
        row = fields.TABLE[join(path, field)]
        if row.has_default:
            default, source = row.default, row.source
        return resolve_value(
            r,
            path,
            field,
            nums,
            preset=preset,
            preset_source=psrc if preset else None,
            default=default,
            default_source=source,
            unit=row.unit,
        )

    layers = int(pick("layers"))
    hidden = int(pick("hidden"))
    heads = int(pick("heads"))
    vocab = int(pick("vocab"))
    gated = bool(pick("gated_mlp"))
    if gated:
        ffn_default = int(math.ceil(8 * hidden / 3 / 256) * 256)
        ffn_src = "convention: SwiGLU width 8h/3 rounded up to a multiple of 256 (Llama reference code)"
    else:
        ffn_default, ffn_src = 4 * hidden, "convention: 4 x hidden (GPT-3, Brown et al. 2020 §2.1)"
    ffn_hidden = int(pick("ffn_hidden", ffn_default, ffn_src))
    kv_heads = int(pick("kv_heads", heads, "convention: multi-head attention, kv_heads = heads"))
    tied = bool(pick("tied_embeddings"))
    dropout = bool(pick("dropout"))

    head_dim = _head_dim(r, nums, preset, preset_key, path)
    if hidden % heads and head_dim is None:
        r.error(
            join(path, "hidden"), f"must be divisible by model.heads (={heads:,}), or give model.head_dim"
        )
    if heads % kv_heads:
        r.error(join(path, "kv_heads"), f"must divide model.heads (={heads:,})")

    moe_doc: dict[str, int] | None = None
    node_limit: int | None = None  # model.moe.max_nodes_per_token (None: routing not limited by node)
    gpu_limit: int | None = None  # model.moe.max_gpus_per_token (None: routing not limited by device)
    block = _preset_block(r, given, preset, path, "moe")
    if block is not None:
        moe_path = join(path, "moe")
        moe_given, user, base = block
        moe_nums = read_numbers(r, moe_given, moe_path)
        for field in ("experts", "top_k", "expert_ffn_hidden"):
            if field not in moe_given:
                r.error(join(moe_path, field), "required for a mixture-of-experts model")
        if len(moe_nums) == len(moe_given) and not r.failed_under(moe_path):
            moe_doc = {
                "experts": int(moe_nums["experts"]),
                "top_k": int(moe_nums["top_k"]),
                "expert_ffn_hidden": int(moe_nums["expert_ffn_hidden"]),
                "shared_experts": int(
                    moe_nums.get("shared_experts", fields.TABLE[join(moe_path, "shared_experts")].default)
                ),
                "moe_layers": int(moe_nums.get("moe_layers", layers)),
            }
            if moe_nums.get("max_nodes_per_token") is not None:  # absent or null: the table's default
                node_limit = int(moe_nums["max_nodes_per_token"])
            if moe_nums.get("max_gpus_per_token") is not None:
                gpu_limit = int(moe_nums["max_gpus_per_token"])
            limits = {"max_nodes_per_token": node_limit, "max_gpus_per_token": gpu_limit}
            for field, value in {**moe_doc, **limits}.items():
                if field in user:
                    src = SCENARIO
                elif field in base:
                    src = psrc("shape")
                elif field == "moe_layers":
                    src = "convention: every layer is an MoE layer"
                else:
                    src = fields.TABLE[join(moe_path, field)].source
                r.note(join(moe_path, field), value, "", src)
            if moe_doc["top_k"] > moe_doc["experts"]:
                r.error(join(moe_path, "top_k"), f"must be <= model.moe.experts (={moe_doc['experts']:,})")
            if moe_doc["moe_layers"] > layers:
                r.error(join(moe_path, "moe_layers"), f"must be <= model.layers (={layers:,})")

    mla_doc = _parse_mla(r, given, preset, preset_key, path)
    if mla_doc is not None and head_dim is not None:
        r.error(
            join(path, "head_dim"), "must not be given with model.mla (its heads' widths are model.mla's)"
        )

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
        mla=mla_doc,
        head_dim=head_dim,
    )
    derived_src = "derived from the architecture (solvers.inputs.model.transformer_params)"
    changed = _changed_shape(given, nums, preset, moe_doc, mla_doc) if preset is not None else []
    # A preset's published counts are for its own shape: a changed shape shifts them by what it changes (the
    # lookup and the text only then: most documents change nothing).
    own_total, own_active = _PRESET_OWN_COUNTS[preset_key or ""] if changed else (0.0, 0.0)
    shifted = (
        f"shifted for the changed {', '.join(changed)} (transformer_params of both shapes)" if changed else ""
    )
    if changed and "params" not in nums:
        params = float(preset["params"]) + derived_total - own_total  # type: ignore[index]
        r.note(join(path, "params"), params, "parameters", f"{psrc('params')}; {shifted}")
    else:
        params = float(pick("params", derived_total, derived_src))
    if moe_doc is None:
        active_default, active_src = params, "dense model: active_params = params"
    else:
        # Keep the published total and remove the experts a token does not visit.
        active_default = params - (derived_total - derived_active)
        active_src = "params minus the routed experts a token skips (solvers.inputs.model.transformer_params)"
    if changed and "active_params" not in nums:
        if moe_doc is not None and "active_params" in preset:  # type: ignore[operator]
            active = float(preset["active_params"]) + derived_active - own_active  # type: ignore[index]
            active_src = f"{psrc('active_params')}; {shifted}"
        else:
            active = float(active_default)
        r.note(join(path, "active_params"), active, "parameters", active_src)
    else:
        active = float(pick("active_params", active_default, active_src))
    max_params = fields.TABLE["model.params"].maximum
    if r.failed_under(path):
        pass  # the counts of a shape refused above say nothing more
    elif (
        params > max_params
    ):  # derived or shifted (a stated count was held to it above): the document states it
        r.error(
            join(path, "params"),
            f"the shape gives {params:.4g} parameters ({derived_src if not changed else shifted}), above the "
            f"limit of model.params ({max_params:.0e})",
        )
    elif active <= 0:
        r.error(join(path, "active_params"), "must be > 0 (the experts outweigh params)")
    elif active > params:
        r.error(join(path, "active_params"), f"must be <= model.params (={params:.4g})")
    mtp = int(pick("mtp_layers"))
    mtp_total = mtp_active = 0.0
    if mtp:
        one_total, one_active = mtp_module_params(
            hidden=hidden,
            ffn_hidden=ffn_hidden,
            heads=heads,
            kv_heads=kv_heads,
            gated_mlp=gated,
            moe=moe_doc,
            mla=mla_doc,
            head_dim=head_dim,
        )
        mtp_total, mtp_active = mtp * one_total, mtp * one_active
    model_name = name if name is not None else (preset["name"] if preset else "custom")
    if r.failed_under(path):
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
        "moe": None
        if moe_doc is None
        else {**moe_doc, "max_nodes_per_token": node_limit, **_gpu_limit(gpu_limit)},
    }
    if mla_doc is not None:  # only MLA models carry the key, so other models' documents are unchanged
        doc["mla"] = mla_doc
    if mtp:  # likewise only a model with multi-token prediction
        doc["mtp_layers"] = mtp
    if head_dim is not None:  # likewise only a model whose head width is not hidden / heads
        doc["head_dim"] = head_dim
    spec = ModelSpec(
        name=model_name,
        layers=layers,
        hidden=hidden,
        ffn_hidden=ffn_hidden,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        # model.params and active_params count the main model (as published); the MTP modules are trained,
        # stored and checkpointed with it, so the engine's counts hold both.
        params=params + mtp_total,
        active_params=active + mtp_active,
        moe=MoESpec(**moe_doc, max_nodes_per_token=node_limit, max_gpus_per_token=gpu_limit)
        if moe_doc
        else None,
        gated_mlp=gated,
        dropout=dropout,
        mla=MLASpec(**mla_doc) if mla_doc else None,
        mtp_layers=mtp,
        mtp_active_params=mtp_active,
        head_dim=head_dim,
        tied_embeddings=tied,
    )
    preset_seq = int(preset["seq_len"]) if preset is not None and "seq_len" in preset else None
    return spec, doc, preset_seq
