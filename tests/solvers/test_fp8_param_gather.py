"""The weights kept and all-gathered in FP8 (``training.fp8_param_gather``, Megatron-Core's ``--fp8-param-gather``,
NeMo's ``fp8_param_gather``): one byte a weight in the data-parallel all-gather, the gradients and the memory as
before; docs/CONVENTIONS.md "FP8 parameter all-gather"."""

from __future__ import annotations

import copy
from typing import Any

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


def test_the_all_gather_carries_one_byte_a_weight() -> None:
    """ZeRO-1/2: reduce-scatter g, all-gather w; with FP8 weights w = 1. Llama 3 405B's ZeRO-3 layout with the
    FP32 reduce-scatter, resharded after the forward pass: (4 + 2 x 2) -> (4 + 2 x 1) bytes a parameter."""
    assert exchanges.dp_shares(
        zero_stage=1, reshard_after_forward=False, grad_bytes=2.0, weight_bytes=1.0
    ) == (
        2.0,
        1.0,
    )
    bf16 = _fp8(load_example(LLAMA_405B))
    fp8 = _fp8(bf16, fp8_param_gather=True)
    a, b = solve(bf16, ranges=False), solve(fp8, ranges=False)
    layout = a["layout"]
    scatter, gather = exchanges.dp_shares(
        zero_stage=layout["zero_stage"],
        reshard_after_forward=layout["fsdp_reshard_after_forward"],
        grad_bytes=4.0 if layout["grad_reduce_dtype"] == "fp32" else 2.0,
        weight_bytes=2.0,
    )
    _, gather_fp8 = exchanges.dp_shares(
        zero_stage=layout["zero_stage"],
        reshard_after_forward=layout["fsdp_reshard_after_forward"],
        grad_bytes=4.0,
        weight_bytes=1.0,
    )
    ratio = (scatter + gather_fp8) / (scatter + gather)
    assert b["traffic"]["bytes_per_gpu"]["dp"] == pytest.approx(ratio * a["traffic"]["bytes_per_gpu"]["dp"])
    assert b["step"]["comm_s"]["dp"] < a["step"]["comm_s"]["dp"]
    assert b["step"]["step_s"] <= a["step"]["step_s"]
    for dim in ("tp", "cp", "pp", "ep"):
        assert b["step"]["comm_s"][dim] == a["step"]["comm_s"][dim]


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
