"""Groups astride node boundaries, a short last pipeline flush and routing limits: each figure at or above a
hand-computed bound.

Conventions used (docs/CONVENTIONS.md "Bytes"; ``collectives.placed_all_reduce_s``): each GPU sends on its own
NIC at ``out_gb_s``; the step follows the busiest GPU.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import collectives, solve
from solvers.collectives import Links
from solvers.published import load_example

S = 1e9
SLOW_NIC = Links(up_gb_s=450.0, up_latency_us=0.0, out_gb_s=25.0, out_latency_us=0.0, gpus_per_node=8)
NVL72 = Links(up_gb_s=900.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=72)


def test_a_group_of_12_on_8_gpu_nodes_is_priced_by_its_4_member_side() -> None:
    """Reduce-scatter over 12 ranks at stride 1 on 8-GPU nodes: every group is 8 + 4 (ranks 0-11, 12-23, ...).

    Each rank ends with a fully reduced S/12 shard. The 8 shards owned on the 8-member node need the 4-member
    node's contribution, at least one pre-reduced S/12 each: 8/12 S leaves the 4-member node over its 4 NICs,
    S/6 per GPU, so the collective takes >= S/6 / out_gb_s = 6.67 ms at 25 GB/s (priced from the fuller side,
    k = 8, it came to 4.44 ms).
    """
    t, _ = collectives.placed_reduce_scatter_s(group_size=12, stride=1, message_bytes=S, links=SLOW_NIC)
    assert t >= S / 6 / (SLOW_NIC.out_gb_s * 1e9) * (1 - 1e-9)


def test_an_all_reduce_over_12_on_8_gpu_nodes_is_priced_by_its_4_member_side() -> None:
    """As above, both passes: >= 2 S/6 / 25 GB/s = 13.3 ms;"""
    t, _ = collectives.placed_all_reduce_s(group_size=12, stride=1, message_bytes=S, links=SLOW_NIC)
    assert t >= 2 * S / 6 / (SLOW_NIC.out_gb_s * 1e9) * (1 - 1e-9)


def test_dp_16_at_stride_8_on_nvl72_moves_the_7_member_sides_bytes() -> None:
    """DP 16 at stride 8 on 72-GPU racks (the corrections' own case): 9 members in one rack, 7 in the next.
    The 9 members' shards (9/16 S) need the 7-member side's partial sums: 9/16 S over 7 NICs = 0.0804 S per
    GPU on the busiest NIC; the 7 members' shards need 7/16 S from the 9 (0.0486 S each): the mean over the 16
    GPUs is S/16 = 0.0625 S. Observed: 1/2 x S/9 = 0.0556 S, below even the mean."""
    _, nic = collectives.placed_reduce_scatter_s(group_size=16, stride=8, message_bytes=S, links=NVL72)
    assert nic >= S / 16 * (1 - 1e-9)


@pytest.mark.parametrize("max_nodes", [None, 4])
def test_per_node_dispatch_of_a_group_straddling_two_racks_crosses_the_nic_once_a_token(
    max_nodes: int | None,
) -> None:
    """EP 64 at stride 1 on GB200 NVL72 racks (DeepSeek-V3's 256 experts, top 8): every EP group lies on two
    racks (ranks 64-127: 8 in rack 0, 56 in rack 1), so from any GPU a token has one remote rack, and the
    per_node dispatch (one copy per distinct remote node) sends it at most once on the NIC: <= S/8 per GPU.
    The engine treats the group as n/k = 64/8 = 8 nodes of 32 experts (members_per_node gives the smaller
    side, 8) and sends 5.29 x 7/8 (3.63 x 7/8 with M = 4) copies a token: 579 MB (397 MB) for S = 1 GB."""
    _, nic = collectives.placed_all_to_all_s(
        group_size=64,
        stride=1,
        message_bytes=S,
        links=NVL72,
        per_node=collectives.NodeDispatch(8, max_nodes, None, 256),
    )
    assert nic <= S / 8 * (1 + 1e-9)


def test_zero_bubble_last_short_flush_pays_its_critical_path() -> None:
    """Llama 3 405B on 8,192 H100 (pp 16, 32 microbatches a replica, no recompute, F = B = W), flushes of 28:
    one flush of 28 (ZB-H1, (p-1) F = 15 F) and one of 4 (m < p: the critical path (p-1) F + (p-m) B -
    (m-1) W = 24 F, pipeline.bubble_s's own bound). The step's bubble is 39 F; 1F1B's is 2 x 15 x 3 F = 90 F,
    so zero bubble is 39/90 = 0.433 of it (every flush at the first flush's size would be 2 x 15 F = 30 F,
    0.333)."""

    def run(schedule: str) -> Any:
        doc = copy.deepcopy(load_example("llama3-405b-8192.yaml"))
        doc["training"]["layout"].update(schedule=schedule, virtual_stages=1)
        doc["training"]["pipeline_flush_microbatches"] = 28
        return solve(doc, ranges=False)

    zb, one = run("zero_bubble"), run("1f1b")
    assert zb["layout"]["microbatches"] == 32 and zb["layout"]["pp"] == 16
    assert zb["step"]["compute_s"] == pytest.approx(one["step"]["compute_s"], rel=1e-6)
    ratio = zb["step"]["bubble_s"] / one["step"]["bubble_s"]
    assert ratio >= 39 / 90 * (1 - 1e-6)


def test_a_gpu_limit_below_top_k_is_priced_at_the_whole_gpus_a_token_needs() -> None:
    """6 distinct experts a token, 4 experts a GPU (256 over EP 64), at most 1 GPU a token: the router cannot
    meet the limit, and the CHANGELOG (1.8.0) says such a limit "is priced at the nodes they need": 6 distinct
    experts need ceil(6/4) = 2 GPUs. node_copies returns c G / E = 1.5 (a fraction of a GPU)."""
    reached = collectives.node_copies(copies=6, nodes=64.0, max_nodes=1, experts=256)
    assert reached >= 2.0 - 1e-9
