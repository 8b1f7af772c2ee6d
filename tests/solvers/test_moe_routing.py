"""How routed tokens load the experts and cross the NIC: node-limited routing with one copy per target node
(``training.moe_dispatch``, ``model.moe.max_nodes_per_token``) and expert capacity or forced balance
(``training.moe_capacity_factor``, ``moe_pad_to_capacity``, ``moe_force_balance``), and the dispatched tokens'
dtype (``training.moe_fp8_dispatch``); docs/CONVENTIONS.md."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers import ScenarioError, collectives, effects, pipeline, resolve, solve
from solvers.published import load_example
from solvers.specs import MOE_DISPATCHES, MOE_TOKEN_DISPATCHERS, SCHEDULES

DEEPSEEK = "deepseek-v3-2048xh800.yaml"
H800 = collectives.Links(up_gb_s=160.0, up_latency_us=3.0, out_gb_s=50.0, out_latency_us=5.0, gpus_per_node=8)


def _with_training(doc: dict[str, Any], **training: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["training"].update(training)
    return out


def _errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        resolve(doc)
    return {e.path: e.message for e in info.value.errors}


def test_node_copies_worked_examples() -> None:
    """DeepSeek-V3's eight routed experts over EP 64 on 8 nodes: 5.25 distinct nodes if routing were free,
    3.6 with the technical report's limit of 4 (§4.2); one node holds every copy inside it."""
    assert collectives.node_copies(copies=8, nodes=8, max_nodes=None) == pytest.approx(8 * (1 - (7 / 8) ** 8))
    assert collectives.node_copies(copies=8, nodes=8, max_nodes=None) == pytest.approx(5.251, abs=1e-3)
    assert collectives.node_copies(copies=8, nodes=8, max_nodes=4) == pytest.approx(3.600, abs=1e-3)
    assert collectives.node_copies(copies=8, nodes=1, max_nodes=4) == 1.0
    assert collectives.node_copies(copies=1, nodes=16, max_nodes=None) == pytest.approx(1.0)


