"""``cluster.scale_up.mesh_gpus``: a direct full mesh of GPUs without a switch, where a group reaches only its
members' links (an HGX 4-GPU board: 6 of each GPU's 18 NVLink4 links go to each of its 3 peers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, collectives, resolve, solve

H200 = collectives.Links(up_gb_s=360.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=4)
MESH = H200._replace(mesh_gpus=4)

# KempnerForge's 7B at TP 2 x FSDP 2 on four H200 of one 4-GPU board (corpus/kempnerforge-2026.yaml, row 6).
DOC: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h200", "gpus": 4, "gpus_per_node": 4},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 16,
        "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 4, "zero_stage": 3, "recompute": "full"},
    },
}


def _meshed(doc: dict[str, Any], n: int) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["cluster"]["scale_up"] = {"mesh_gpus": n}
    return doc


@given(k=st.sampled_from([2, 4]), message=st.floats(1e6, 1e10))
def test_a_group_reaches_its_members_links(k: int, message: float) -> None:
    """``(k-1)/(n-1)`` of the switched rate: a pair a third, the whole board all of it (groups that tile the
    board: in rank order groups of 3 straddle two boards, ``collectives.members_per_node``)."""
    switched, _ = collectives.placed_all_reduce_s(group_size=k, stride=1, message_bytes=message, links=H200)
    meshed, _ = collectives.placed_all_reduce_s(group_size=k, stride=1, message_bytes=message, links=MESH)
    assert meshed == pytest.approx(switched * 3 / (k - 1), rel=1e-12)


def test_a_pipeline_send_reaches_one_peer() -> None:
    switched = collectives.placed_point_to_point_s(message_bytes=1e9, crosses_nodes=False, links=H200)
    meshed = collectives.placed_point_to_point_s(message_bytes=1e9, crosses_nodes=False, links=MESH)
    assert meshed == pytest.approx(3 * switched, rel=1e-12)


def test_the_mesh_slows_only_the_exchanges_inside_the_node() -> None:
    switched = solve(DOC, ranges=False)["step"]
    meshed = solve(_meshed(DOC, 4), ranges=False)["step"]
    assert meshed["comm_s"]["tp"] == pytest.approx(3 * switched["comm_s"]["tp"], rel=1e-2)  # latency aside
    assert meshed["comm_s"]["dp"] > switched["comm_s"]["dp"]
    assert meshed["step_s"] > switched["step_s"]
    assert meshed["model_flops_per_token"] == switched["model_flops_per_token"]


@settings(max_examples=10, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]))
def test_a_mesh_is_never_faster_and_a_whole_board_group_is_unchanged(tp: int) -> None:
    doc = copy.deepcopy(DOC)
    doc["training"]["layout"]["tp"] = tp
    doc["training"]["global_batch_seqs"] = 4 * 4 // tp * 4
    switched = solve(doc, ranges=False)["step"]
    meshed = solve(_meshed(doc, 4), ranges=False)["step"]
    assert meshed["step_s"] >= switched["step_s"]
    if tp == 4:
        assert meshed["comm_s"]["tp"] == switched["comm_s"]["tp"]


def test_without_a_mesh_nothing_moves_and_the_document_carries_no_key() -> None:
    assert "mesh_gpus" not in resolve(DOC).document["cluster"]["scale_up"]
    assert resolve(_meshed(DOC, 4)).document["cluster"]["scale_up"]["mesh_gpus"] == 4


@pytest.mark.parametrize(("n", "words"), [(1, ">= 2"), (2, ">= cluster.gpus_per_node (=4)")])
def test_a_mesh_smaller_than_the_node_is_refused(n: int, words: str) -> None:
    with pytest.raises(ScenarioError) as err:
        resolve(_meshed(DOC, n))
    errors = {e.path: e.message for e in err.value.errors}
    assert "cluster.scale_up.mesh_gpus" in errors, errors
    assert words in errors["cluster.scale_up.mesh_gpus"], errors
