"""The context-parallel backward needs the other ranks' K and V again.

``exchanges.cp_exchange`` counts, per layer and microbatch, the K/V gathered in the forward, again in the
backward, and dK/dV reduce-scattered (3 units of ``(cp-1)/cp x kv_bytes``; 4 with full recompute). Neither
implementation a CP run uses keeps the gathered K/V for the backward, and the engine's activation memory does not
hold them either (``solvers.memory``: the attention's ``4h kv/a`` per token is the local ``s/cp`` tokens' K and V):

* all-gather CP (Llama 3 §3.3.2; Transformer Engine ``AttnFuncWithCPAndKVAllGather``): the backward runs
  ``_attn_cp_kv_allgather_bwd_gather`` (``gather_along_first_dim(k, ctx.cp_group)`` and ``v``) before it
  reduce-scatters dK and dV: forward AG + backward AG + backward RS = 3 units;
* ring (p2p) CP, Megatron-Core's default ``cp_comm_type`` (ring-flash-attention's backward): K/V travel the ring
  again (``kv_comm.send_recv_kv``) beside the dK/dV ring (``d_kv_comm.send_recv_kv``): 1 + 2 = 3 units.

So the exchange is 3 units a layer and microbatch (4 with full recompute), 1.5x what the engine counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solvers import solve
from solvers.document_text import load_yaml

ROOT = Path(__file__).resolve().parents[2]


def test_llama3_405b_131k_cp_bytes_count_the_backward_kv_gather() -> None:
    doc = load_yaml((ROOT / "examples" / "llama3-405b-16384-131k.yaml").read_text(encoding="utf-8"))
    report = solve(doc, ranges=False)
    lay = report["layout"]
    assert (lay["tp"], lay["cp"], lay["pp"], lay["microbatches"], lay["recompute"]) == (8, 16, 16, 16, "none")
    kv = 131072 * 2 * 1024 * 2 / 8  # b s x (K and V) x kv_heads*head_dim x BF16 / min(tp, kv_heads): 67.1 MB
    per_layer_mb = 3 * 15 / 16 * kv  # forward all-gather, backward all-gather and reduce-scatter: 189 MB
    expected = lay["microbatches"] * (126 / 16) * per_layer_mb  # 23.8 GB; observed 15.85 GB (2 units)
    assert report["traffic"]["bytes_per_gpu"]["cp"] == pytest.approx(expected, rel=1e-6)
