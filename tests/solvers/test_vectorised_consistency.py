"""One code path for one layout or many: a batch of N equals N batches of one, bit for bit (issue 7).

A batch of one runs the step functions on python scalars and a batch of many on numpy arrays; both are
IEEE-754 double arithmetic with correctly rounded + - * /, so every field must be *exactly* equal.
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields

import numpy as np
import pytest

from solvers.engine import StepColumns, check_layouts, evaluate, evaluate_one, layout_rule_codes
from solvers.inputs import resolve
from solvers.layout import Layout
from solvers.specs import (
    RECOMPUTE_POLICIES,
    ClusterSpec,
    EffectsSpec,
    LayoutBatch,
    ModelSpec,
    MoESpec,
    OverlapSpec,
    TrainingSpec,
)
from tests.solvers.test_engine import DEEPSEEK_V3, LLAMA3_405B, catalog_cluster, training

DEEPSEEK_V3_MTP = resolve({"model": {"preset": "deepseek-v3"}}).model
MOE_240 = MoESpec(experts=240, top_k=3, expert_ffn_hidden=2048, shared_experts=1, moe_layers=58)
assert DEEPSEEK_V3.moe is not None
MOE_256 = DEEPSEEK_V3.moe

LAYOUT_FIELDS = tuple(f.name for f in fields(LayoutBatch))


def random_layouts(
    *, model: ModelSpec, cluster: ClusterSpec, tr: TrainingSpec, count: int, seed: int
) -> LayoutBatch:
    """``count`` random valid layouts: random draws over every layout field, filtered by the engine's rules."""
    rng = np.random.default_rng(seed)
    draws = 60 * count
    tp = rng.choice([1, 2, 4, 8, 16], draws)
    pp = rng.choice([1, 2, 4, 8, 16, 32], draws)
    cp = rng.choice([1, 1, 2, 4], draws)
    ep = (
        rng.choice([1, 2, 4, 8, 16, 32, 64], draws)
        if model.moe is not None
        else np.ones(draws, dtype=np.int64)
    )
    schedule = rng.integers(0, 5, draws)
    batch = LayoutBatch(
        tp=tp.astype(np.int64),
        pp=pp.astype(np.int64),
        cp=cp.astype(np.int64),
        ep=ep.astype(np.int64),
        dp=np.maximum(cluster.gpus // (tp * pp * cp), 1).astype(np.int64),
        microbatch_seqs=rng.choice([1, 2, 4], draws).astype(np.int64),
        schedule=schedule.astype(np.int64),
        virtual_stages=np.where(schedule == 2, rng.choice([1, 2, 4], draws), 1).astype(np.int64),
        sequence_parallel=rng.random(draws) < 0.5,
        zero_stage=rng.integers(0, 4, draws).astype(np.int64),
        fsdp_reshard_after_forward=rng.random(draws) < 0.5,
        expert_tp=np.where(rng.random(draws) < 0.5, 1, tp).astype(np.int64),
        recompute=rng.integers(0, len(RECOMPUTE_POLICIES), draws).astype(np.int64),
        grad_reduce_fp32=rng.random(draws) < 0.5,
    )
    ok, _ = check_layouts(model=model, cluster=cluster, training=tr, layouts=batch)
    index = np.flatnonzero(ok)[:count]
    assert index.size == count, f"only {index.size} valid layouts drawn"
    return LayoutBatch(**{name: getattr(batch, name)[index] for name in LAYOUT_FIELDS})


def one(batch: LayoutBatch, i: int) -> LayoutBatch:
    return LayoutBatch(**{name: getattr(batch, name)[i : i + 1] for name in LAYOUT_FIELDS})


def _scenarios() -> list[tuple[str, ModelSpec, ClusterSpec, TrainingSpec]]:
    llama_cluster = catalog_cluster("h100-sxm", 16384, "nvlink4", "roce-400g")
    llama_tr = training(
        llama_cluster,
        seq_len=8192,
        batch_tokens=16 * 1024 * 1024,
        overlap=OverlapSpec(tp=0.3, cp=0.5, pp=0.8, dp=0.9),
    )
    ds_cluster = catalog_cluster("h800-sxm", 2048, "nvlink4-h800", "infiniband-ndr")
    ds_tr = training(
        ds_cluster,
        seq_len=4096,
        batch_tokens=15360 * 4096,
        precision="fp8",
        overlap=OverlapSpec(pp=0.9, dp=0.9, ep=0.7),
    )
    unfused = dataclasses.replace(llama_tr, fused_attention=False)
    # Every step effect on, with non-trivial constants (solvers.effects): the same one-code-path rule holds.
    effects = EffectsSpec(
        matrix_shape=True,
        stragglers=True,
        moe_overhead=True,
        pipeline_ends=True,
        context_parallel=True,
        attention_core=True,
        attention_kernels=True,
        zero3_recompute_regather=True,
        zero3_per_tensor_collectives=True,
        fp8_scope=True,
        unfused_elementwise=True,
        expert_kernels=True,
        expert_tp_exchange=True,
        fp8_casts=True,
        shape_by_precision=True,
        fp8_tp_gather=True,
        shape_half_dim=100.0,
        jitter=0.01,
        moe_skew=0.2,
        fp8_rate_factor=0.65,
        attention_rate_factor=0.6,
        expert_kernel_s=2e-4,
        expert_kernel_padded_share=0.4,
    )
    return [
        ("llama3-405b-unfused", LLAMA3_405B, llama_cluster, unfused),
        ("deepseek-v3", DEEPSEEK_V3, ds_cluster, ds_tr),
        ("llama3-405b-fused", LLAMA3_405B, llama_cluster, llama_tr),
        ("llama3-405b-effects", LLAMA3_405B, llama_cluster, dataclasses.replace(llama_tr, effects=effects)),
        ("deepseek-v3-effects", DEEPSEEK_V3, ds_cluster, dataclasses.replace(ds_tr, effects=effects)),
        (
            "llama3-405b-effects-eager",
            LLAMA3_405B,
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects, fused_elementwise=False),
        ),
        (
            "deepseek-v3-effects-eager",
            DEEPSEEK_V3,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, fused_elementwise=False),
        ),
        (
            "llama3-405b-effects-cudnn",
            LLAMA3_405B,
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects, attention_kernel="cudnn"),
        ),
        (
            "llama3-405b-effects-even-split",
            LLAMA3_405B,
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects, pipeline_split="even"),
        ),
        # ZeRO-3's exchange in every microbatch (the random layouts draw every ZeRO stage and reshard flag)
        (
            "llama3-405b-effects-zero3-every-microbatch",
            LLAMA3_405B,
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects, zero3_exchange="every_microbatch"),
        ),
        (
            "deepseek-v3-effects-zero3-every-microbatch",
            DEEPSEEK_V3,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, zero3_exchange="every_microbatch"),
        ),
        # heads wider than hidden / heads (model.head_dim, as Qwen3 states): attention, memory and CP widths
        (
            "llama3-405b-effects-head-dim",
            dataclasses.replace(LLAMA3_405B, head_dim=192),
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects),
        ),
        # one InfiniBand copy per target node, node-limited routing (random EP degrees span 1 to 8 nodes)
        (
            "deepseek-v3-effects-per-node-dispatch",
            DEEPSEEK_V3_MTP,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, moe_dispatch="per_node"),
        ),
        (
            "deepseek-v3-effects-per-node-unlimited-capacity-padded",
            DEEPSEEK_V3,  # no node limit (the test spec's MoE leaves max_nodes_per_token unset)
            ds_cluster,
            dataclasses.replace(
                ds_tr,
                effects=effects,
                moe_dispatch="per_node",
                moe_capacity_factor=1.25,
                moe_pad_to_capacity=True,
            ),
        ),
        # top-k 3 of 240 experts: a power of (1 - 1/G') that NumPy's vectorised pow and the C library's round
        # differently (the engine multiplies by squaring instead)
        (
            "top3-of-240-experts-per-node-dispatch",
            dataclasses.replace(
                DEEPSEEK_V3,
                moe=MOE_240,
            ),
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, moe_dispatch="per_node"),
        ),
        # the preset's multi-token-prediction module (model.mtp_layers 1) on the last stage
        ("deepseek-v3-mtp-effects", DEEPSEEK_V3_MTP, ds_cluster, dataclasses.replace(ds_tr, effects=effects)),
        # the weights gathered (and kept) in FP8, across every ZeRO stage the random layouts draw
        (
            "deepseek-v3-effects-fp8-param-gather",
            DEEPSEEK_V3,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, fp8_param_gather=True),
        ),
        # a tied embedding gathers one BF16 matrix on one stage and two over several (random pp spans both)
        (
            "llama3-405b-tied-effects-fp8-param-gather",
            dataclasses.replace(LLAMA3_405B, tied_embeddings=True),
            llama_cluster,
            dataclasses.replace(llama_tr, effects=effects, precision="fp8", fp8_param_gather=True),
        ),
        # the shared expert beside the all-to-alls, on top of the EP overlap share
        (
            "deepseek-v3-mtp-effects-shared-expert-overlap",
            DEEPSEEK_V3_MTP,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, moe_shared_expert_overlap=True),
        ),
        (
            "deepseek-v3-mtp-effects-even-split",
            DEEPSEEK_V3_MTP,
            ds_cluster,
            dataclasses.replace(ds_tr, effects=effects, pipeline_split="even", precision="bf16"),
        ),
        # a pipeline flush of 3 microbatches, a device limit of 2 GPUs a token on a meshed scale-up
        (
            "deepseek-v3-effects-flushes-device-limit-mesh",
            dataclasses.replace(DEEPSEEK_V3, moe=dataclasses.replace(MOE_256, max_gpus_per_token=2)),
            dataclasses.replace(
                ds_cluster,
                scale_up=dataclasses.replace(ds_cluster.scale_up, mesh_gpus=ds_cluster.gpus_per_node),
            ),
            dataclasses.replace(
                ds_tr, effects=effects, moe_dispatch="per_node", pipeline_flush_microbatches=3
            ),
        ),
        # FSDP2's gathers every microbatch and a TP that leaves the vocabulary whole
        (
            "llama3-405b-effects-gathers-every-microbatch-whole-vocabulary",
            LLAMA3_405B,
            llama_cluster,
            dataclasses.replace(
                llama_tr, effects=effects, zero3_exchange="gather_every_microbatch", tp_vocab_parallel=False
            ),
        ),
    ]


