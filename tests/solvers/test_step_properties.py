"""Invariants of the step engine (hypothesis): physics that must hold for every valid layout.

* more bandwidth (scale-up or scale-out) never makes a step slower;
* at a fixed global batch, adding GPUs (a wider DP) never lowers the communication share
  ``t_comm / (t_compute + t_comm)`` (seed 004 §5.4, strong scaling);
* the bubble fraction falls as microbatches grow, and interleaving beats 1F1B at equal p and m;
* memory per GPU never rises with a higher ZeRO stage;
* recomputation never makes a step faster (none <= selective <= full, none <= per_op <= full), with fused
  attention or without;
* no NaN or infinity in any column.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import fields

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solvers import pipeline
from solvers.engine import StepColumns, check_layouts, evaluate
from solvers.specs import RECOMPUTE_CODE, SCHEDULE_CODE, LayoutBatch, LinkSpec, OverlapSpec
from tests.profiles import examples
from tests.solvers.test_engine import DEEPSEEK_V3, LLAMA3_405B, catalog_cluster, training
from tests.solvers.test_vectorised_consistency import LAYOUT_FIELDS, one, random_layouts

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

_LLAMA_CLUSTER = catalog_cluster("h100-sxm", 16384, "nvlink4", "roce-400g")
_LLAMA_TR = training(_LLAMA_CLUSTER, seq_len=8192, batch_tokens=16 * 1024 * 1024)
_DS_CLUSTER = catalog_cluster("h800-sxm", 2048, "nvlink4-h800", "infiniband-ndr")
_DS_TR = training(_DS_CLUSTER, seq_len=4096, batch_tokens=15360 * 4096, precision="fp8")
_SCENARIOS = {
    "llama": (
        LLAMA3_405B,
        _LLAMA_CLUSTER,
        _LLAMA_TR,
        random_layouts(model=LLAMA3_405B, cluster=_LLAMA_CLUSTER, tr=_LLAMA_TR, count=400, seed=11),
    ),
    "deepseek": (
        DEEPSEEK_V3,
        _DS_CLUSTER,
        _DS_TR,
        random_layouts(model=DEEPSEEK_V3, cluster=_DS_CLUSTER, tr=_DS_TR, count=400, seed=12),
    ),
}
scenario_names = st.sampled_from(sorted(_SCENARIOS))
overlaps = st.builds(
    OverlapSpec,
    tp=st.floats(0, 1),
    cp=st.floats(0, 1),
    pp=st.floats(0, 1),
    dp=st.floats(0, 1),
    ep=st.floats(0, 1),
)


def _comm(c: StepColumns) -> np.ndarray:
    return c.comm_s_tp + c.comm_s_cp + c.comm_s_pp + c.comm_s_dp + c.comm_s_ep


@SETTINGS
@given(
    name=scenario_names,
    index=st.integers(0, 399),
    up=st.floats(1.0, 8.0),
    out=st.floats(1.0, 8.0),
    overlap=overlaps,
)
def test_more_bandwidth_never_slows_a_step(
    name: str, index: int, up: float, out: float, overlap: OverlapSpec
) -> None:
    model, cluster, tr, layouts = _SCENARIOS[name]
    tr = dataclasses.replace(tr, overlap=overlap)
    lay = one(layouts, index)
    base = evaluate(model=model, cluster=cluster, training=tr, layouts=lay)
    faster = dataclasses.replace(
        cluster,
        scale_up=LinkSpec(cluster.scale_up.bandwidth_gb_s * up, cluster.scale_up.latency_us),
        scale_out=LinkSpec(
            cluster.scale_out.bandwidth_gb_s * out,
            cluster.scale_out.latency_us,
            cluster.scale_out.oversubscription,
        ),
    )
    quick = evaluate(model=model, cluster=faster, training=tr, layouts=lay)
    assert quick.step_s[0] <= base.step_s[0] * (1 + 1e-12)
    assert quick.mfu[0] >= base.mfu[0] * (1 - 1e-12)


@SETTINGS
@given(name=scenario_names, index=st.integers(0, 399), factor=st.sampled_from([2, 4, 8]))
def test_adding_gpus_at_fixed_batch_never_lowers_the_communication_share(
    name: str, index: int, factor: int
) -> None:
    model, cluster, tr, layouts = _SCENARIOS[name]
    lay = one(layouts, index)
    wide = LayoutBatch(
        **{k: getattr(lay, k) * factor if k == "dp" else getattr(lay, k) for k in LAYOUT_FIELDS}
    )
    bigger = dataclasses.replace(cluster, gpus=cluster.gpus * factor)
    ok, _ = check_layouts(model=model, cluster=bigger, training=tr, layouts=wide)
    assume(bool(ok[0]))
    small = evaluate(model=model, cluster=cluster, training=tr, layouts=lay)
    large = evaluate(model=model, cluster=bigger, training=tr, layouts=wide)
    share_small = _comm(small)[0] / (_comm(small)[0] + small.compute_s[0])
    share_large = _comm(large)[0] / (_comm(large)[0] + large.compute_s[0])
    assert share_large >= share_small * (1 - 1e-9)
    assert large.compute_s[0] <= small.compute_s[0] * (1 + 1e-12)


@SETTINGS
@given(
    schedule=st.sampled_from(list(SCHEDULE_CODE)),
    p=st.integers(1, 64),
    v=st.integers(1, 8),
    m1=st.integers(1, 512),
    extra=st.integers(1, 512),
    recompute_share=st.sampled_from([0.0, 0.02, 1.0]),
)
def test_bubble_fraction_falls_as_microbatches_grow(
    schedule: str, p: int, v: int, m1: int, extra: int, recompute_share: float
) -> None:
    code = np.array([SCHEDULE_CODE[schedule]])
    vv = np.array([v if schedule == "interleaved" else 1])
    fractions = []
    for m in (m1, m1 + extra):
        t_mb = 0.37
        bubble = pipeline.bubble_s(
            schedule=code,
            pp=np.array([p]),
            microbatches=np.array([m]),
            virtual_stages=vv,
            microbatch_s=np.array([t_mb]),
            recompute_forward_share=recompute_share,
        )
        fractions.append(float(pipeline.bubble_fraction(bubble_s=bubble, compute_s=np.array([m * t_mb]))[0]))
    assert fractions[1] <= fractions[0] + 1e-15
    assert 0.0 <= fractions[1] < 1.0


@SETTINGS
@given(p=st.integers(2, 64), v=st.integers(2, 8), m=st.integers(1, 512))
def test_interleaved_bubble_is_below_1f1b(p: int, v: int, m: int) -> None:
    args = {"pp": np.array([p]), "microbatches": np.array([m]), "microbatch_s": np.array([1.0])}
    one_f = pipeline.bubble_s(
        schedule=np.array([SCHEDULE_CODE["1f1b"]]), virtual_stages=np.array([1]), **args
    )
    inter = pipeline.bubble_s(
        schedule=np.array([SCHEDULE_CODE["interleaved"]]), virtual_stages=np.array([v]), **args
    )
    f1 = pipeline.bubble_fraction(bubble_s=one_f, compute_s=np.array([float(m)]))
    fi = pipeline.bubble_fraction(bubble_s=inter, compute_s=np.array([float(m)]))
    assert fi[0] < f1[0]
    assert abs(f1[0] - (p - 1) / (m + p - 1)) < 1e-15


@SETTINGS
@given(name=scenario_names, overlap=overlaps, fused=st.sampled_from([True, False, None]))
def test_recompute_never_makes_a_step_faster(name: str, overlap: OverlapSpec, fused: bool | None) -> None:
    """Each policy only adds work: selective re-runs the attention core, full the whole forward pass, and per_op
    (dense models) a part of it, between none and full; the score matrix moves through HBM (or not) by the
    kernel, not by the policy. All 400 layouts at once."""
    model, cluster, tr, layouts = _SCENARIOS[name]
    tr = dataclasses.replace(tr, overlap=overlap, fused_attention=fused)
    orders = [("none", "selective", "full")]
    if model.moe is None:
        orders.append(("none", "per_op", "full"))
    for order in orders:
        columns = []
        for policy_name in order:
            code = RECOMPUTE_CODE[policy_name]
            policy = dataclasses.replace(layouts, recompute=np.full_like(layouts.recompute, code))
            columns.append(evaluate(model=model, cluster=cluster, training=tr, layouts=policy))
        for cheaper, dearer in itertools.pairwise(columns):
            assert (dearer.compute_s >= cheaper.compute_s * (1 - 1e-12)).all()
            assert (dearer.step_s >= cheaper.step_s * (1 - 1e-12)).all()
            assert (dearer.hfu * dearer.step_s >= cheaper.hfu * cheaper.step_s * (1 - 1e-12)).all()


@SETTINGS
@given(name=scenario_names, index=st.integers(0, 399))
def test_memory_falls_with_higher_zero_stage(name: str, index: int) -> None:
    model, cluster, tr, layouts = _SCENARIOS[name]
    lay = one(layouts, index)
    totals = []
    for stage in range(4):
        staged = LayoutBatch(
            **{k: np.array([stage]) if k == "zero_stage" else getattr(lay, k) for k in LAYOUT_FIELDS}
        )
        c = evaluate(model=model, cluster=cluster, training=tr, layouts=staged)
        totals.append((c.weights_bytes[0], c.grads_bytes[0], c.optimizer_bytes[0], c.total_bytes[0]))
    for lower, higher in itertools.pairwise(totals):
        assert all(h <= low * (1 + 1e-12) for h, low in zip(higher, lower, strict=True))


@SETTINGS
@given(
    name=scenario_names,
    overlap=overlaps,
    oversubscription=st.floats(1.0, 16.0),
    latency=st.floats(0.0, 50.0),
    efficiency=st.floats(0.05, 1.0),
    fused=st.sampled_from([None, True, False]),
)
def test_no_nan_or_infinity(
    name: str,
    overlap: OverlapSpec,
    oversubscription: float,
    latency: float,
    efficiency: float,
    fused: bool | None,
) -> None:
    model, cluster, tr, layouts = _SCENARIOS[name]
    cluster = dataclasses.replace(
        cluster, scale_out=LinkSpec(cluster.scale_out.bandwidth_gb_s, latency, oversubscription)
    )
    tr = dataclasses.replace(tr, overlap=overlap, compute_efficiency=efficiency, fused_attention=fused)
    c = evaluate(model=model, cluster=cluster, training=tr, layouts=layouts)
    for f in fields(StepColumns):
        column = getattr(c, f.name)
        if column.dtype.kind == "f":
            assert np.isfinite(column).all(), f.name
            assert (column >= 0).all(), f.name
    assert ((c.mfu > 0) & (c.mfu < 1)).all()
    # All hidden exchanges together never exceed the compute they hide behind (seed 004 §5.4).
    hidden = sum(
        getattr(c, f"comm_s_{d}") - getattr(c, f"exposed_comm_s_{d}") for d in ("tp", "cp", "pp", "dp", "ep")
    )
    assert (hidden <= c.compute_s * (1 + 1e-9)).all()
    assert ((c.nic_duty_cycle >= 0) & (c.nic_duty_cycle <= 1)).all()
    assert ((c.bubble_fraction >= 0) & (c.bubble_fraction < 1)).all()
