"""Distinct targets of a token's routed copies under ``training.moe_dispatch: per_node``.

A token's ``top_k`` routed copies go to ``top_k`` *distinct* experts. With one expert per GPU (``ep = experts``)
they therefore land on ``top_k`` distinct GPUs: DeepEP's one-copy-per-target-GPU dispatch sends exactly as many
copies as the per-expert all-to-all does (``collectives.placed_all_to_all_s`` docstring: "The scale-up link, too,
carries one copy per distinct target GPU, not per expert"). ``collectives.node_copies`` instead draws each copy's
GPU (node) independently, with replacement, so it prices fewer distinct targets than exist:
Mixtral's top-2 at EP 8 (one expert a GPU): 8 (1 - (7/8)^2) = 1.875 GPUs instead of 2; top-16 of 16 experts at
EP 16: 16 (1 - (15/16)^16) = 10.3 GPUs instead of 16. The expected count of distinct GPUs of ``k`` distinct experts
spread ``E/R`` a GPU is hypergeometric: ``R (1 - C(E - E/R, k) / C(E, k))``.

A node limit the router cannot meet (``max_nodes_per_token x experts per node < top_k``) must not make the dispatch
cheaper than the routing allows: it is either refused or priced at the nodes a token must reach.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import ScenarioError, solve
from solvers.published import load_example


def _mixtral(**training: Any) -> dict[str, Any]:
    doc = copy.deepcopy(
        load_example("mixtral-8x7b-256xh200.yaml")
    )  # EP 8 = 8 experts, one a GPU, in one node
    doc["training"].update(training)
    return doc


def test_one_expert_per_gpu_per_node_dispatch_sends_every_copy() -> None:
    per_expert = solve(_mixtral(moe_dispatch="per_expert"))["step"]["comm_s"]["ep"]
    per_node = solve(_mixtral(moe_dispatch="per_node"))["step"]["comm_s"]["ep"]
    # drawn with replacement the copies were priced at 1.875 of 2 (0.1182 s against 0.1260 s), though the two
    # experts are on two GPUs
    assert per_node == pytest.approx(per_expert, rel=1e-3)


def _all_experts(ep: int, **extra: Any) -> dict[str, Any]:
    """A Qwen3-30B-A3B-shaped model cut to 16 experts, every one routed (top_k = experts), on 32 H100."""
    doc = copy.deepcopy(load_example("mixtral-8x7b-256xh200.yaml"))
    doc["model"] = {
        "name": "all-experts",
        "layers": 8,
        "hidden": 2048,
        "ffn_hidden": 6144,
        "heads": 16,
        "kv_heads": 4,
        "vocab": 32000,
        "gated_mlp": True,
        "moe": {"experts": 16, "top_k": 16, "expert_ffn_hidden": 768, "moe_layers": 8, **extra},
    }
    doc["cluster"] = {"node": "dgx-h100", "gpus": 32}
    doc["training"]["global_batch_tokens"] = 4096 * 64
    doc["training"]["layout"] = {"tp": 1, "pp": 1, "ep": ep, "zero_stage": 1, "recompute": "selective"}
    doc["training"]["moe_dispatch"] = "per_node"
    return doc


def test_top_k_equal_to_experts_reaches_every_expert_gpu() -> None:
    # EP 8 inside one node, 2 experts a GPU: every token visits all 8 GPUs (per_expert: 16 copies, 7/8 remote)
    per_node = solve(_all_experts(8))["step"]["comm_s"]["ep"]
    per_expert_doc = _all_experts(8)
    per_expert_doc["training"]["moe_dispatch"] = "per_expert"
    per_expert = solve(per_expert_doc)["step"]["comm_s"]["ep"]
    # one copy per distinct GPU: 8 of the 16 per-expert copies, exactly half
    assert per_node == pytest.approx(per_expert / 2, rel=0.02)


def test_an_unreachable_node_limit_is_not_priced_below_the_nodes_a_token_must_reach() -> None:
    # EP 16 over two 8-GPU nodes, 8 experts a node, top-16: every token needs both nodes, whatever M says
    unlimited = solve(_all_experts(16))["step"]["comm_s"]["ep"]
    try:
        limited = solve(_all_experts(16, max_nodes_per_token=1))["step"]["comm_s"]["ep"]
    except ScenarioError as error:  # refusing the impossible limit is a fix too
        assert "max_nodes_per_token" in str(error)
        return
    # one node's worth of copies must not be priced for a token that reaches two (0.31 s against 0.61 s)
    assert limited >= unlimited * (1 - 1e-3)
