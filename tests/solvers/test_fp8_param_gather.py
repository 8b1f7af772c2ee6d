"""The weights kept and all-gathered in FP8 (``training.fp8_param_gather``, Megatron-Core's ``--fp8-param-gather``,
NeMo's ``fp8_param_gather``): one byte a weight in the data-parallel all-gather, the gradients and the memory as
before; docs/CONVENTIONS.md "FP8 parameter all-gather"."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from solvers import ScenarioError, exchanges, resolve, solve
from solvers.published import load_example

LLAMA_405B = "llama3-405b-16384.yaml"


def _fp8(doc: dict[str, Any], **training: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["training"].update({"precision": "fp8", **training})
    return out


def _step(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(solve(doc, ranges=False)["step"])


def test_the_default_gathers_bf16_weights_and_the_document_says_so() -> None:
    doc = _fp8(load_example(LLAMA_405B))
    resolved = resolve(doc)
    assert resolved.training.fp8_param_gather is False
    assert resolved.document["training"]["fp8_param_gather"] is False
    assert _step(doc) == _step(_fp8(doc, fp8_param_gather=False))


def test_the_fp8_layers_gather_one_byte_a_weight_the_embeddings_two() -> None:
    """Transformer Engine's linear layers gather in FP8, the input embedding and output layer in BF16: Llama 3.1
    8B (V 128,256, h 4,096, 8.03e9 parameters) gathers 1 + 2 x 128,256 x 4,096 / 8.03e9 = 1.131 bytes a parameter."""
    model = resolve(load_example(LLAMA_405B)).model
    small = resolve({"model": {"preset": "llama3-8b"}}).model
    assert exchanges.fp8_gather_bytes(
        weight_bytes=2.0, model=small, dense_params=small.params, pp=1
    ) == pytest.approx(1.0 + 2 * 128_256 * 4_096 / 8.03e9)
    gather_w = exchanges.fp8_gather_bytes(weight_bytes=2.0, model=model, dense_params=model.params, pp=1)
    assert 1.0 < gather_w < 1.02  # Llama 3 405B: the embedding and output layer are 1.0% of its parameters
    bf16 = _fp8(load_example(LLAMA_405B))
    a, b = solve(bf16, ranges=False), solve(_fp8(bf16, fp8_param_gather=True), ranges=False)
    layout = a["layout"]
    grad = 4.0 if layout["grad_reduce_dtype"] == "fp32" else 2.0

    def share(weight: float) -> float:
        scatter, gather = exchanges.dp_shares(
            zero_stage=layout["zero_stage"],
            reshard_after_forward=layout["fsdp_reshard_after_forward"],
            grad_bytes=grad,
            weight_bytes=weight,
        )
        return float(scatter + gather)

    ratio = share(gather_w) / share(2.0)
    assert b["traffic"]["bytes_per_gpu"]["dp"] == pytest.approx(ratio * a["traffic"]["bytes_per_gpu"]["dp"])
    assert b["step"]["comm_s"]["dp"] < a["step"]["comm_s"]["dp"]
    assert b["step"]["step_s"] <= a["step"]["step_s"]
    for dim in ("tp", "cp", "pp", "ep"):
        assert b["step"]["comm_s"][dim] == a["step"]["comm_s"][dim]


def test_a_tied_embedding_gathers_its_one_bf16_matrix_once() -> None:
    """``model.tied_embeddings``: one V x h matrix serves the input embedding and the output layer, so the BF16
    share of the gather is ``V h`` of the (smaller) parameter count: Llama 3.1 8B's shape tied, 7.50e9 parameters,
    1 + 128,256 x 4,096 / 7.50e9 = 1.070 bytes a parameter against 1.131 untied; its step gathers fewer bytes."""
    tied = resolve({"model": {"preset": "llama3-8b", "tied_embeddings": True}}).model
    untied = resolve({"model": {"preset": "llama3-8b"}}).model
    assert tied.tied_embeddings and not untied.tied_embeddings
    assert tied.params == pytest.approx(untied.params - 128_256 * 4_096)
    tied_w = exchanges.fp8_gather_bytes(weight_bytes=2.0, model=tied, dense_params=tied.params, pp=1)
    untied_w = exchanges.fp8_gather_bytes(weight_bytes=2.0, model=untied, dense_params=untied.params, pp=1)
    assert tied_w == pytest.approx(1.0 + 128_256 * 4_096 / tied.params)
    assert tied_w == pytest.approx(1.070, abs=5e-4)
    assert untied_w == pytest.approx(1.131, abs=5e-4)
    doc = {
        "model": {"preset": "llama3-8b", "tied_embeddings": True},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "training": {
            "precision": "fp8",
            "seq_len": 8192,
            "global_batch_seqs": 256,
            "layout": {"tp": 1, "pp": 1, "cp": 1, "microbatch_seqs": 1, "zero_stage": 1},
        },
    }
    a, b = solve(doc, ranges=False), solve(_fp8(doc, fp8_param_gather=True), ranges=False)
    dp = a["layout"]["dp"]
    grad = 4.0 if a["layout"]["grad_reduce_dtype"] == "fp32" else 2.0
    # ZeRO-1: the gradients' reduce-scatter and the weights' all-gather, each (dp - 1) / dp of the parameters
    per_param = (dp - 1) / dp * tied.params
    assert a["traffic"]["bytes_per_gpu"]["dp"] == pytest.approx(per_param * (grad + 2.0))
    assert b["traffic"]["bytes_per_gpu"]["dp"] == pytest.approx(per_param * (grad + tied_w))
    # over two or more stages the last keeps a copy of the embedding (Megatron-Core's LanguageModule) that the
    # parameter count does not hold: (dense - V h) FP8 bytes and 2 V h BF16 ones, 1.210 a counted parameter
    two_stages = exchanges.fp8_gather_bytes(weight_bytes=2.0, model=tied, dense_params=tied.params, pp=2)
    vh = 128_256 * 4_096
    assert two_stages * tied.params == pytest.approx((tied.params - vh) * 1.0 + 2 * vh * 2.0)
    assert two_stages == pytest.approx(1.210, abs=5e-4)
    batch = exchanges.fp8_gather_bytes(
        weight_bytes=2.0, model=tied, dense_params=tied.params, pp=np.array([1, 2, 4])
    )
    assert batch.tolist() == pytest.approx([tied_w, two_stages, two_stages])
    untied_batch = exchanges.fp8_gather_bytes(
        weight_bytes=2.0, model=untied, dense_params=untied.params, pp=np.array([1, 2])
    )
    assert untied_batch.tolist() == pytest.approx([untied_w, untied_w])


def test_zero_0_all_reduces_gradients_and_gathers_no_weight() -> None:
    doc = _fp8(load_example(LLAMA_405B))
    doc["training"]["layout"] = {**doc["training"]["layout"], "zero_stage": 0}
    stated = solve(_fp8(doc, fp8_param_gather=True), ranges=False)
    assert stated["step"] == _step(doc)
    assert any(w.startswith("training.fp8_param_gather: ZeRO-0 all-reduces") for w in stated["warnings"])
    assert not any("fp8_param_gather" in w for w in solve(doc, ranges=False)["warnings"])


def test_the_routed_experts_gather_one_byte_a_weight() -> None:
    """A mixture of experts: the experts' own all-gather (the expert data-parallel group) is all FP8."""
    doc = load_example("deepseek-v3-2048xh800.yaml")
    a = solve(doc, ranges=False)
    b = solve(_fp8(doc, fp8_param_gather=True), ranges=False)
    assert b["traffic"]["bytes_per_gpu"]["dp"] < a["traffic"]["bytes_per_gpu"]["dp"]
    assert b["step"]["step_s"] <= a["step"]["step_s"]


