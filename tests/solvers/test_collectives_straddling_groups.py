"""A group smaller than a node whose size does not divide the node straddles two nodes.

Ranks are ordered tp-cp-ep-dp-pp (Megatron-Core), so TP 6 on 8-GPU nodes makes the groups {0..5}, {6..11},
{12..17}, {18..23}: the second and third each have members on two nodes (6,7 | 8..11 and 12..15 | 16,17).
The step follows the busiest GPU (docs/CONVENTIONS.md "Bytes": "step time follows the busiest GPU and stage"),
whose TP all-reduces cross the NIC: ``collectives.members_per_node`` gives the straddling group's smaller side.
"""

from __future__ import annotations

import solvers
from solvers import collectives
from solvers.collectives import Links

LINKS = Links(up_gb_s=450.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=8)


def test_tp_6_on_8_gpu_nodes_has_groups_that_cross_the_nic() -> None:
    t, nic = collectives.placed_all_reduce_s(group_size=6, stride=1, message_bytes=1e9, links=LINKS)
    # the busiest group (ranks 6..11: 2 + 4) must move part of the all-reduce between its two nodes
    assert nic > 0.0  # observed 0.0
    # time: at least the hierarchical form's inter-node step of S/4 over 2 nodes (k = 4 in the fuller node)
    assert t > 2 * 0.5 * 1e9 / 4 / 50e9  # 5 ms; observed 3.7 ms (2 x 5/6 x 1 GB at 450 GB/s)


def test_solve_gpt3_tp6_tensor_exchange_is_not_all_on_nvlink() -> None:
    """GPT-3 175B (96 heads, so TP 6 is a valid layout) on 192 H100 at TP 6, PP 8, DP 4."""

    def tp_time(tp: int, dp: int) -> tuple[float, float]:
        doc = {
            "name": "tp straddling nodes",
            "model": {"preset": "gpt3-175b"},
            "cluster": {"node": "dgx-h100", "gpus": 192},
            "training": {
                "seq_len": 8192,
                "global_batch_seqs": 96,
                "layout": {
                    "tp": tp,
                    "pp": 8,
                    "dp": dp,
                    "zero_stage": 1,
                    "recompute": "selective",
                    "microbatch_seqs": 1,
                },
            },
        }
        report = solvers.solve(doc, ranges=False)
        return float(report["step"]["comm_s"]["tp"]), float(report["traffic"]["bytes_per_gpu"]["tp"])

    t6, b6 = tp_time(6, 4)
    t4, b4 = tp_time(4, 6)  # TP 4: every group inside a node, on NVLink
    # seconds per byte sent: TP 6 is slower per byte than TP 4 (part of it crosses a 50 GB/s NIC), where
    # pricing every group on NVLink gave the same rate (1.08 s for 387 GB against 0.65 s for 232 GB)
    assert t6 / b6 > 1.2 * (t4 / b4)
