"""solvers.exchanges: bytes and seconds of the TP, CP, PP, DP and EP exchanges."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import exchanges
from solvers.collectives import Links

LINKS = Links(up_gb_s=400.0, up_latency_us=0.0, out_gb_s=50.0, out_latency_us=0.0, gpus_per_node=8)
A_GPT3 = 2048 * 12288 * 2.0  # one activation tensor of a 2,048-token microbatch in BF16


def test_tp_bytes_per_layer_microbatch_hpn() -> None:
    """HPN GPT-3: 4 all-reduces x 1.75 x 50.3 MB = 352 MB per layer per microbatch; full recompute adds 2."""
    x = exchanges.tp_exchange(
        tp=np.array([8, 8]),
        expert_tp=np.array([8, 8]),
        activation_bytes=np.array([A_GPT3] * 2),
        microbatches=np.array([1, 1]),
        layers_busiest=np.array([1, 1]),
        layers_mean=np.array([1.0, 1.0]),
        moe_share=0.0,
        full_recompute=np.array([False, True]),
        links=LINKS,
    )
    assert x.bytes_per_gpu[0] == pytest.approx(4 * 1.75 * A_GPT3)
    assert x.bytes_per_gpu[1] == pytest.approx(6 * 1.75 * A_GPT3)
    assert x.nic_bytes[0] == 0.0  # TP8 inside the node
    assert x.time_s[0] == pytest.approx(4 * 1.75 * A_GPT3 / 400e9)


def test_pp_messages() -> None:
    """HPN: 6.3 MB per message; mean over PP 8 stages, m = 16: 2 x 16 x 6.3 MB x 7/8."""
    msg = A_GPT3 / 8
    x = exchanges.pp_exchange(
        pp=np.array([8, 1]),
        message_bytes=np.array([msg, msg]),
        microbatches=np.array([16, 16]),
        sends_per_microbatch=np.array([1.0, 1.0]),
        crosses_nodes=np.array([True, True]),
        links=LINKS,
    )
    assert msg == pytest.approx(6.29e6, rel=1e-3)
    assert x.bytes_per_gpu[0] == pytest.approx(2 * 16 * msg * 7 / 8)
    assert x.time_s[0] == pytest.approx(2 * 16 * msg / 50e9)
    assert x.bytes_per_gpu[1] == 0.0 and x.time_s[1] == 0.0


def test_dp_shares_by_zero_stage() -> None:
    stages = np.array([0, 1, 2, 3, 3])
    reshard = np.array([False, False, False, True, False])
    grads = np.array([2.0, 2.0, 2.0, 2.0, 4.0])
    rs, ag = exchanges.dp_shares(
        zero_stage=stages, reshard_after_forward=reshard, grad_bytes=grads, weight_bytes=2.0
    )
    np.testing.assert_allclose(rs + ag, [4.0, 4.0, 4.0, 6.0, 6.0])  # 2 shares, 2, 2, 3 (reshard), 3 (FP32 RS)


def test_dp_exchange_pure_dp() -> None:
    """Seed 004 §5.3: 2 x 16,383/16,384 x 810 GB = 1.62 TB."""
    x = exchanges.dp_exchange(
        dense_params_mean=np.array([405e9]),
        dense_params_busiest=np.array([405e9]),
        dense_group=np.array([16384]),
        dense_stride=np.array([1]),
        expert_params_mean=None,
        expert_params_busiest=np.array([0.0]),
        expert_group=np.array([1]),
        expert_stride=np.array([1]),
        scatter_bytes=np.array([2.0]),
        gather_bytes=np.array([2.0]),
        buckets=np.array([126]),
        links=LINKS,
    )
    assert x.bytes_per_gpu[0] == pytest.approx(1.62e12, rel=1e-3)
    assert x.nic_bytes[0] == pytest.approx(
        2 * 2047 / 2048 * 810e9 / 8
    )  # hierarchical: S/8 across 2,048 nodes


def test_ep_exchange_dispatch_and_combine() -> None:
    """DeepSeek-V3: 4,096 tokens x 8 x 7,168 in FP8 = 235 MB dispatched over EP 64 -> 231 MB leaves the GPU."""
    dispatch = 4096 * 8 * 7168 * 1.0
    combine = 4096 * 8 * 7168 * 2.0
    x = exchanges.ep_exchange(
        ep=np.array([64]),
        stride=np.array([1]),
        dispatch_bytes=np.array([dispatch]),
        combine_bytes=np.array([combine]),
        microbatches=np.array([1]),
        moe_layers_busiest=np.array([1.0]),
        moe_layers_mean=np.array([1.0]),
        full_recompute=np.array([False]),
        links=LINKS,
    )
    assert dispatch * 63 / 64 == pytest.approx(231e6, rel=0.01)
    assert x.bytes_per_gpu[0] == pytest.approx(2 * 63 / 64 * (dispatch + combine))
    assert x.nic_bytes[0] == pytest.approx(2 * 56 / 64 * (dispatch + combine))


def test_cp_exchange_example() -> None:
    """Llama 3 at 131K, CP 16, TP 8: K and V are 67 MB per layer; 15/16 each way."""
    kv = 131072 * 2 * 1024 * 2 / 8
    x = exchanges.cp_exchange(
        cp=np.array([16]),
        tp=np.array([8]),
        kv_bytes=np.array([kv]),
        microbatches=np.array([1]),
        layers_busiest=np.array([1]),
        layers_mean=np.array([1.0]),
        full_recompute=np.array([False]),
        links=LINKS,
    )
    assert kv == pytest.approx(67.1e6, rel=1e-3)
    assert x.bytes_per_gpu[0] == pytest.approx(3 * 15 / 16 * kv)  # forward, backward re-gather, gradients


def test_hide_ratio_is_independent_of_hidden_size_and_scales_with_bandwidth() -> None:
    r1 = exchanges.moe_hide_ratio(expert_ffn_hidden=4096, bandwidth_gb_s=100.0, peak_tflops=989.4)
    r2 = exchanges.moe_hide_ratio(expert_ffn_hidden=4096, bandwidth_gb_s=200.0, peak_tflops=989.4)
    assert r2 == pytest.approx(2 * r1)
    assert exchanges.activation_element_bytes(precision="fp32") == 4.0
    assert exchanges.activation_element_bytes(precision="fp8") == 2.0


# DGX A100 links of the narayanan-2021 rows: 8 GPUs per node on NVLink, one 200 Gb/s HDR port per GPU
DGX_A100 = Links(up_gb_s=240.0, up_latency_us=1.0, out_gb_s=21.25, out_latency_us=5.0, gpus_per_node=8)
GPT3_175B_TENSORS = exchanges.layer_tensor_elements(
    hidden=12288.0, ffn=49152.0, q_share=1.0, kv_share=1.0, gated_mlp=False, tp=1
)


def _per_tensor_s(group: object, *, op_us: float | None = None, monkeypatch: pytest.MonkeyPatch) -> object:
    if op_us is not None:
        monkeypatch.setattr(exchanges, "EAGER_OP_OVERHEAD_US", (op_us, "test"))
    return exchanges.per_tensor_collectives_extra_s(
        tensor_elements=GPT3_175B_TENSORS,
        group=group,
        stride=1,
        gathers=3.0,
        weight_bytes=2.0,
        grad_bytes=2.0,
        layers=96,
        microbatches=1,
        links=DGX_A100,
    )


def test_per_tensor_host_copies_grow_with_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """One copy_ per rank per list-form collective: more ranks never less host time, exactly
    m x layers x tensors x (gathers + 1) x N x 4.5 us over the ring latency alone."""
    groups = np.array([2, 8, 16, 64, 128, 384, 768, 1536, 3072, 8192])
    total = np.asarray(_per_tensor_s(groups, monkeypatch=monkeypatch))
    ring_only = np.asarray(_per_tensor_s(groups, op_us=0.0, monkeypatch=monkeypatch))
    host = total - ring_only
    assert np.all(np.diff(host) > 0.0)
    assert np.all(np.diff(total) >= 0.0)
    assert host == pytest.approx(96 * 12 * 4 * groups * 4.5e-6)
    # one rank runs no collective and copies nothing
    assert float(np.asarray(_per_tensor_s(1, monkeypatch=monkeypatch))) == 0.0


def test_per_tensor_golden_gpt3_175b_1536(monkeypatch: pytest.MonkeyPatch) -> None:
    """narayanan-2021 Table 2, GPT-3 175B ZeRO-3 on 1,536 A100 (192 nodes, 3 gathers): ring latency beyond
    the bandwidth time 11.75 s per step, plus 96 x 12 x 4 x 1,536 x 4.5 us = 31.85 s of host copies."""
    assert float(np.asarray(_per_tensor_s(1536, monkeypatch=monkeypatch))) == pytest.approx(43.6047, abs=1e-3)
    assert float(np.asarray(_per_tensor_s(1536, op_us=0.0, monkeypatch=monkeypatch))) == pytest.approx(
        11.7542, abs=1e-3
    )
