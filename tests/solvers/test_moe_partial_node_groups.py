"""A group that spans nodes without filling whole nodes crosses the NIC.

``collectives._placed`` counts the nodes of a group as ``ceil(n / k)`` (``k`` members a node): with ``k < n < 2k``
that is 2 nodes, and the hierarchical form's inter-node step moves bytes on the NIC (counted as ``n // k``, 1
node, the group was priced as if it were inside one, on NVLink only). ``placed_all_to_all_s`` counts the same group as ``n / k`` nodes (docs/CONVENTIONS.md: "`G` is the group's members
over the members per node, not rounded").

Realistic case: Mixtral 8x7B on 216 GB200 (three NVL72 racks) at PP 2, EP 4: DP 108 at stride 1 (72 + 36 members
on two racks) and the expert-data-parallel group, 27 members at stride ``ep x expert_tp = 4`` (18 + 9 on two racks),
both reduce their gradients across the racks' NICs.
"""

from __future__ import annotations

import pytest

from solvers import collectives

NVL72 = collectives.Links(
    up_gb_s=720.0, up_latency_us=1.0, out_gb_s=45.0, out_latency_us=5.0, gpus_per_node=72
)


@pytest.mark.parametrize(("group", "stride"), [(108, 1), (27, 4), (128, 1)])
def test_a_group_spanning_two_nodes_sends_over_the_nic(group: int, stride: int) -> None:
    k = collectives.members_per_node(group_size=group, stride=stride, gpus_per_node=NVL72.gpus_per_node)
    assert k < group  # the group spans nodes
    time, nic = collectives.placed_reduce_scatter_s(
        group_size=group, stride=stride, message_bytes=1e9, links=NVL72
    )
    inside = collectives.ring_reduce_scatter_s(
        group_size=group, message_bytes=1e9, bandwidth_gb_s=NVL72.up_gb_s, latency_us=0.0
    )
    # not nic 0.0 and the time of the whole group on NVLink
    assert nic > 0.0
    assert time > inside
