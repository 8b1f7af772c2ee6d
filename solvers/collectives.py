"""Alpha-beta cost of collectives, and which link each parallel group crosses.

Every function broadcasts over numpy arrays (one entry per layout). Sizes are bytes, bandwidths are
``_gb_s`` (1e9 bytes/s, the rate a collective achieves, one direction), latencies ``_us``.

Bytes each GPU sends (Thakur, Rabenseifner, Gropp, 'Optimization of Collective Communication Operations in
MPICH', IJHPCA 2005; Patarasuk & Yuan 2009 for the bandwidth-optimal ring; seed 003):

==================  ====================  ===============
collective          bytes per GPU         ring steps
==================  ====================  ===============
all-reduce          2 (N-1)/N x S         2 (N-1)
reduce-scatter      (N-1)/N x S           N-1
all-gather          (N-1)/N x S           N-1
all-to-all          (N-1)/N x S           1 (all peers at once)
send/recv           S                     1
==================  ====================  ===============

Time = steps x alpha + bytes / bandwidth. The 2(N-1)/N factor is 1.5 at N = 4, 1.75 at 8, 1.97 at 64: "2P"
is an overestimate that approaches the truth from above (seed 003).

Placement (the link a group crosses). Ranks are ordered tensor, context, expert/data, pipeline from the
fastest-varying (Megatron-Core's ``tp-cp-ep-dp-pp`` order), so a group of ``n`` members at ``stride`` has
``k = clip(gpus_per_node // stride, 1, n)`` members in each node. ``k == n``: the whole group is inside one
node and uses the scale-up link. ``k == 1``: every member is on another node and each uses its own NIC (one
NIC per GPU, rail-optimised) at ``bandwidth / oversubscription``. Otherwise the collective is run
hierarchically (reduce-scatter inside the node, the collective across nodes on ``S / k``, all-gather inside
the node), which is what NCCL achieves with one ring per NIC, and the faster of flat and hierarchical is
taken.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from solvers.compute import Num, ceil_log2, clip, maximum, minimum, where
from solvers.specs import ClusterSpec, MoESpec

GB = 1e9
US = 1e-6


class Links(NamedTuple):
    """Achieved per-direction rate and start-up latency of the two link classes of a cluster.

    ``out_gb_s`` already divides the NIC rate by the fabric's oversubscription: a group that spans nodes
    shares the fabric's core.
    """

    up_gb_s: float
    up_latency_us: float
    out_gb_s: float
    out_latency_us: float
    gpus_per_node: int
    mesh_gpus: int | None = None

    @classmethod
    def of(cls, cluster: ClusterSpec) -> Links:
        oversubscription = max(cluster.scale_out.oversubscription, 1.0)
        return cls(
            up_gb_s=cluster.scale_up.bandwidth_gb_s,
            up_latency_us=cluster.scale_up.latency_us,
            out_gb_s=cluster.scale_out.bandwidth_gb_s / oversubscription,
            out_latency_us=cluster.scale_out.latency_us,
            gpus_per_node=cluster.gpus_per_node,
            mesh_gpus=cluster.scale_up.mesh_gpus,
        )

    def up_rate(self, members: Num) -> Num:
        """Scale-up rate of a group with ``k`` members in one node: the full rate through a switch; on a direct
        full mesh of ``n`` GPUs (``cluster.scale_up.mesh_gpus``) each GPU's links are split evenly over its
        ``n - 1`` peers and a group reaches ``k - 1`` of them, ``(k - 1)/(n - 1)`` of the rate (no GPU forwards
        for another: NCCL's rings run over the members' direct links).
        Example: an HGX 4-GPU H200 board (18 NVLink4 links, 6 a peer) at 360 GB/s: a pair 120 GB/s, all four 360.
        """
        if self.mesh_gpus is None:
            return self.up_gb_s
        return self.up_gb_s * maximum(members - 1, 1) / max(self.mesh_gpus - 1, 1)


def all_reduce_bytes(*, group_size: Num, message_bytes: Num) -> Num:
    """Bytes each GPU sends in a ring all-reduce: ``2 (N-1)/N x S``.

    Example (seed 003): P = 60 GB on 4 GPUs -> 1.5 x 60 = 90 GB; on 8 -> 105 GB; on 64 -> 118.1 GB.
    """
    n = maximum(group_size, 1)
    return 2.0 * (n - 1) / n * message_bytes


def reduce_scatter_bytes(*, group_size: Num, message_bytes: Num) -> Num:
    """Bytes each GPU sends in a reduce-scatter (or an all-gather): ``(N-1)/N x S``.

    Example (seed 003): the all-gather half of a 60 GB all-reduce on 8 GPUs is 7/8 x 60 = 52.5 GB.
    """
    n = maximum(group_size, 1)
    return (n - 1) / n * message_bytes


all_gather_bytes = reduce_scatter_bytes


def transfer_s(*, bytes_: Num, bandwidth_gb_s: Num, steps: Num, latency_us: float) -> Num:
    """Alpha-beta time: ``steps x alpha + bytes / bandwidth``.

    Example (seed 003): 120 GB over NVLink at 450 GB/s -> 0.267 s; over a 50 GB/s NIC -> 2.4 s.
    """
    return steps * (latency_us * US) + bytes_ / (bandwidth_gb_s * GB)


def ring_all_reduce_s(
    *, group_size: Num, message_bytes: Num, bandwidth_gb_s: float, latency_us: float
) -> Num:
    """Ring all-reduce: ``2(N-1) alpha + 2(N-1)/N S / B``. Example: 60 GB on 8 GPUs at 50 GB/s -> 2.1 s."""
    n = maximum(group_size, 1)
    return transfer_s(
        bytes_=all_reduce_bytes(group_size=n, message_bytes=message_bytes),
        bandwidth_gb_s=bandwidth_gb_s,
        steps=2.0 * (n - 1),
        latency_us=latency_us,
    )


def ring_reduce_scatter_s(
    *, group_size: Num, message_bytes: Num, bandwidth_gb_s: float, latency_us: float
) -> Num:
    """Ring reduce-scatter or all-gather: ``(N-1) alpha + (N-1)/N S / B``.

    Example (seed 003): 52.5 GB (7/8 of 60 GB) at 50 GB/s -> 1.05 s.
    """
    n = maximum(group_size, 1)
    return transfer_s(
        bytes_=reduce_scatter_bytes(group_size=n, message_bytes=message_bytes),
        bandwidth_gb_s=bandwidth_gb_s,
        steps=1.0 * (n - 1),
        latency_us=latency_us,
    )


def point_to_point_s(*, message_bytes: Num, bandwidth_gb_s: float, latency_us: float) -> Num:
    """One send/receive: ``alpha + S / B``. Example: 6.3 MB at 50 GB/s + 5 us -> 0.131 ms."""
    return transfer_s(bytes_=message_bytes, bandwidth_gb_s=bandwidth_gb_s, steps=1.0, latency_us=latency_us)


def all_to_all_s(
    *,
    group_size: Num,
    message_bytes: Num,
    bandwidth_gb_s: float,
    latency_us: float,
    skew: float = 1.0,
) -> Num:
    """All-to-all where each GPU holds ``S`` bytes for the group: ``alpha + skew (N-1)/N S / B``.

    The busiest NIC sets the time (FAST §2-§3: skewed MoE loads send >12x the median to some pairs), so a
    ``skew`` >= 1 multiplies the mean per-GPU volume. Example: 100 MB over 8 GPUs at 50 GB/s, skew 1.2 ->
    1.2 x 87.5 MB / 50 GB/s = 2.1 ms.
    """
    n = maximum(group_size, 1)
    bytes_ = skew * reduce_scatter_bytes(group_size=n, message_bytes=message_bytes)
    return transfer_s(
        bytes_=bytes_, bandwidth_gb_s=bandwidth_gb_s, steps=where(n > 1, 1.0, 0.0), latency_us=latency_us
    )


def members_per_node(*, group_size: Num, stride: Num, gpus_per_node: int) -> Num:
    """Members of the busiest group inside one node: ``clip(gpus_per_node // stride, 1, group_size)``, except
    for a group whose span ``n x stride`` neither divides the node nor is a multiple of it: its groups then
    cross node boundaries part-way, and the busiest one has ``gcd(n x stride, gpus_per_node) / stride`` members
    on its smallest side (at least 1), whose NICs carry what the other side needs.

    Example: DP of 128 at stride 8 (TP8) on 8-GPU nodes -> 1 (every member on another node);
    DP of 16,384 at stride 1 -> 8 (a whole node, then across nodes); TP 6 on 8-GPU nodes -> 2 (ranks 6-11
    lie 2 on one node and 4 on the next); 12 at stride 1 on 8-GPU nodes -> 4 (8 + 4).
    """
    return _members(maximum(group_size, 1), stride, gpus_per_node)


def _members(n: Num, stride: Num, gpus_per_node: int) -> Num:
    # members_per_node for a group size n >= 1
    st = maximum(stride, 1)
    k = clip(gpus_per_node // st, 1, n)
    span = n * st
    straddles = _misaligned(span, gpus_per_node)
    if type(straddles) is bool:  # one layout (python ints)
        return max(math.gcd(span, gpus_per_node) // st, 1) if straddles else k
    return where(straddles, maximum(np.gcd(span, gpus_per_node) // st, 1), k)


def _misaligned(span: Num, gpus_per_node: int) -> Num:
    # a group whose span neither divides the node nor is a multiple of it: its groups cross node boundaries
    # part-way, and the busiest one has gcd(span, node) / stride members on its smallest side
    return (span % gpus_per_node != 0) & (gpus_per_node % span != 0)


def placed_all_reduce_s(*, group_size: Num, stride: Num, message_bytes: Num, links: Links) -> tuple[Num, Num]:
    """Time and NIC bytes per GPU of an all-reduce placed on the links its group crosses.

    Inside a node: ring on scale-up, no NIC bytes. Spanning nodes with ``k`` members per node: the faster of
    a flat ring on the NIC and the hierarchical form (intra-node reduce-scatter + inter-node all-reduce of
    ``S / k`` on ``N / k`` nodes + intra-node all-gather).
    Example: 6.33 GB over DP 128 at stride 8 -> k = 1: 2 x 127/128 x 6.33 GB / 50 GB/s = 0.251 s, 12.6 GB
    on the NIC (seed 004 §5.3).
    """
    return _placed(kind=2, group_size=group_size, stride=stride, message_bytes=message_bytes, links=links)


def placed_reduce_scatter_s(
    *, group_size: Num, stride: Num, message_bytes: Num, links: Links
) -> tuple[Num, Num]:
    """Time and NIC bytes per GPU of a reduce-scatter (or all-gather) placed like ``placed_all_reduce_s``."""
    return _placed(kind=1, group_size=group_size, stride=stride, message_bytes=message_bytes, links=links)


def latency_steps(*, group_size: Num) -> Num:
    """Start-up latencies paid by one pass of a collective over ``N`` ranks: ``min(N - 1, ceil(log2 N))``.

    A ring pays ``N - 1``; NCCL switches to double binary trees across many nodes (Sanders, Speck, Traff,
    'Two-tree algorithms for full bandwidth broadcast, reduction and scan', Parallel Computing 2009), whose
    latency grows with ``ceil(log2 N)`` while the bandwidth term stays ``(N-1)/N``. Example: N = 8 -> 3; N = 2,048
    -> 11.
    """
    return _latency_steps(maximum(group_size, 1))


def _latency_steps(n: Num) -> Num:
    # latency_steps for a group size n >= 1
    return 1.0 * minimum(n - 1, ceil_log2(n))


def _placed(*, kind: int, group_size: Num, stride: Num, message_bytes: Num, links: Links) -> tuple[Num, Num]:
    # kind = number of passes: 2 for an all-reduce, 1 for a reduce-scatter or an all-gather.
    n = maximum(group_size, 1)
    if type(n) is int and n == 1:  # one layout's group of one GPU: the general form below gives 0.0, 0.0
        return 0.0, 0.0
    k = _members(n, stride, links.gpus_per_node)
    nodes = -(-n // k)  # the nodes the group spans: 12 members at 8 a node span 2
    frac_all = (n - 1) / n
    steps_all = kind * _latency_steps(n)
    inside = transfer_s(
        bytes_=kind * frac_all * message_bytes,
        bandwidth_gb_s=links.up_rate(k),
        steps=steps_all,
        latency_us=links.up_latency_us,
    )
    spans = k < n
    if spans is False:  # one group (python scalars) inside a node: the NIC forms below would be discarded
        return inside, 0.0
    flat_nic_bytes = kind * frac_all * message_bytes
    flat = transfer_s(
        bytes_=flat_nic_bytes,
        bandwidth_gb_s=links.out_gb_s,
        steps=steps_all,
        latency_us=links.out_latency_us,
    )
    # Hierarchical: the intra-node reduce-scatter/all-gather pair moves (k-1)/k of S on NVLink, the inter-node
    # step moves (nodes-1)/nodes of S/k on each GPU's own NIC.
    intra = transfer_s(
        bytes_=kind * (k - 1) / k * message_bytes,
        bandwidth_gb_s=links.up_rate(k),
        steps=kind * _latency_steps(k),
        latency_us=links.up_latency_us,
    )
    hier_nic_bytes = kind * (nodes - 1) / nodes * message_bytes / k
    inter = transfer_s(
        bytes_=hier_nic_bytes,
        bandwidth_gb_s=links.out_gb_s,
        steps=kind * _latency_steps(nodes),
        latency_us=links.out_latency_us,
    )
    hier = intra + inter
    use_hier = hier < flat
    if spans is True:  # one group (python scalars) across nodes: the faster form
        return (hier, hier_nic_bytes) if use_hier else (flat, flat_nic_bytes)
    time = where(spans, where(use_hier, hier, flat), inside)
    nic = where(spans, where(use_hier, hier_nic_bytes, flat_nic_bytes), 0.0)
    return time, nic


class NodeDispatch(NamedTuple):
    """An all-to-all that sends one copy of a token per target node and per target GPU
    (``placed_all_to_all_s``): the message holds ``copies`` copies of each token (its routed experts, distinct
    ones of ``experts`` spread evenly over the group's GPUs), which lie on at most ``max_nodes`` nodes and at
    most ``max_gpus`` GPUs (None: any number)."""

    copies: int
    max_nodes: int | None
    max_gpus: int | None = None
    experts: int | None = None

    @classmethod
    def of(cls, moe: MoESpec) -> NodeDispatch:
        """A model's dispatch: top-k copies of its routed experts, under its node and GPU limits."""
        return cls(moe.top_k, moe.max_nodes_per_token, moe.max_gpus_per_token, moe.experts)


def node_copies(*, copies: int, nodes: Num, max_nodes: Num | None, experts: int | None = None) -> Num:
    """Expected distinct bins (nodes, or GPUs) that a token's ``c`` routed copies reach, of the ``G`` bins the
    group's experts are spread over evenly, limited to the router's ``M`` (node-limited routing, DeepSeek-V3
    §2.1.2): ``G' = min(M, G)`` bins within reach. ``G`` is the group's members over the members per bin, not
    rounded: a group of 128 on 72-GPU nodes spans 1.78 nodes' worth.

    A token's ``c`` experts are distinct, drawn without replacement from the ``E' = G' E / G`` experts in reach
    (``E`` the model's routed experts): a bin holds none of them with probability ``prod_{i<c} (E' - E/G - i) /
    (E' - i)`` (hypergeometric), so ``G' (1 - that)`` bins are reached; ``G'`` is at least ``ceil(c G / E)``, the bins
    ``c`` distinct experts need. Without ``experts`` each copy's bin is drawn on its own, ``G' (1 - (1 - 1/G')^c)``
    (with replacement: the limit of many experts per bin).

    Example: DeepSeek-V3 (256 experts), c = 8 over EP 64 on 8 nodes: 5.29 nodes without a limit, 3.63 with
    M = 4 (DeepSeek-V3: "each token will be sent to at most 4 nodes"); with replacement 5.25 and 3.60. Mixtral
    (8 experts) at EP 8, one expert a GPU, c = 2: 2 GPUs (1.875 with replacement).
    """
    g = maximum(nodes, 1.0)
    reach = g if max_nodes is None else minimum(g, 1.0 * max_nodes)
    if experts is None:
        return reach * (1.0 - _power(1.0 - 1.0 / reach, copies))
    per_bin = experts / g
    # c distinct experts fill at least ceil(c / per_bin) bins
    reach = maximum(reach, minimum(-(-copies // per_bin), g))
    pool = per_bin * reach
    missed: Num = 1.0
    for i in range(copies):
        missed = missed * maximum(pool - per_bin - i, 0.0) / (pool - i)
    return reach * (1.0 - missed)


def remote_node_copies(
    *, copies: int, remote_nodes: Num, remote_share: Num, max_nodes: int | None, experts: int | None
) -> Num:
    """Expected distinct other nodes that a token's ``c`` routed copies reach from a GPU whose node holds
    ``1 - remote_share`` of the group's experts, the rest spread evenly over ``remote_nodes`` nodes (a group
    astride node boundaries, whose sides differ: ``node_copies`` takes equal nodes). A node holding ``e`` of the
    ``E`` experts is missed with probability ``prod_{i<c} (E - e - i)/(E - i)``; at most ``max_nodes``.
    Example: EP 64 at stride 1 on 72-GPU racks, 8 + 56 members, 256 experts, c = 8: the other rack holds 224,
    reached with probability 1 - 2.6e-8: one copy a token crosses the NIC (equal nodes of 8 would count 4.6)."""
    r = maximum(remote_nodes, 1.0)
    share = remote_share / r
    missed: Num = 1.0
    if experts is None:
        missed = _power(1.0 - share, copies)
    else:
        e = experts * share
        for i in range(copies):
            missed = missed * maximum(experts - e - i, 0.0) / (experts - i)
    reached = r * (1.0 - missed)
    return reached if max_nodes is None else minimum(reached, 1.0 * max_nodes)


def _power(base: Num, exponent: int) -> Num:
    # base ** exponent by squaring: correctly rounded products only, so python floats and numpy arrays agree
    # bit for bit (numpy's vectorised pow and the C library's pow round differently)
    result: Num = 1.0
    while exponent > 0:
        if exponent & 1:
            result = result * base
        base = base * base
        exponent >>= 1
    return result


def placed_all_to_all_s(
    *,
    group_size: Num,
    stride: Num,
    message_bytes: Num,
    links: Links,
    skew: float = 1.0,
    per_node: NodeDispatch | None = None,
) -> tuple[Num, Num]:
    """Time and NIC bytes per GPU of an all-to-all of ``S`` bytes per GPU spread evenly over the group.

    With ``k`` members per node, ``(k-1)/N`` of ``S`` stays on NVLink and ``(N-k)/N`` crosses the NIC; both
    move at once and the slower sets the time, the NIC share multiplied by ``skew`` (the busiest NIC).
    Example: EP 64 at stride 1 on 8-GPU nodes, S = 100 MB: 87.5 MB on the NIC at 50 GB/s -> 1.75 ms.

    ``per_node`` (DeepSeek-V3 §3.2.2: a token goes over InfiniBand once to each target node, to the GPU of its
    own in-node index, which forwards it over NVLink to the experts there; DeepEP's internode kernels): of a
    token's ``c`` copies only one per distinct remote node crosses the NIC, ``node_copies / c`` of the
    per-copy NIC bytes; NVLink carries every copy whose expert is not on the GPU it lands on, ``(k-1)/k`` of
    ``S`` (the same node's copies and the forwarded ones). The combine runs the same way back. Example: the
    same EP 64 with DeepSeek-V3's c = 8 and M = 4: 3.63 / 8 x 87.5 = 39.7 MB on the NIC, 87.5 MB on NVLink.

    The scale-up link, too, carries one copy per distinct target GPU, not per expert (DeepEP's layout counts
    ``num_tokens_per_rank`` from ``is_token_in_rank``, and its combine sums a GPU's experts' outputs before
    sending one back): ``gpu_copies / c`` of that share, the expected distinct GPUs of ``c`` copies spread
    evenly over the ``R`` GPUs a token may reach (the group, at most ``k`` per reachable node, at most
    ``max_gpus``: device-limited routing, DeepSeek-V2 §2.2.1), drawn as ``node_copies`` draws nodes. A cap of
    ``max_gpus`` GPUs caps the nodes too.
    Example: the same EP 64 with M = 4: R = 32, 7.36 / 8 x 87.5 = 80.5 MB on NVLink; Qwen3-30B-A3B's c = 8 at
    EP 8 in one node with each token's experts on one GPU (``max_gpus`` 1): 1/8 of the per-expert bytes.
    """
    n = maximum(group_size, 1)
    k = _members(n, stride, links.gpus_per_node)
    if per_node is None:
        up_bytes = (k - 1) / n * message_bytes
        nic_bytes = (n - k) / n * message_bytes
    else:
        c, max_gpus, experts = per_node.copies, per_node.max_gpus, per_node.experts
        node_cap = per_node.max_nodes if max_gpus is None else min(max_gpus, per_node.max_nodes or max_gpus)
        reached = node_copies(copies=c, nodes=n / k, max_nodes=node_cap, experts=experts)
        gpu_cap: Num | None = None if per_node.max_nodes is None else per_node.max_nodes * k
        if max_gpus is not None:
            gpu_cap = float(max_gpus) if gpu_cap is None else minimum(gpu_cap, float(max_gpus))
        gpus = node_copies(copies=c, nodes=n, max_nodes=gpu_cap, experts=experts)
        up_bytes = gpus / c * (k - 1) / k * message_bytes
        nic_bytes = reached / c * (n - k) / n * message_bytes
        st = maximum(stride, 1)
        misaligned = _misaligned(n * st, links.gpus_per_node)
        if misaligned is not False:  # a group astride node boundaries: count the nodes it really reaches
            full = clip(links.gpus_per_node // st, 1, n)  # the members a whole node holds
            remote = remote_node_copies(
                copies=c, remote_nodes=-(-(n - k) // full), remote_share=(n - k) / n, max_nodes=node_cap,
                experts=experts,
            )  # fmt: skip
            nic_bytes = where(misaligned, remote / c * message_bytes, nic_bytes)
    up_s = transfer_s(
        bytes_=up_bytes,
        bandwidth_gb_s=links.up_rate(k),
        steps=where(k > 1, 1.0, 0.0),
        latency_us=links.up_latency_us,
    )
    out_s = transfer_s(
        bytes_=skew * nic_bytes,
        bandwidth_gb_s=links.out_gb_s,
        steps=where(n > k, 1.0, 0.0),
        latency_us=links.out_latency_us,
    )
    return maximum(up_s, out_s), nic_bytes


def placed_point_to_point_s(*, message_bytes: Num, crosses_nodes: Num, links: Links) -> Num:
    """One pipeline send on the NIC when the neighbouring stage is on another node, else on scale-up."""
    up = point_to_point_s(
        message_bytes=message_bytes, bandwidth_gb_s=links.up_rate(2), latency_us=links.up_latency_us
    )
    out = point_to_point_s(
        message_bytes=message_bytes, bandwidth_gb_s=links.out_gb_s, latency_us=links.out_latency_us
    )
    return where(crosses_nodes, out, up)
