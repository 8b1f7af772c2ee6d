"""Golden numbers of seed 004 ("The step-time budget"), each within 1% of the seed's own arithmetic.

Where the seed rounds a figure ("about 32 seconds", "about 1.2") the test compares with the unrounded value its
arithmetic gives and checks that the rounding matches. Conventions the seed leaves implicit, as chosen here:

* the 16M-token batch is 16 x 2^20 = 16,777,216 tokens (2,048 sequences of 8,192);
* "400 TFLOP/s" is the achieved rate of the seed's compute estimate (6 N tokens / GPUs, no attention term);
* traffic counts ring volumes with no latency term (the seed's "one division");
* the even 128-way split of §5.3 (parameters / (TP x PP)) is the mean over GPUs; with 126 layers over 16
  stages the busiest stage holds 8/126 of the layers, so the engine's time uses a 128-layer variant where
  mean and busiest coincide;
* the MegaScale-MoE hide ratio is ``R = 3 h_e B / F`` (gated expert forward over a BF16 dispatch) with
  h_e = 8,192 for the 9.9 / 1.2 pair; "about 1.0 for DeepSeekMoE on NVLink" is h_e = 2,048 on the H800's
  160 GB/s achieved NVLink (DeepSeek-V3 §3.2.2).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from solvers import collectives, exchanges, traffic
from solvers.engine import evaluate
from solvers.specs import ClusterSpec, LinkSpec, ModelSpec
from tests.solvers.test_engine import GPT3_175B, LLAMA3_405B, accelerator, make_layouts, training

BATCH_TOKENS = 16 * 1024 * 1024
NIC_GB_S = 50.0


def close(value: float, seed_value: float) -> bool:
    return abs(value - seed_value) <= 0.01 * abs(seed_value)


def _cluster(gpus: int, *, latency_us: float = 0.0) -> ClusterSpec:
    return ClusterSpec(
        accelerator=accelerator("h100-sxm"),
        gpus=gpus,
        gpus_per_node=8,
        scale_up=LinkSpec(450.0, latency_us),
        scale_out=LinkSpec(NIC_GB_S, latency_us),
    )


def _seed_compute_s() -> float:
    return 6 * 405e9 * BATCH_TOKENS / 16384 / 400e12


def test_seed004_5_3_pure_dp_bytes_1_62_tb() -> None:
    """Seed 004 §5.3: pure DP of Llama 3 405B on 16,384 GPUs sends 2 x 16,383/16,384 x 810 GB = 1.62 TB."""
    cl = _cluster(16384)
    c = evaluate(
        model=LLAMA3_405B,
        cluster=cl,
        training=training(cl, seq_len=8192, batch_tokens=BATCH_TOKENS),
        layouts=make_layouts(tp=1, dp=16384, zero_stage=0, sequence_parallel=False),
    )
    assert close(float(c.bytes_per_gpu_dp[0]), 1.62e12)


def test_seed004_5_3_pure_dp_time_32_s_against_compute_6_2_s() -> None:
    """Seed 004 §5.3: ~32 s on a 400 Gb/s NIC (1.62 TB / 50 GB/s = 32.4 s) against ~6.2 s of compute."""
    t = float(
        collectives.ring_all_reduce_s(
            group_size=np.array([16384]), message_bytes=810e9, bandwidth_gb_s=NIC_GB_S, latency_us=0.0
        )[0]
    )
    assert close(t, 32.4) and round(t) == 32
    assert close(_seed_compute_s(), 6.2)
    assert round(t / _seed_compute_s()) == 5  # "five times longer than computation"
    intensity = 6 * 405e9 * BATCH_TOKENS / 16384 / 1.62e12
    assert round(intensity, -2) == 1500  # "about 1,500 FLOP per byte"


def test_seed004_5_3_the_128_way_split() -> None:
    """Seed 004 §5.3: TP8 x PP16: 3.2e9 parameters (6.3 GB) per GPU; DP 12.6 GB/step (0.25 s); FP32
    reduce-scatter 19 GB (0.38 s); 4% and 6% of the 6.2 s compute; ~130,000 FLOP per byte."""
    per_gpu = 405e9 / 128
    assert round(per_gpu / 1e9, 1) == 3.2
    assert close(per_gpu * 2, 6.3e9)
    cl = _cluster(16384)
    tr = training(cl, seq_len=8192, batch_tokens=BATCH_TOKENS)
    bf16 = evaluate(
        model=LLAMA3_405B, cluster=cl, training=tr, layouts=make_layouts(tp=8, pp=16, dp=128, zero_stage=0)
    )
    fp32 = evaluate(
        model=LLAMA3_405B,
        cluster=cl,
        training=tr,
        layouts=make_layouts(tp=8, pp=16, dp=128, zero_stage=3, grad_reduce_fp32=True),
    )
    assert close(float(bf16.bytes_per_gpu_dp[0]), 12.6e9)
    assert close(float(fp32.bytes_per_gpu_dp[0]), 19e9)
    even = dataclasses.replace(LLAMA3_405B, layers=128)
    t_bf16 = float(
        evaluate(
            model=even, cluster=cl, training=tr, layouts=make_layouts(tp=8, pp=16, dp=128, zero_stage=0)
        ).comm_s_dp[0]
    )
    t_fp32 = float(
        evaluate(
            model=even,
            cluster=cl,
            training=tr,
            layouts=make_layouts(tp=8, pp=16, dp=128, zero_stage=3, grad_reduce_fp32=True),
        ).comm_s_dp[0]
    )
    assert close(t_bf16, 0.2511) and round(t_bf16, 2) == 0.25
    assert close(t_fp32, 0.3767) and round(t_fp32, 2) == 0.38
    assert round(100 * t_bf16 / _seed_compute_s()) == 4
    assert round(100 * t_fp32 / _seed_compute_s()) == 6
    assert round(6 * 405e9 * BATCH_TOKENS / 16384 / float(fp32.bytes_per_gpu_dp[0]), -4) == 130000


def _hpn() -> tuple[ClusterSpec, object]:
    cl = _cluster(32768)
    return cl, training(cl, seq_len=2048, batch_tokens=4096 * 2048)


def test_seed004_5_3_hpn_dp_message_5_5_gb() -> None:
    """Seed 004 §5.3 (HPN Table 3): GPT-3 175B at TP8/PP8/DP512: 175e9 / 64 x 2 bytes = 5.5 GB DP message."""
    cl, tr = _hpn()
    c = evaluate(
        model=GPT3_175B,
        cluster=cl,
        training=tr,  # type: ignore[arg-type]
        layouts=make_layouts(tp=8, pp=8, dp=512, zero_stage=0, sequence_parallel=False),
    )
    assert close(float(c.weights_bytes[0]), 5.5e9)  # ZeRO-0: the weights a GPU holds are its DP message


def test_seed004_5_3_hpn_pp_message_6_3_mb_and_tp_352_mb() -> None:
    """Seed 004 §5.3: PP message 2,048 x 12,288 x 2 / 8 = 6.3 MB; TP 352 MB per layer per 2K micro-batch."""
    cl, tr = _hpn()
    c = evaluate(
        model=GPT3_175B,
        cluster=cl,
        training=tr,  # type: ignore[arg-type]
        layouts=make_layouts(tp=8, pp=8, dp=512, zero_stage=0, sequence_parallel=False),
    )
    m = int(c.microbatches[0])
    assert m == 8
    pp_message = float(c.bytes_per_gpu_pp[0]) / (2 * m * 7 / 8)
    assert close(pp_message, 6.3e6)
    tp_per_layer_microbatch = float(c.bytes_per_gpu_tp[0]) / (m * 96 / 8)
    assert close(tp_per_layer_microbatch, 352e6)


def test_seed004_5_4_ring_factor_above_0_87() -> None:
    """Seed 004 §5.4: for N >= 8 the factor (N-1)/N is already above 0.87."""
    assert float(collectives.reduce_scatter_bytes(group_size=8, message_bytes=1.0)) >= 0.87


@pytest.mark.parametrize(
    ("h_e", "bandwidth_gb_s", "ratio"),
    [(8192, 400.0, 9.94), (8192, 50.0, 1.24), (2048, 160.0, 0.994)],
)
def test_seed004_5_5_megascale_moe_hide_ratio(h_e: int, bandwidth_gb_s: float, ratio: float) -> None:
    """Seed 004 §5.5: R ~ 9.9 on 400 GB/s NVLink, ~1.2 on a 50 GB/s NIC, ~1.0 for DeepSeekMoE's small experts."""
    r = exchanges.moe_hide_ratio(expert_ffn_hidden=h_e, bandwidth_gb_s=bandwidth_gb_s, peak_tflops=989.4)
    assert close(r, ratio)
    assert round(r, 1) == {9.94: 9.9, 1.24: 1.2, 0.994: 1.0}[ratio]


