"""solvers.collectives: alpha-beta costs and the placement of each group on the link it crosses."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import collectives
from solvers.collectives import Links
from solvers.specs import AcceleratorSpec, ClusterSpec, LinkSpec

LINKS = Links(up_gb_s=400.0, up_latency_us=1.0, out_gb_s=50.0, out_latency_us=5.0, gpus_per_node=8)


def test_bytes_per_gpu() -> None:
    n = np.array([1, 2, 4, 8, 64])
    np.testing.assert_allclose(collectives.all_reduce_bytes(group_size=n, message_bytes=1.0), 2 * (n - 1) / n)
    np.testing.assert_allclose(collectives.reduce_scatter_bytes(group_size=n, message_bytes=1.0), (n - 1) / n)
    assert collectives.all_gather_bytes is collectives.reduce_scatter_bytes


def test_alpha_beta() -> None:
    t = collectives.ring_all_reduce_s(
        group_size=np.array([8]), message_bytes=np.array([60e9]), bandwidth_gb_s=50.0, latency_us=5.0
    )
    assert t[0] == pytest.approx(14 * 5e-6 + 1.75 * 60e9 / 50e9)
    assert collectives.point_to_point_s(
        message_bytes=6.3e6, bandwidth_gb_s=50.0, latency_us=5.0
    ) == pytest.approx(5e-6 + 6.3e6 / 50e9)
    a2a = collectives.all_to_all_s(
        group_size=np.array([8]),
        message_bytes=np.array([100e6]),
        bandwidth_gb_s=50.0,
        latency_us=0.0,
        skew=1.2,
    )
    assert a2a[0] == pytest.approx(1.2 * 87.5e6 / 50e9)


def test_latency_steps_ring_then_tree() -> None:
    np.testing.assert_array_equal(
        collectives.latency_steps(group_size=np.array([1, 2, 3, 8, 2048])), [0, 1, 2, 3, 11]
    )


def test_members_per_node() -> None:
    k = collectives.members_per_node(
        group_size=np.array([128, 16384, 8, 4, 2]), stride=np.array([8, 1, 1, 2, 8]), gpus_per_node=8
    )
    np.testing.assert_array_equal(k, [1, 8, 8, 4, 1])


def test_group_inside_a_node_uses_scale_up_and_no_nic() -> None:
    t, nic = collectives.placed_all_reduce_s(
        group_size=np.array([8]), stride=np.array([1]), message_bytes=np.array([1e9]), links=LINKS
    )
    assert nic[0] == 0.0
    assert t[0] == pytest.approx(2 * 3 * 1e-6 + 1.75e9 / 400e9)


def test_group_across_nodes_one_member_per_node_is_a_flat_ring_on_the_nic() -> None:
    """Seed 004 §5.3: DP 128 at stride 8: 2 x 127/128 x 6.33 GB on each GPU's own NIC."""
    s = 405e9 / 128 * 2
    t, nic = collectives.placed_all_reduce_s(
        group_size=np.array([128]),
        stride=np.array([8]),
        message_bytes=np.array([s]),
        links=Links(400.0, 0.0, 50.0, 0.0, 8),
    )
    assert nic[0] == pytest.approx(2 * 127 / 128 * s)
    assert t[0] == pytest.approx(2 * 127 / 128 * s / 50e9)


def test_hierarchical_beats_flat_when_a_node_holds_several_members() -> None:
    t, nic = collectives.placed_all_reduce_s(
        group_size=np.array([64]), stride=np.array([1]), message_bytes=np.array([8e9]), links=LINKS
    )
    flat = 2 * 63 / 64 * 8e9 / 50e9
    assert t[0] < flat
    assert nic[0] == pytest.approx(2 * 7 / 8 * 8e9 / 8)  # inter-node all-reduce of S/8 over 8 nodes


def test_all_to_all_splits_nvlink_and_nic() -> None:
    t, nic = collectives.placed_all_to_all_s(
        group_size=np.array([64]),
        stride=np.array([1]),
        message_bytes=np.array([100e6]),
        links=Links(400.0, 0.0, 50.0, 0.0, 8),
    )
    assert nic[0] == pytest.approx(56 / 64 * 100e6)
    assert t[0] == pytest.approx(56 / 64 * 100e6 / 50e9)


def test_oversubscription_divides_the_nic() -> None:
    h100 = AcceleratorSpec("x", {"bf16": 1.0}, 80.0, 3.0, 700.0, 0.0, 0.0, 0.5)
    cluster = ClusterSpec(h100, 64, 8, LinkSpec(400.0, 1.0), LinkSpec(50.0, 5.0, 4.0))
    links = Links.of(cluster)
    assert links.out_gb_s == pytest.approx(12.5)
    assert Links.of(ClusterSpec(h100, 64, 8, LinkSpec(400.0, 1.0), LinkSpec(50.0, 5.0, 0.5))).out_gb_s == 50.0


def test_point_to_point_link_choice() -> None:
    t = collectives.placed_point_to_point_s(
        message_bytes=np.array([1e6, 1e6]), crosses_nodes=np.array([True, False]), links=LINKS
    )
    assert t[0] == pytest.approx(5e-6 + 1e6 / 50e9)
    assert t[1] == pytest.approx(1e-6 + 1e6 / 400e9)