def test_memory_is_counted_as_before() -> None:
    """Transformer Engine keeps a transposed FP8 copy of each weight for the backward pass beside the FP8 weight
    (Hopper's FP8 GEMMs take one layout), so the memory saved is not one byte a weight everywhere: the engine
    counts the weights, gradients and optimizer state as it does without the field."""
    bf16 = _fp8(load_example(LLAMA_405B))
    assert (
        solve(_fp8(bf16, fp8_param_gather=True), ranges=False)["memory"]
        == solve(bf16, ranges=False)["memory"]
    )


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp32"])
def test_only_fp8_training_may_state_it(precision: str) -> None:
    doc = copy.deepcopy(load_example(LLAMA_405B))
    doc["training"].update({"precision": precision, "fp8_param_gather": True})
    with pytest.raises(ScenarioError) as info:
        resolve(doc)
    errors = {e.path: e.message for e in info.value.errors}
    assert "needs training.precision fp8" in errors["training.fp8_param_gather"], errors


def test_a_flag_that_is_not_a_bool_names_the_field() -> None:
    with pytest.raises(ScenarioError) as info:
        resolve(_fp8(load_example(LLAMA_405B), fp8_param_gather="yes"))
    errors = {e.path: e.message for e in info.value.errors}
    assert "true or false" in errors["training.fp8_param_gather"], errors