@given(
    copies=st.integers(1, 16),
    ep=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]),
    stride=st.sampled_from([1, 2, 4, 8]),
    limit=st.one_of(st.none(), st.integers(1, 16)),
    message=st.floats(1e3, 1e10),
)
def test_one_copy_per_node_never_sends_more_over_the_nic(
    copies: int, ep: int, stride: int, limit: int | None, message: float
) -> None:
    """Per node, the NIC carries ``node_copies / c`` of the per-copy bytes, never more; inside one node the
    all-to-all is the same either way."""
    per_copy_s, per_copy_nic = collectives.placed_all_to_all_s(
        group_size=ep, stride=stride, message_bytes=message, links=H800
    )
    per_node_s, per_node_nic = collectives.placed_all_to_all_s(
        group_size=ep,
        stride=stride,
        message_bytes=message,
        links=H800,
        per_node=collectives.NodeDispatch(copies, limit),
    )
    members = min(max(H800.gpus_per_node // stride, 1), ep)
    reached = collectives.node_copies(copies=copies, nodes=ep // members, max_nodes=limit)
    assert per_node_nic == pytest.approx(reached / copies * per_copy_nic, rel=1e-12)
    assert per_node_nic <= per_copy_nic * (1 + 1e-12)
    assert per_node_s <= per_copy_s * (1 + 1e-12)  # one copy per target GPU never sends more on either link
    if members == ep:  # one node: nothing crosses the NIC
        assert per_node_nic == per_copy_nic == 0.0


@given(copies=st.integers(1, 16), limit=st.integers(1, 64))
def test_a_device_limit_caps_the_scale_up_copies(copies: int, limit: int) -> None:
    """Inside one node the scale-up link carries one copy per distinct target GPU: ``R (1 - (1 - 1/R)^c)`` of
    a token's ``c`` copies, ``R`` the GPUs it may reach; a limit of one GPU sends each token once."""
    links = H800._replace(up_latency_us=0.0)
    per_copy_s, _ = collectives.placed_all_to_all_s(group_size=8, stride=1, message_bytes=1e9, links=links)
    limited_s, _ = collectives.placed_all_to_all_s(
        group_size=8,
        stride=1,
        message_bytes=1e9,
        links=links,
        per_node=collectives.NodeDispatch(copies, None, limit),
    )
    reach = min(8, limit)
    assert limited_s == pytest.approx(
        per_copy_s * reach * (1 - (1 - 1 / reach) ** copies) / copies, rel=1e-12
    )
    if limit == 1:
        assert limited_s == pytest.approx(per_copy_s / copies, rel=1e-12)


def test_deepseek_dispatch_halves_the_expert_exchange_on_infiniband() -> None:
    """The example states DeepSeek's dispatch; priced per copy, its EP exchange takes 2.2x as long."""
    doc = load_example(DEEPSEEK)
    assert doc["training"]["moe_dispatch"] == "per_node"
    per_node = solve(doc, ranges=False)["step"]
    per_copy = solve(_with_training(doc, moe_dispatch="per_expert"), ranges=False)["step"]
    assert per_node["comm_s"]["ep"] < 0.5 * per_copy["comm_s"]["ep"]
    assert per_node["step_s"] < per_copy["step_s"]
    # without the preset's node limit the IB copies rise from 3.6 to 5.25 per token: more time than with it
    unlimited = copy.deepcopy(doc)
    unlimited["model"] = {"preset": "deepseek-v3", "moe": {"max_nodes_per_token": None}}
    assert per_node["comm_s"]["ep"] < solve(unlimited, ranges=False)["step"]["comm_s"]["ep"]


def test_a_partial_block_changes_only_the_preset_fields_it_names() -> None:
    """``model.moe`` and ``model.mla`` are laid over the preset's blocks field by field; null removes a block."""
    preset = resolve({"model": {"preset": "deepseek-v3"}}).model
    assert preset.moe is not None and preset.moe.max_nodes_per_token == 4 and preset.mla is not None
    lifted = resolve({"model": {"preset": "deepseek-v3", "moe": {"max_nodes_per_token": 8}}})
    assert lifted.model.moe == dataclasses.replace(preset.moe, max_nodes_per_token=8)
    by_key = {a["key"]: a["source"] for a in lifted.assumptions}
    assert by_key["model.moe.max_nodes_per_token"] == "scenario"
    assert by_key["model.moe.experts"].startswith("model preset 'deepseek-v3'")
    narrower = resolve({"model": {"preset": "deepseek-v3", "mla": {"q_lora_rank": 1024}}}).model
    assert narrower.mla == dataclasses.replace(preset.mla, q_lora_rank=1024)
    assert resolve({"model": {"preset": "deepseek-v3", "moe": None}}).model.moe is None
    # a preset value stated again is the preset itself: the same document, the same hash
    restated = {"preset": "deepseek-v3", "moe": {"max_nodes_per_token": 4, "experts": 256}}
    assert resolve({"model": restated}).input_hash == resolve({"model": {"preset": "deepseek-v3"}}).input_hash
    # a routing field leaves the preset's published counts; a shape field shifts them by what it changes in the
    # architecture's count (DeepSeek-V3 with 128 experts: 58 MoE layers and the multi-token-prediction module's
    # one lose 128 routed experts of 3 x 7,168 x 2,048 each, and their router columns)
    assert lifted.model.params == preset.params and lifted.model.active_params == preset.active_params
    fewer = resolve({"model": {"preset": "deepseek-v3", "moe": {"experts": 128}}})
    routed = 59 * (128 * 3 * 7168 * 2048 + 128 * 7168)
    assert fewer.model.params == pytest.approx(preset.params - routed)
    assert fewer.model.active_params == pytest.approx(preset.active_params - 59 * 128 * 7168)
    by_key = {a["key"]: a["source"] for a in fewer.assumptions}
    assert "shifted for the changed moe.experts" in by_key["model.params"]
    # a model without experts still needs the three shape fields, each named
    assert set(_errors({"model": {"preset": "llama3-8b", "moe": {"top_k": 2}}})) == {
        "model.moe.experts",
        "model.moe.expert_ffn_hidden",
    }
    assert _errors({"model": {"preset": "deepseek-v3", "moe": {"top_k": 300}}}) == {
        "model.moe.top_k": "must be <= model.moe.experts (=256)"
    }


def test_dispatch_inside_one_node_sends_one_copy_per_target_gpu() -> None:
    """EP 8 on 8-GPU nodes: no copy crosses a NIC; per node, NVLink carries one copy per distinct target GPU,
    8 (1 - (7/8)^8) = 5.25 of DeepSeek-V3's 8 (DeepEP's ``is_token_in_rank``), and with every expert of a
    token on one GPU (``max_gpus_per_token`` 1) one copy. Nothing but the expert-parallel exchange moves."""
    doc = load_example(DEEPSEEK)
    doc["training"]["layout"].update({"ep": 8})
    a = solve(_with_training(doc, moe_dispatch="per_node"), ranges=False)["step"]
    b = solve(_with_training(doc, moe_dispatch="per_expert"), ranges=False)["step"]
    doc["model"] = {"preset": "deepseek-v3", "moe": {"max_gpus_per_token": 1}}
    c = solve(_with_training(doc, moe_dispatch="per_node"), ranges=False)["step"]
    assert {k: v for k, v in a["comm_s"].items() if k != "ep"} == {
        k: v for k, v in b["comm_s"].items() if k != "ep"
    }
    assert a["comm_s"]["ep"] == pytest.approx(b["comm_s"]["ep"] * 5.25 / 8, rel=0.02)  # latency aside
    assert c["comm_s"]["ep"] == pytest.approx(b["comm_s"]["ep"] / 8, rel=0.05)
    assert c["step_s"] < a["step_s"] < b["step_s"]


def test_expert_load_rules() -> None:
    assert effects.expert_load(skew=0.25, capacity_factor=None, pad=False, forced=False, ep=8) == 1.25
    assert effects.expert_load(skew=0.25, capacity_factor=None, pad=False, forced=True, ep=8) == 1.0
    assert effects.expert_load(skew=0.25, capacity_factor=1.1, pad=False, forced=False, ep=8) == 1.1
    assert effects.expert_load(skew=0.05, capacity_factor=1.1, pad=False, forced=False, ep=8) == 1.05
    assert effects.expert_load(skew=0.25, capacity_factor=1.0, pad=True, forced=False, ep=8) == 1.0
    assert effects.expert_load(skew=0.0, capacity_factor=1.5, pad=True, forced=True, ep=8) == 1.5
    # one expert rank computes every routed copy: no skew; a capacity still caps or pads
    assert effects.expert_load(skew=0.25, capacity_factor=None, pad=False, forced=False, ep=1) == 1.0
    assert effects.expert_load(skew=0.25, capacity_factor=0.9, pad=False, forced=False, ep=1) == 0.9
    assert effects.expert_load(skew=0.25, capacity_factor=1.5, pad=True, forced=False, ep=1) == 1.5


def test_padding_to_a_capacity_of_one_prices_the_experts_as_forced_balance() -> None:
    """Both give every expert exactly the mean load; dropless routing at the fitted skew is slower."""
    doc = load_example(DEEPSEEK)
    padded = solve(_with_training(doc, moe_capacity_factor=1.0, moe_pad_to_capacity=True), ranges=False)
    forced = solve(_with_training(doc, moe_force_balance=True), ranges=False)
    routed = solve(doc, ranges=False)
    assert padded["step"] == forced["step"]
    assert routed["step"]["step_s"] > forced["step"]["step_s"]
    # a larger capacity padded is computed and sent: slower than the mean load
    roomy = solve(_with_training(doc, moe_capacity_factor=2.0, moe_pad_to_capacity=True), ranges=False)
    assert roomy["step"]["step_s"] > routed["step"]["step_s"]


def test_a_dispatch_padded_to_capacity_pays_the_fitted_share_of_the_time_per_local_expert() -> None:
    """Padded, the dispatcher never waits for the token counts on the host, which then hides its part of the
    per-expert time: the step is shorter than forced balance at the same mean load (both every expert at the mean),
    and the same with the effect off (the DeepSeek-V3 example's one-kernel grouped GEMM)."""
    from solvers.catalog.fitted import fitted_constant

    share = fitted_constant("expert_kernel_padded_share")
    assert 0.0 <= share < 1.0
    doc = load_example("mixtral-8x7b-256xh200.yaml")
    padded = solve(_with_training(doc, moe_capacity_factor=1.0, moe_pad_to_capacity=True), ranges=False)[
        "step"
    ]
    forced = solve(_with_training(doc, moe_force_balance=True), ranges=False)["step"]
    assert padded["step_s"] < forced["step_s"]
    off = copy.deepcopy(doc)
    off["training"].setdefault("efficiency", {}).setdefault("effects", {})["expert_kernels"] = False
    padded_off = solve(_with_training(off, moe_capacity_factor=1.0, moe_pad_to_capacity=True), ranges=False)
    assert padded_off["step"] == solve(_with_training(off, moe_force_balance=True), ranges=False)["step"]


def test_a_flex_dispatcher_pays_the_padded_share_even_dropless() -> None:
    """DeepEP and HybridEP (training.moe_token_dispatcher flex) are priced as a padded dispatch: at the same mean
    load a dropless flex run takes the step of a padded all-to-all one, shorter than a dropless all-to-all run; the
    dispatcher moves nothing else (the same step with the effect off)."""
    doc = load_example("mixtral-8x7b-256xh200.yaml")
    flex_doc = _with_training(doc, moe_force_balance=True, moe_token_dispatcher="flex")
    padded_doc = _with_training(doc, moe_capacity_factor=1.0, moe_pad_to_capacity=True)
    flex = solve(flex_doc, ranges=False)["step"]
    padded = solve(padded_doc, ranges=False)["step"]
    alltoall = solve(_with_training(doc, moe_force_balance=True), ranges=False)["step"]
    assert flex == padded
    assert flex["step_s"] < alltoall["step_s"]
    off = copy.deepcopy(doc)
    off["training"].setdefault("efficiency", {}).setdefault("effects", {})["expert_kernels"] = False
    assert (
        solve(_with_training(off, moe_token_dispatcher="flex"), ranges=False)["step"]
        == solve(off, ranges=False)["step"]
    )


def test_which_runs_pay_the_padded_share() -> None:
    assert effects.pays_padded_share(pad=True, dispatcher="alltoall")
    assert effects.pays_padded_share(pad=False, dispatcher="flex")
    assert not effects.pays_padded_share(pad=False, dispatcher="alltoall")


def test_the_time_per_local_expert_formula() -> None:
    full = effects.expert_kernels_s(
        local_experts=16,
        moe_layers=48,
        microbatches=64,
        per_expert_s=3e-4,
        pays_share=False,
        padded_share=0.4,
    )
    padded = effects.expert_kernels_s(
        local_experts=16, moe_layers=48, microbatches=64, per_expert_s=3e-4, pays_share=True, padded_share=0.4
    )
    assert full == pytest.approx(14.7456) and padded == pytest.approx(0.4 * 14.7456)


def test_routing_fields_leave_a_dense_model_alone() -> None:
    doc = load_example("llama3-405b-16384.yaml")
    base = solve(doc, ranges=False)["step"]
    routed = _with_training(
        doc,
        moe_dispatch="per_node",
        moe_capacity_factor=1.0,
        moe_pad_to_capacity=True,
        moe_force_balance=True,
    )
    assert solve(routed, ranges=False)["step"] == base


@pytest.mark.parametrize(
    ("training", "path", "words"),
    [
        ({"moe_pad_to_capacity": True}, "training.moe_pad_to_capacity", "needs training.moe_capacity_factor"),
        ({"moe_capacity_factor": 0}, "training.moe_capacity_factor", "> 0"),
        ({"moe_capacity_factor": "lots"}, "training.moe_capacity_factor", "number"),
        ({"moe_dispatch": "per_rank"}, "training.moe_dispatch", ", ".join(MOE_DISPATCHES)),
        (
            {"moe_token_dispatcher": "deepep"},
            "training.moe_token_dispatcher",
            ", ".join(MOE_TOKEN_DISPATCHERS),
        ),
        ({"moe_force_balance": "yes"}, "training.moe_force_balance", "true or false"),
        (
            {"moe_fp8_dispatch": True, "precision": "bf16"},
            "training.moe_fp8_dispatch",
            "needs training.precision fp8",
        ),
    ],
)
def test_bad_routing_fields_name_the_field_and_the_rule(
    training: dict[str, Any], path: str, words: str
) -> None:
    errors = _errors(_with_training(load_example(DEEPSEEK), **training))
    assert path in errors, errors
    assert words in errors[path], errors[path]


def test_an_fp8_dispatch_under_a_refused_precision_names_the_precision_alone() -> None:
    errors = _errors(_with_training(load_example(DEEPSEEK), moe_fp8_dispatch=True, precision="int4"))
    assert "training.precision" in errors and "training.moe_fp8_dispatch" not in errors, errors


@pytest.mark.parametrize("field", ["max_nodes_per_token", "max_gpus_per_token"])
def test_a_routing_limit_below_one_is_refused(field: str) -> None:
    doc = load_example(DEEPSEEK)
    doc["model"] = {"preset": "deepseek-v3", "moe": {field: 0}}
    errors = _errors(doc)
    assert f"model.moe.{field}" in errors
    assert ">= 1" in errors[f"model.moe.{field}"]


def test_only_a_device_limited_model_carries_the_limit() -> None:
    doc = load_example(DEEPSEEK)
    assert "max_gpus_per_token" not in resolve(doc).document["model"]["moe"]
    doc["model"] = {"preset": "deepseek-v3", "moe": {"max_gpus_per_token": 3}}
    assert resolve(doc).document["model"]["moe"]["max_gpus_per_token"] == 3


def test_fp8_dispatch_sends_the_dispatched_copies_in_one_byte_and_the_combine_in_two() -> None:
    """DeepSeek-V3 dispatches in FP8 and combines in BF16 (§3.3.2), which its example states; Megatron-Core's
    dispatchers send BF16 both ways, the default. Every all-to-all message is 1 + 2 bytes an element against
    2 + 2: the EP exchange takes less time, but no less than 3/4 of it (the latency does not shrink)."""
    doc = load_example(DEEPSEEK)
    assert doc["training"]["moe_fp8_dispatch"] is True
    fp8 = solve(doc, ranges=False)["step"]
    bf16 = solve(_with_training(doc, moe_fp8_dispatch=False), ranges=False)["step"]
    assert 0.75 * bf16["comm_s"]["ep"] <= fp8["comm_s"]["ep"] < 0.76 * bf16["comm_s"]["ep"]
    assert fp8["step_s"] < bf16["step_s"]
    # the default is Megatron-Core's
    default = copy.deepcopy(doc)
    del default["training"]["moe_fp8_dispatch"]
    assert solve(default, ranges=False)["step"] == bf16


def test_the_resolved_document_says_how_tokens_are_routed() -> None:
    r = resolve(load_example(DEEPSEEK))
    training = r.document["training"]
    assert training["moe_dispatch"] == "per_node"
    assert training["moe_capacity_factor"] is None
    assert training["moe_pad_to_capacity"] is False and training["moe_force_balance"] is False
    assert training["moe_token_dispatcher"] == "alltoall"
    assert training["moe_fp8_dispatch"] is True
    assert r.document["model"]["moe"]["max_nodes_per_token"] == 4
    assert r.model.moe is not None and r.model.moe.max_nodes_per_token == 4


def test_a_padded_capacity_is_sent_as_well_as_computed_whatever_the_skew_switch() -> None:
    """Padding is configuration, not the fitted skew: with ``moe_overhead`` off a capacity of 2 padded still
    doubles the all-to-all's time (and the experts' work) against a capacity of 1 padded."""
    doc = load_example(DEEPSEEK)
    doc["training"]["efficiency"]["effects"]["moe_overhead"] = False
    one = solve(_with_training(doc, moe_capacity_factor=1.0, moe_pad_to_capacity=True), ranges=False)["step"]
    two = solve(_with_training(doc, moe_capacity_factor=2.0, moe_pad_to_capacity=True), ranges=False)["step"]
    assert two["comm_s"]["ep"] == pytest.approx(2.0 * one["comm_s"]["ep"], rel=1e-12)
    assert two["compute_s"] > one["compute_s"]
    # and with the switch off and no capacity, every expert rank carries the mean load, as before the field
    assert (
        solve(doc, ranges=False)["step"]
        == solve(_with_training(doc, moe_force_balance=True), ranges=False)["step"]
    )


@given(
    copies=st.integers(1, 64),
    nodes=st.lists(st.floats(1.0, 4096.0, allow_nan=False), min_size=1, max_size=64),
    limit=st.one_of(st.none(), st.integers(1, 64)),
)
def test_node_copies_of_one_layout_equal_a_batch_bit_for_bit(
    copies: int, nodes: list[float], limit: int | None
) -> None:
    """The power is taken by squaring, so python floats and numpy arrays round alike (a vectorised ``pow``
    does not: top-k 3 of 240 experts at EP 48 differed in the last bit before)."""
    batch = collectives.node_copies(copies=copies, nodes=np.array(nodes), max_nodes=limit)
    for i, g in enumerate(nodes):
        assert collectives.node_copies(copies=copies, nodes=g, max_nodes=limit) == batch[i]


def test_reports_warn_where_the_routing_is_priced_by_a_default_or_changes_nothing() -> None:
    doc = load_example(DEEPSEEK)
    assert not [w for w in solve(doc, ranges=False)["warnings"] if "moe_" in w]
    default_dispatch = copy.deepcopy(doc)
    del default_dispatch["training"]["moe_dispatch"]
    [warning] = [
        w for w in solve(default_dispatch, ranges=False)["warnings"] if w.startswith("training.moe_")
    ]
    assert warning.startswith("training.moe_dispatch: the router sends a token to at most 4 nodes")
    low = solve(_with_training(doc, moe_capacity_factor=0.5), ranges=False)["warnings"]
    assert any(w.startswith("training.moe_capacity_factor: 0.5 is below 1") for w in low)
    dense = _with_training(
        load_example("llama3-405b-16384.yaml"), moe_force_balance=True, moe_dispatch="per_node"
    )
    assert (
        "training.moe_dispatch, training.moe_force_balance: the model has no experts, so this changes nothing"
        in solve(dense, ranges=False)["warnings"]
    )


def test_the_expert_overlap_has_nothing_to_pair_with_outside_the_steady_phase() -> None:
    """Megatron-Core's warm-up (and the cool-down that answers it) on the first stage, over its passes."""
    code = {name: i for i, name in enumerate(SCHEDULES)}
    interleaved = code["interleaved"]
    assert pipeline.unpaired_share(schedule=interleaved, pp=4, microbatches=16, virtual_stages=4) == 19 / 64
    assert pipeline.unpaired_share(schedule=interleaved, pp=4, microbatches=60, virtual_stages=4) == 19 / 240
    assert pipeline.unpaired_share(schedule=code["1f1b"], pp=8, microbatches=128, virtual_stages=1) == 8 / 128
    assert pipeline.unpaired_share(schedule=code["1f1b"], pp=8, microbatches=4, virtual_stages=1) == 1.0
    for other in ("gpipe", "zero_bubble", "dualpipe"):
        assert pipeline.unpaired_share(schedule=code[other], pp=8, microbatches=16, virtual_stages=1) == 0.0
    # batch and scalar agree
    batch = pipeline.unpaired_share(
        schedule=np.array([interleaved, code["1f1b"]]),
        pp=np.array([4, 8]),
        microbatches=np.array([16.0, 128.0]),
        virtual_stages=np.array([4, 1]),
    )
    assert list(batch) == [19 / 64, 8 / 128]


def test_a_device_limit_under_the_per_expert_dispatch_is_a_warning() -> None:
    """The device limit is read only by the per-node dispatch: stated with the per-expert one it changes nothing,
    and the report says so."""
    doc = load_example(DEEPSEEK)
    doc["model"] = {"preset": "deepseek-v3", "moe": {"max_gpus_per_token": 2}}
    per_expert = solve(_with_training(doc, moe_dispatch="per_expert"), ranges=False)
    assert any(w.startswith("model.moe.max_gpus_per_token: read only with") for w in per_expert["warnings"])
    plain = load_example(DEEPSEEK)
    assert per_expert["step"] == solve(_with_training(plain, moe_dispatch="per_expert"), ranges=False)["step"]
    per_node = solve(_with_training(doc, moe_dispatch="per_node"), ranges=False)
    assert not any("max_gpus_per_token" in w for w in per_node["warnings"])