def test_seed004_5_6_burst_2_5_gb() -> None:
    """Seed 004 §5.6: a 50 ms burst at 400 Gb/s is 2.5 GB."""
    assert close(float(traffic.burst_bytes_from_duration(burst_s=0.05, line_rate_gb_s=NIC_GB_S)), 2.5e9)


def test_seed004_5_6_duty_cycle_and_burst_of_the_128_way_split() -> None:
    """Seed 004 §5.6: the NIC sends its DP share at line rate then goes quiet: duty = DP time / step."""
    cl = _cluster(16384)
    c = evaluate(
        model=LLAMA3_405B,
        cluster=cl,
        training=training(cl, seq_len=8192, batch_tokens=BATCH_TOKENS),
        layouts=make_layouts(tp=8, pp=16, dp=128, zero_stage=0),
    )
    nic_s = float(c.burst_bytes[0]) / (NIC_GB_S * 1e9)
    assert 0.0 < float(c.nic_duty_cycle[0]) < 1.0
    assert float(c.nic_duty_cycle[0]) >= nic_s / float(c.step_s[0]) - 1e-12


def test_seed004_5_7_batch_doubles() -> None:
    """Seed 004 §5.7: if the batch doubles, DP bytes are unchanged, TP and PP bytes double, the bubble halves."""
    cl = _cluster(16384)
    lay = make_layouts(tp=8, pp=16, dp=128)
    one = evaluate(
        model=LLAMA3_405B,
        cluster=cl,
        training=training(cl, seq_len=8192, batch_tokens=BATCH_TOKENS),
        layouts=lay,
    )
    two = evaluate(
        model=LLAMA3_405B,
        cluster=cl,
        training=training(cl, seq_len=8192, batch_tokens=2 * BATCH_TOKENS),
        layouts=lay,
    )
    assert close(float(two.bytes_per_gpu_dp[0]), float(one.bytes_per_gpu_dp[0]))
    assert close(float(two.bytes_per_gpu_tp[0]), 2 * float(one.bytes_per_gpu_tp[0]))
    assert close(float(two.bytes_per_gpu_pp[0]), 2 * float(one.bytes_per_gpu_pp[0]))
    ratio_one = float(one.bubble_s[0] / one.compute_s[0])
    ratio_two = float(two.bubble_s[0] / two.compute_s[0])
    assert close(ratio_two, ratio_one / 2)  # (p-1)/m halves


