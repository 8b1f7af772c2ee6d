"""The scenario field ``model.head_dim``: attention heads whose width is not ``hidden / heads`` (Qwen3, Gemma).

Stated, the attention core, the projections' parameters, the activation memory and the context-parallel
exchange take the heads' widths; left out, nothing moves; stated at ``hidden / heads``, the same numbers."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import compute, exchanges, memory
from solvers.catalog import MODELS
from solvers.entry import solve
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.inputs.json_schema import scenario_json_schema
from solvers.inputs.model import transformer_params
from solvers.published import load_example

# Qwen3-30B-A3B as its released config gives it: hidden 2,048, 32 query and 4 key/value heads of 128.
QWEN3_30B_A3B: dict[str, Any] = {
    "name": "Qwen3-30B-A3B",
    "layers": 48,
    "hidden": 2048,
    "ffn_hidden": 6144,
    "heads": 32,
    "kv_heads": 4,
    "vocab": 151936,
    "gated_mlp": True,
    "tied_embeddings": False,
    "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 768, "shared_experts": 0, "moe_layers": 48},
}
QWEN3_DOC: dict[str, Any] = {
    "name": "Qwen3-30B-A3B on 16 H100",
    "model": {**QWEN3_30B_A3B, "head_dim": 128},
    "cluster": {"node": "dgx-h100", "gpus": 16},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 512,
        "precision": "bf16",
        "layout": {"tp": 1, "pp": 2, "cp": 2, "ep": 8, "microbatch_seqs": 1, "zero_stage": 1},
    },
}


def without_head_dim(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    del out["model"]["head_dim"]
    return out


def test_qwen3_parameter_count_worked_example() -> None:
    """With heads of 128 the derived counts are the model card's ("30.5B in total and 3.3B activated");
    with heads of hidden / heads = 64 they fall short by 0.45B each (transformer_params docstring)."""
    shape = {k: v for k, v in QWEN3_30B_A3B.items() if k != "name"}
    total, active = transformer_params(**shape, head_dim=128)
    assert (total, active) == (30_532_110_336.0, 3_353_020_416.0)
    narrow_total, narrow_active = transformer_params(**shape)
    assert (narrow_total, narrow_active) == (30_079_125_504.0, 2_900_035_584.0)
    resolved = resolve(QWEN3_DOC)
    assert resolved.model.params == total and resolved.model.active_params == active


def test_attention_core_counts_the_heads_widths() -> None:
    """12 L (heads x d) s: 12 x 48 x 4,096 x 4,096 = 9.66e9 FLOP per token at 4K, twice the count at width h."""
    wide = resolve(QWEN3_DOC).model
    narrow = resolve(without_head_dim(QWEN3_DOC)).model
    assert compute.attention_widths(model=wide) == (4096.0, 4096.0)
    assert compute.attention_flops_per_token(model=wide, seq_len=4096) == 12 * 48 * 4096 * 4096
    assert compute.attention_flops_per_token(model=narrow, seq_len=4096) == 12 * 48 * 2048 * 4096
    assert compute.head_dim(model=wide) == 128.0 and compute.head_dim(model=narrow) == 64.0
    assert compute.query_width_share(model=wide) == 2.0 and compute.query_width_share(model=narrow) == 1.0
    assert compute.kv_width_share(model=wide) == 0.25 and compute.kv_width_share(model=narrow) == 0.125


def test_wider_heads_cost_step_time_and_memory_and_say_so() -> None:
    wide, narrow = solve(QWEN3_DOC, ranges=False), solve(without_head_dim(QWEN3_DOC), ranges=False)
    assert wide["step"]["model_flops_per_token"] > narrow["step"]["model_flops_per_token"]
    assert wide["step"]["step_s"] > narrow["step"]["step_s"]
    assert wide["memory"]["activations_bytes"] > narrow["memory"]["activations_bytes"]
    # the context-parallel exchange sends kv_heads x head_dim per token: 4 x 128 against 4 x 64
    assert wide["traffic"]["bytes_per_gpu"]["cp"] == pytest.approx(
        narrow["traffic"]["bytes_per_gpu"]["cp"] * 2.0, rel=1e-12
    )
    flops_note = next(a for a in wide["assumptions"] if a["key"] == "step.model_flops_per_token")
    assert flops_note["value"] == "6 * active_params + 12 * layers * heads * head_dim * seq_len"
    head_note = next(a for a in wide["assumptions"] if a["key"] == "model.head_dim")
    assert head_note["value"] == 128 and head_note["source"] == "scenario"
    assert wide["scenario"]["model"]["head_dim"] == 128
    assert "head_dim" not in narrow["scenario"]["model"]
    assert not any(a["key"] == "model.head_dim" for a in narrow["assumptions"])


@settings(max_examples=40, deadline=None)
@given(
    heads=st.sampled_from([8, 16, 32, 64]),
    width=st.sampled_from([64, 96, 128]),
    group=st.sampled_from([1, 2, 4, 8]),
    layers=st.integers(4, 48),
    cp=st.sampled_from([1, 2]),
)
def test_stating_the_width_hidden_over_heads_moves_nothing(
    heads: int, width: int, group: int, layers: int, cp: int
) -> None:
    """The same numbers, to rounding, whether the default width is stated or left out."""
    doc: dict[str, Any] = {
        "model": {
            "layers": layers,
            "hidden": heads * width,
            "heads": heads,
            "kv_heads": heads // group,
            "vocab": 32000,
        },
        "cluster": {"node": "dgx-h100", "gpus": 32},
        "training": {
            "seq_len": 4096,
            "global_batch_seqs": 64,
            "layout": {"tp": 2, "pp": 1, "cp": cp, "microbatch_seqs": 1, "zero_stage": 3},
        },
    }
    stated = copy.deepcopy(doc)
    stated["model"]["head_dim"] = width
    a: dict[str, Any] = dict(solve(doc, ranges=False))
    b: dict[str, Any] = dict(solve(stated, ranges=False))
    assert a["step"]["step_s"] > 0 and a["traffic"]["bytes_per_gpu"]["cp"] >= 0
    for block in ("step", "memory", "traffic"):
        for key, value in a[block].items():
            if isinstance(value, float):
                assert math.isclose(b[block][key], value, rel_tol=1e-12, abs_tol=1e-15), (block, key)
            elif isinstance(value, dict):
                for sub, v in value.items():
                    close = math.isclose(b[block][key][sub], v, rel_tol=1e-12, abs_tol=1e-15)
                    assert close, (block, key, sub)


def test_a_document_without_the_field_is_unchanged() -> None:
    """Models that leave the field out keep their documents (and so their input hashes)."""
    doc = load_example("llama3-405b-16384.yaml")
    resolved = resolve(doc)
    assert "head_dim" not in resolved.document["model"]
    assert resolved.model.head_dim is None


def test_hidden_need_not_divide_by_heads_when_the_width_is_stated() -> None:
    doc = copy.deepcopy(QWEN3_DOC)
    doc["model"].update(hidden=2040, layers=4)
    doc["model"].pop("moe")
    assert resolve(doc).model.hidden == 2040
    del doc["model"]["head_dim"]
    with pytest.raises(ScenarioError) as err:
        resolve(doc)
    assert err.value.first.path == "model.hidden"
    assert "or give model.head_dim" in err.value.first.message


@pytest.mark.parametrize("bad", [0, -128, 2.5, "128", 10**7])
def test_bad_head_dim_is_refused_with_its_path(bad: object) -> None:
    doc = copy.deepcopy(QWEN3_DOC)
    doc["model"]["head_dim"] = bad
    with pytest.raises(ScenarioError) as err:
        resolve(doc)
    assert err.value.first.path == "model.head_dim"


def test_head_dim_beside_mla_is_refused() -> None:
    doc = load_example("deepseek-v3-2048xh800.yaml")
    doc["model"]["head_dim"] = 128
    with pytest.raises(ScenarioError) as err:
        resolve(doc)
    assert err.value.first.path == "model.head_dim"
    assert "model.mla" in err.value.first.message


def test_the_json_schema_has_the_field_from_the_table() -> None:
    schema = scenario_json_schema()
    model = next(branch for branch in schema["properties"]["model"]["anyOf"] if branch["type"] == "object")
    assert model["properties"]["head_dim"] == {"type": "integer", "minimum": 1, "maximum": 1_000_000}


@pytest.mark.parametrize("key", ["qwen3-30b-a3b", "qwen3-235b-a22b"])
def test_qwen3_presets_state_their_heads_and_match_their_cards(key: str) -> None:
    """The presets' shapes with heads of 128 give the model cards' counts within 2% (30.5B / 3.3B and
    235B / 22B); with heads of hidden / heads the activated count would be 12-15% short."""
    preset = MODELS[key]
    assert preset["head_dim"] == 128 and preset["sources"]["head_dim"]
    shape = {
        field: preset[field]
        for field in (
            "layers",
            "hidden",
            "ffn_hidden",
            "heads",
            "kv_heads",
            "vocab",
            "gated_mlp",
            "tied_embeddings",
        )
    }
    total, active = transformer_params(**shape, moe=preset["moe"], head_dim=128)
    assert total == pytest.approx(preset["params"], rel=0.01)
    assert active == pytest.approx(preset["active_params"], rel=0.02)
    _, narrow_active = transformer_params(**shape, moe=preset["moe"])
    assert narrow_active < 0.9 * preset["active_params"]
    resolved = resolve({"model": {"preset": key}})
    assert resolved.model.head_dim == 128 and resolved.document["model"]["head_dim"] == 128
    note = next(a for a in resolved.assumptions if a["key"] == "model.head_dim")
    assert note["source"].startswith(f"model preset '{key}': the released config.json")


def test_activation_memory_worked_example() -> None:
    """Qwen3-30B-A3B, an MoE layer at tp 1 without sequence parallelism, selective recompute, dropout counted:
    replicated 10 h = 20,480, attention 4 h x 2 + 4 h x 0.25 = 18,432 (query and output 4,096 wide, keys and
    values 512), routed experts 8 x (2 h + 6 x 768) = 69,632: 108,544 bytes per token and layer (99,328 with
    heads of hidden / heads, whose attention part is 4 h + 4 h x 0.125 = 9,216)."""
    wide = resolve(QWEN3_DOC).model
    narrow = resolve(without_head_dim(QWEN3_DOC)).model
    kwargs: dict[str, Any] = {
        "seq_len": 4096,
        "tp": 1,
        "expert_tp": 1,
        "sequence_parallel": False,
        "recompute": 1,
    }
    assert memory.activation_bytes_per_token_layer(model=wide, moe_layer=True, **kwargs) == 108_544.0
    assert memory.activation_bytes_per_token_layer(model=narrow, moe_layer=True, **kwargs) == 99_328.0


def test_per_tensor_elements_follow_the_heads_widths() -> None:
    """A dense layer of h 2,560 with 32 query and 8 key/value heads of 128 (shares 1.6 and 0.4): fused QKV
    2,560 x (4,096 + 2 x 1,024) = 15,728,640 elements, attention output 4,096 x 2,560 = 10,485,760."""
    tensors = exchanges.layer_tensor_elements(
        hidden=2560.0, ffn=9728.0, q_share=1.6, kv_share=0.4, gated_mlp=True, tp=1
    )
    assert tensors[:2] == pytest.approx([15_728_640.0, 10_485_760.0], rel=1e-12)
    assert tensors[2:4] == [2 * 9728 * 2560.0, 9728 * 2560.0]
