"""A group whose size is not a multiple of its members per node still crosses the NIC.

A group of ``n`` members with ``k`` per node spans ``ceil(n / k)`` nodes: a group of 12 at 8 a node (or 16 at 9
a node on NVL72 racks) spans two, and its hierarchical form's inter-node step moves bytes on the NIC (as
``exchanges.per_tensor_collectives_extra_s`` counts the nodes, with a ceiling).
"""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers import collectives
from solvers.collectives import Links

LINKS = Links(up_gb_s=450.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=8)
NVL72 = Links(up_gb_s=900.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=72)
S = 1e9


def _hier_floor(*, kind: int, n: int, k: int) -> float:
    """NIC bytes per GPU of the module's own hierarchical form over the nodes the group really spans."""
    nodes = -(-n // k)
    return kind * (nodes - 1) / nodes * S / k


@pytest.mark.parametrize("as_array", [False, True])
def test_a_group_of_12_on_8_gpu_nodes_sends_on_the_nic(as_array: bool) -> None:
    # ranks 0-11 at stride 1: 8 on one node, 4 on the next; every group of 12 spans two nodes
    n, stride, msg = (np.array([12]), np.array([1]), np.array([S])) if as_array else (12, 1, S)
    t, nic = collectives.placed_all_reduce_s(group_size=n, stride=stride, message_bytes=msg, links=LINKS)
    t, nic = float(np.asarray(t).ravel()[0]), float(np.asarray(nic).ravel()[0])
    lower = _hier_floor(kind=2, n=12, k=8)  # 2 x 1/2 x S/8 = 125 MB, below the 8/4 split's real S/4
    assert nic >= lower  # observed: 0.0
    assert t >= lower / (LINKS.out_gb_s * 1e9)  # observed: 3.9 ms, NVLink only; at least 2.5 ms on the NIC


def test_a_group_of_20_on_8_gpu_nodes_spans_three_nodes() -> None:
    # 20 members at 8 a node span 3 nodes (8 + 8 + 4); the floor counts 2, the same as a group of 16
    _, nic20 = collectives.placed_reduce_scatter_s(group_size=20, stride=1, message_bytes=S, links=LINKS)
    _, nic16 = collectives.placed_reduce_scatter_s(group_size=16, stride=1, message_bytes=S, links=LINKS)
    assert nic20 > nic16
    assert nic20 >= _hier_floor(kind=1, n=20, k=8)


def test_dp_16_at_stride_8_on_nvl72_racks_crosses_the_nic() -> None:
    # TP 8 x DP 16 = 128 GPUs a stage on 72-GPU racks: 9 DP members in one rack, 7 in the next
    t, nic = collectives.placed_reduce_scatter_s(group_size=16, stride=8, message_bytes=S, links=NVL72)
    assert nic >= _hier_floor(kind=1, n=16, k=9)  # observed 0.0
    assert t >= _hier_floor(kind=1, n=16, k=9) / (NVL72.out_gb_s * 1e9)


def test_solve_prices_the_dp_exchange_of_a_rack_straddling_group_on_the_nic() -> None:
    """Llama 3 70B on 1,152 GB200 (16 NVL72 racks), TP 8, PP 9, DP 16: each DP group spans two racks, so its
    gradient reduce-scatter and weight all-gather (ZeRO-1, 4 bytes a parameter) must cross the NIC. Observed: the
    report's largest NIC burst is the 16.8 MB pipeline message (the DP exchange put 0 bytes on the NIC) and the DP
    exchange of 3.7 GB takes 5.0 ms, the NVLink time; the hierarchical form over 2 racks gives about 7.5 ms
    (4.9 ms on NVLink at 720 GB/s + 0.22 GB on the NIC at 85 GB/s)."""
    doc = {
        "name": "dp over two racks",
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": "gb200-nvl72", "gpus": 1152},
        "training": {
            "seq_len": 8192,
            "global_batch_seqs": 1152,
            "layout": {
                "tp": 8,
                "pp": 9,
                "dp": 16,
                "zero_stage": 1,
                "recompute": "selective",
                "microbatch_seqs": 1,
            },
        },
    }
    report = solvers.solve(doc, ranges=False)
    pp_message = 8192 * 8192 * 2 / 8  # one microbatch's activation over TP 8
    dp_bytes = report["traffic"]["bytes_per_gpu"]["dp"]  # 15/16 of the shard's 4 bytes a parameter
    # the module's hierarchical form over the 2 racks: 1/2 of the shard over 9 members a rack
    dp_nic_lower = 0.5 * dp_bytes * 16 / 15 / 9
    assert report["traffic"]["burst_bytes"] > pp_message
    assert report["traffic"]["burst_bytes"] >= 0.9 * dp_nic_lower