def test_seed004_5_7_pp_16_to_8_at_fixed_dp() -> None:
    """Seed 004 §5.7: PP 16 -> 8 at fixed DP and batch per replica: twice the TP bytes per GPU, about half the
    bubble ((8-1)/m against (16-1)/m)."""
    model = dataclasses.replace(LLAMA3_405B, layers=128)
    big = _cluster(16384)
    small = _cluster(8192)
    tr_big = training(big, seq_len=8192, batch_tokens=BATCH_TOKENS)
    tr_small = training(small, seq_len=8192, batch_tokens=BATCH_TOKENS)
    p16 = evaluate(model=model, cluster=big, training=tr_big, layouts=make_layouts(tp=8, pp=16, dp=128))
    p8 = evaluate(model=model, cluster=small, training=tr_small, layouts=make_layouts(tp=8, pp=8, dp=128))
    assert close(float(p8.bytes_per_gpu_tp[0]), 2 * float(p16.bytes_per_gpu_tp[0]))
    assert close(float(p8.bubble_s[0] / p8.compute_s[0]) / float(p16.bubble_s[0] / p16.compute_s[0]), 7 / 15)


def test_seed004_llama3_dp_doubles_from_8192_to_16384() -> None:
    """Seed 004 §5.4: doubling 8,192 -> 16,384 GPUs at TP8/PP16 doubles DP from 64 to 128; DP bytes barely move
    (2 x 63/64 against 2 x 127/128) and the communication share t_comm / (t_compute + t_comm) rises."""
    rows = []
    for gpus, dp in ((8192, 64), (16384, 128)):
        cl = _cluster(gpus, latency_us=1.0)
        c = evaluate(
            model=LLAMA3_405B,
            cluster=cl,
            training=training(cl, seq_len=8192, batch_tokens=BATCH_TOKENS),
            layouts=make_layouts(tp=8, pp=16, dp=dp),
        )
        rows.append(c)
    assert close(
        float(rows[1].bytes_per_gpu_dp[0]) / float(rows[0].bytes_per_gpu_dp[0]), (127 / 128) / (63 / 64)
    )
    comm = [float((c.comm_s_dp + c.comm_s_tp + c.comm_s_pp)[0]) for c in rows]
    share = [t / (t + float(c.compute_s[0])) for t, c in zip(comm, rows, strict=True)]
    assert share[1] > share[0]


def test_seed003_model_check_is_independent_of_modelspec_layers() -> None:
    """The 128-layer variant used above changes no parameter count (guards the convention)."""
    assert dataclasses.replace(LLAMA3_405B, layers=128).params == LLAMA3_405B.params
    assert isinstance(LLAMA3_405B, ModelSpec)
