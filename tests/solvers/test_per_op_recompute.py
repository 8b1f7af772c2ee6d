"""``training.layout.recompute: per_op``: torchtitan's op-level selective checkpointing (``_save_list`` and the
policy of ``_apply_ac_to_transformer_block``, ``torchtitan/models/llama3/parallelize_llama.py`` at 820504e). It keeps
every second matmul's output of a block, the attention kernel's and the reduce-scatters', and runs everything else
of the forward again: the other matmuls, every element-wise op and the tensor-parallel all-gathers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import ScenarioError, resolve, solve
from solvers.compute import per_op_recompute_flops_per_token
from solvers.memory import per_op_bytes_per_token_layer
from solvers.search.space import default_space, space_from_document
from solvers.specs import SEARCHED_RECOMPUTE

# torchtitan's Llama 3.1 8B on 64 H100: FSDP 8 x TP 8 with sequence parallelism (corpus/torchtitan-2025-async-tp.yaml).
DOC: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 64},
    "training": {
        "seq_len": 8192,
        "global_batch_seqs": 96,
        "layout": {
            "tp": 8,
            "pp": 1,
            "cp": 1,
            "microbatch_seqs": 12,
            "sequence_parallel": True,
            "zero_stage": 3,
            "recompute": "per_op",
        },
    },
}


def _with(doc: dict[str, Any], **layout: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["training"]["layout"].update(layout)
    return doc


def _step(doc: dict[str, Any]) -> Any:
    return solve(doc, ranges=False)


def test_the_rerun_matmuls_are_the_key_output_and_second_mlp_projections() -> None:
    model = resolve(DOC).model
    # wk (h x kv), wo (q x h), w3 (h x ffn), forward only: 2 FLOPs a multiply-add, 32 layers
    assert per_op_recompute_flops_per_token(model=model) == 2 * 32 * 4096 * (1024 + 4096 + 14336)
    report = _step(DOC)["step"]
    # hfu counts them, mfu does not
    assert report["hfu"] / report["mfu"] == pytest.approx(
        1 + 2 * 32 * 4096 * (1024 + 4096 + 14336) / report["model_flops_per_token"], rel=1e-12
    )


def test_what_it_stores_per_token_and_layer() -> None:
    model = resolve(DOC).model
    assert per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=True) == 17152.0
    assert per_op_bytes_per_token_layer(model=model, tp=1, sequence_parallel=False) == 63488.0
    # without sequence parallelism the block's input is whole and no reduce-scatter output is kept
    assert per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=False) == 2 * (
        4096 + (8192 + 1024 + 14336) / 8 + 4096
    )


def test_the_tensor_parallel_gathers_run_again() -> None:
    none = _step(_with(DOC, recompute="none"))["traffic"]["bytes_per_gpu"]["tp"]
    per_op = _step(DOC)["traffic"]["bytes_per_gpu"]["tp"]
    # per layer and half: an all-reduce forward and one backward, and the forward's all-gather (half of one) again
    assert per_op == pytest.approx(1.25 * none, rel=1e-12)
    plain = _with(DOC, sequence_parallel=False)
    # without sequence parallelism the forward's all-reduces themselves are not kept and run again
    assert _step(plain)["traffic"]["bytes_per_gpu"]["tp"] == pytest.approx(
        1.5 * _step(_with(plain, recompute="none"))["traffic"]["bytes_per_gpu"]["tp"], rel=1e-12
    )


def test_it_lies_between_no_recompute_and_full_recompute() -> None:
    steps = {name: _step(_with(DOC, recompute=name))["step"]["step_s"] for name in ("none", "per_op", "full")}
    assert steps["none"] < steps["per_op"] < steps["full"]
    memory = {
        name: _step(_with(DOC, recompute=name))["memory"]["activations_bytes"]
        for name in ("none", "per_op", "full")
    }
    assert memory["full"] < memory["per_op"] < memory["none"]


@pytest.mark.parametrize("preset", ["mixtral-8x7b", "deepseek-v3"])
def test_a_model_whose_blocks_are_not_llama_blocks_is_refused_with_its_path(preset: str) -> None:
    doc = copy.deepcopy(DOC)
    doc["model"] = {"preset": preset}
    with pytest.raises(ScenarioError) as raised:
        solve(doc, ranges=False)
    message = str(raised.value)
    assert "training.layout.recompute" in message
    assert "per_op" in message


def test_the_search_tries_it_only_when_its_space_names_it() -> None:
    resolved = resolve(DOC)
    space = default_space(model=resolved.model, cluster=resolved.cluster, training=resolved.training)
    assert space.recompute == SEARCHED_RECOMPUTE
    assert "per_op" not in space.recompute
    assert space_from_document({"recompute": ["per_op"]}, default=space).recompute == ("per_op",)


def _fp8(doc: dict[str, Any], gather: bool, **effects: bool) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["training"]["precision"] = "fp8"
    doc["training"]["efficiency"] = {"effects": {"fp8_tp_gather": gather, **effects}}
    return doc


@pytest.mark.parametrize(
    ("recompute", "halves_saved"),
    # per half layer, in all-reduces: the forward's gather (half of one) at half its bytes saves a quarter, and a
    # recomputed forward's gather another quarter; selective recomputes no gather
    [("none", 0.25), ("selective", 0.25), ("full", 0.5), ("per_op", 0.5)],
)
def test_fp8_training_gathers_the_tensor_parallel_inputs_in_fp8(recompute: str, halves_saved: float) -> None:
    doc = _with(DOC, recompute=recompute)
    units = {"none": 2.0, "selective": 2.0, "full": 3.0, "per_op": 2.5}[recompute]
    bf16 = _step(_fp8(doc, False))["traffic"]["bytes_per_gpu"]["tp"]
    fp8 = _step(_fp8(doc, True))["traffic"]["bytes_per_gpu"]["tp"]
    assert fp8 == pytest.approx(bf16 * (units - halves_saved) / units, rel=1e-12)
    # without sequence parallelism there is no gather; BF16 training gathers BF16
    plain = _with(doc, sequence_parallel=False)
    assert _step(_fp8(plain, True))["traffic"] == _step(_fp8(plain, False))["traffic"]
    bf16_doc = copy.deepcopy(doc)
    bf16_doc["training"]["efficiency"] = {"effects": {"fp8_tp_gather": True}}
    off = copy.deepcopy(doc)
    off["training"]["efficiency"] = {"effects": {"fp8_tp_gather": False}}
    assert _step(bf16_doc)["traffic"] == _step(off)["traffic"]


def test_a_moe_layer_keeps_its_mlp_exchange_in_bf16() -> None:
    doc = _with(DOC, recompute="none")
    doc["model"] = {"preset": "mixtral-8x7b"}
    doc["training"]["layout"].update({"tp": 2, "ep": 4, "microbatch_seqs": 1})
    doc["training"]["global_batch_seqs"] = 32
    # the seeds' expert exchange: a MoE layer's MLP all-reduces its input over TP as a dense MLP does
    bf16 = _step(_fp8(doc, False, expert_tp_exchange=False))["traffic"]["bytes_per_gpu"]["tp"]
    fp8 = _step(_fp8(doc, True, expert_tp_exchange=False))["traffic"]["bytes_per_gpu"]["tp"]
    # every Mixtral layer is MoE: only the attention half's gather moves FP8, a quarter of its two all-reduces,
    # which are half the layer's four (a dense layer saves twice that)
    assert bf16 - fp8 == pytest.approx(bf16 / 2 * 0.25 / 2, rel=1e-12)
