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
from solvers.memory import per_op_bytes_per_token_layer, per_op_input_bytes_per_token_layer
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


EAGER = {"fused_elementwise": False}


def _training(doc: dict[str, Any], **training: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["training"].update(training)
    return doc


@pytest.mark.parametrize(
    ("training", "layout", "rerun"),
    [
        # eager: wk (h x kv), wo (q x h), w3 (h x ffn), forward only: 2 FLOPs a multiply-add, 32 layers
        (EAGER, {}, 1024 + 4096 + 14336),
        # compiled at TP 8 with sequence parallelism: the reduce-scatter's output is kept, wo is not run again
        ({}, {}, 1024 + 14336),
        # compiled without sequence parallelism: the residual sum needs wo's output
        ({}, {"sequence_parallel": False}, 1024 + 4096 + 14336),
    ],
)
def test_the_rerun_matmuls(training: dict[str, Any], layout: dict[str, Any], rerun: int) -> None:
    report = _step(_with(_training(DOC, **training), **layout))["step"]
    # hfu counts them, mfu does not
    assert report["hfu"] / report["mfu"] == pytest.approx(
        1 + 2 * 32 * 4096 * rerun / report["model_flops_per_token"], rel=1e-12
    )


def test_the_flops_of_its_docstring() -> None:
    model = resolve(DOC).model
    assert per_op_recompute_flops_per_token(model=model) == 2 * 32 * 4096 * (1024 + 4096 + 14336)
    assert per_op_recompute_flops_per_token(model=model, projection_kept=True) == 2 * 32 * 4096 * (
        1024 + 14336
    )


def test_what_it_stores_per_token_and_layer() -> None:
    model = resolve(DOC).model
    assert per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=True) == 17152.0
    assert per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=True, compiled=True) == 7936.0
    assert per_op_bytes_per_token_layer(model=model, tp=1, sequence_parallel=False) == 63488.0
    # without sequence parallelism the block's input is whole and no reduce-scatter output is kept
    assert per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=False) == 2 * (
        4096 + (8192 + 1024 + 14336) / 8 + 4096
    )


@pytest.mark.parametrize("training", [EAGER, {}])
def test_a_recomputed_layer_adds_its_working_set_beyond_the_inputs_it_keeps(training: dict[str, Any]) -> None:
    model = resolve(DOC).model
    compiled = not training
    tokens = 12 * 8192  # one microbatch, one in flight, 32 layers on the stage
    stored = per_op_bytes_per_token_layer(model=model, tp=8, sequence_parallel=True, compiled=compiled)
    kept_inputs = 2 * (512 + (8192 + 1024 + 14336) / 8)
    assert per_op_input_bytes_per_token_layer(model=model, tp=8, sequence_parallel=True) == (kept_inputs)
    # the whole layer's working set (fused attention: what selective stores) less what per_op already keeps
    working = 17408.0
    activations = _step(_training(DOC, **training))["memory"]["activations_bytes"]
    assert activations == pytest.approx(32 * tokens * stored + tokens * (working - kept_inputs), rel=1e-12)


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


@pytest.mark.parametrize("training", [EAGER, {}])
def test_it_lies_between_no_recompute_and_full_recompute(training: dict[str, Any]) -> None:
    doc = _training(DOC, **training)
    steps = {name: _step(_with(doc, recompute=name))["step"]["step_s"] for name in ("none", "per_op", "full")}
    assert steps["none"] < steps["per_op"] < steps["full"]
    memory = {
        name: _step(_with(doc, recompute=name))["memory"]["activations_bytes"]
        for name in ("none", "per_op", "full")
    }
    assert memory["full"] < memory["per_op"]
    # compiled it keeps less than no recompute; eager it keeps every saved output, the down projection's h-wide
    # partial sum included, and at TP 8 that is more than the layers' own activations
    assert (memory["per_op"] < memory["none"]) is (not training)


@pytest.mark.parametrize("preset", ["mixtral-8x7b", "deepseek-v3", "gpt3-175b"])
def test_a_model_whose_blocks_are_not_llama_blocks_is_refused_with_its_path(preset: str) -> None:
    doc = copy.deepcopy(DOC)
    doc["model"] = {"preset": preset}
    with pytest.raises(ScenarioError) as raised:
        solve(doc, ranges=False)
    message = str(raised.value)
    assert "training.layout.recompute" in message
    assert "per_op" in message


def test_the_search_tries_it_only_for_a_scenario_that_states_it_or_a_space_that_names_it() -> None:
    resolved = resolve(DOC)
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    space = default_space(**specs)
    assert space.recompute == SEARCHED_RECOMPUTE
    assert "per_op" not in space.recompute
    assert space_from_document({"recompute": ["per_op"]}, default=space).recompute == ("per_op",)
    stated = default_space(**specs, stated_layout=DOC["training"]["layout"])
    assert stated.recompute == (*SEARCHED_RECOMPUTE, "per_op")
    selective = default_space(**specs, stated_layout={**DOC["training"]["layout"], "recompute": "selective"})
    assert selective.recompute == SEARCHED_RECOMPUTE


def _fp8(doc: dict[str, Any], gather: bool, **effects: bool) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["training"]["precision"] = "fp8"
    doc["training"]["efficiency"] = {"effects": {"fp8_tp_gather": gather, **effects}}
    return doc


@pytest.mark.parametrize(
    ("recompute", "halves_saved"),
    # per half layer, in all-reduces: the forward's gather of the input and the backward's of the output gradient
    # (half of one each) at half their bytes save a quarter each, a recomputed forward's gather another quarter;
    # selective recomputes no gather
    [("none", 0.5), ("selective", 0.5), ("full", 0.75), ("per_op", 0.75)],
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
    # every Mixtral layer is MoE: only the attention half's two gathers move FP8, half of its two all-reduces'
    # gathers, which are half the layer's four all-reduces (a dense layer saves twice that)
    assert bf16 - fp8 == pytest.approx(bf16 / 2 * 0.5 / 2, rel=1e-12)