@pytest.mark.parametrize("scenario", _scenarios(), ids=lambda s: s[0])
def test_thousand_layouts_batch_equals_batches_of_one_exactly(
    scenario: tuple[str, ModelSpec, ClusterSpec, TrainingSpec],
) -> None:
    _, model, cluster, tr = scenario
    layouts = random_layouts(model=model, cluster=cluster, tr=tr, count=1000, seed=7)
    batch = evaluate(model=model, cluster=cluster, training=tr, layouts=layouts)
    assert len(batch) == 1000
    for i in range(1000):
        single = evaluate(model=model, cluster=cluster, training=tr, layouts=one(layouts, i))
        row, reason = evaluate_one(model=model, cluster=cluster, training=tr, layout=Layout.of(layouts, i))
        assert reason is None and row is not None
        assert row == single.row(0)
        assert tuple(row) == tuple(f.name for f in fields(StepColumns))  # the report reads them in order
        for f in fields(StepColumns):
            a = getattr(batch, f.name)[i]
            b = getattr(single, f.name)[0]
            assert a == b, (i, f.name, a, b)
            assert getattr(batch, f.name).dtype == getattr(single, f.name).dtype
            assert type(row[f.name]) is type(b.item()), (f.name, row[f.name])


def test_the_zero3_exchange_switch_moves_only_zero3_layouts_with_several_microbatches() -> None:
    """The batch path reads ``training.zero3_exchange`` too: ZeRO-3 rows of several microbatches get a longer
    data-parallel exchange, every other row is the same bit for bit."""
    _, model, cluster, tr = _scenarios()[2]
    layouts = random_layouts(model=model, cluster=cluster, tr=tr, count=300, seed=11)
    once = evaluate(model=model, cluster=cluster, training=tr, layouts=layouts)
    every = evaluate(
        model=model,
        cluster=cluster,
        training=dataclasses.replace(tr, zero3_exchange="every_microbatch"),
        layouts=layouts,
    )
    seqs = tr.global_batch_tokens // tr.seq_len
    microbatches = np.maximum(seqs // (layouts.dp * layouts.microbatch_seqs), 1)
    moved = (layouts.zero_stage >= 3) & (microbatches > 1)
    assert moved.any() and (~moved).any()
    assert np.array_equal(every.comm_s_dp[~moved], once.comm_s_dp[~moved])
    assert np.array_equal(every.step_s[~moved], once.step_s[~moved])
    assert np.allclose(every.comm_s_dp[moved], microbatches[moved] * once.comm_s_dp[moved], rtol=1e-12)
    assert np.all(every.step_s[moved] >= once.step_s[moved])


def test_rule_codes_batch_equals_batches_of_one() -> None:
    _, model, cluster, tr = _scenarios()[1]
    rng = np.random.default_rng(3)
    n = 300
    tp = rng.choice([1, 2, 3, 8], n)
    layouts = LayoutBatch(
        tp=tp.astype(np.int64),
        pp=rng.choice([1, 2, 16], n).astype(np.int64),
        cp=np.ones(n, dtype=np.int64),
        ep=rng.choice([1, 3, 64], n).astype(np.int64),
        dp=rng.choice([16, 64, 128, 1024], n).astype(np.int64),
        microbatch_seqs=rng.choice([1, 7], n).astype(np.int64),
        schedule=rng.integers(0, 5, n).astype(np.int64),
        virtual_stages=rng.choice([1, 2], n).astype(np.int64),
        sequence_parallel=rng.random(n) < 0.5,
        zero_stage=rng.integers(0, 5, n).astype(np.int64),
        fsdp_reshard_after_forward=rng.random(n) < 0.5,
        expert_tp=tp.astype(np.int64),
        recompute=rng.integers(0, len(RECOMPUTE_POLICIES), n).astype(np.int64),
        grad_reduce_fp32=rng.random(n) < 0.5,
    )
    codes, _ = layout_rule_codes(model=model, cluster=cluster, training=tr, layouts=layouts)
    ok, messages = check_layouts(model=model, cluster=cluster, training=tr, layouts=layouts)
    assert (codes == 0).tolist() == ok.tolist()
    assert 0 < int(ok.sum()) < n
    for i in range(n):
        c1, _ = layout_rule_codes(model=model, cluster=cluster, training=tr, layouts=one(layouts, i))
        _ok1, m1 = check_layouts(model=model, cluster=cluster, training=tr, layouts=one(layouts, i))
        assert int(c1[0]) == int(codes[i]) and m1[0] == messages[i]
        row, reason = evaluate_one(model=model, cluster=cluster, training=tr, layout=Layout.of(layouts, i))
        assert reason == messages[i] and (row is None) == (reason is not None)
