"""Invariants of the ledger (issue 3 acceptance), over scalars and over arrays of layouts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers import checkpoint as ckpt
from solvers import reliability as rel
from solvers.ledger import compute_ledger
from solvers.ledger_defaults import GOODPUT_LEDGERS, INTERVAL_METHODS
from tests.profiles import examples
from tests.solvers.test_ledger import _numbers, make_inputs

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])

step_s = st.floats(0.05, 120.0)
busy = st.floats(0.0, 1.0)
gpus_per_node = st.sampled_from([1, 4, 8])
nodes = st.integers(1, 4096)
mttf_h = st.floats(1_000.0, 1e6)
restart_s = st.floats(0.0, 7200.0)
per_writer = st.floats(0.1, 100.0)
cap = st.floats(1.0, 5_000.0)
params = st.floats(1e8, 2e12)
interval_method = st.sampled_from(INTERVAL_METHODS)
ledger = st.sampled_from(GOODPUT_LEDGERS)
layouts = st.lists(st.tuples(step_s, busy), min_size=1, max_size=6)


@st.composite
def scenarios(draw):
    n_per = draw(gpus_per_node)
    return {
        "step_s": draw(step_s),
        "gpu_busy_fraction": draw(busy),
        "gpus_per_node": n_per,
        "gpus": n_per * draw(nodes),
        "gpu_mttf_h": draw(mttf_h),
        "nic_mttf_h": draw(mttf_h),
        "psu_mttf_h": draw(mttf_h),
        "restart_s": draw(restart_s),
        "storage_per_writer_gb_s": draw(per_writer),
        "storage_write_gb_s": draw(cap),
        "params": draw(params),
        "interval_method": draw(interval_method),
        "goodput_ledger": draw(ledger),
        "checkpoint_writers": draw(st.one_of(st.none(), st.integers(1, 64))),
        "total_tokens": draw(st.one_of(st.none(), st.floats(1e9, 1e14))),
        "job_days": draw(st.one_of(st.none(), st.floats(0.5, 400.0))),
        "region": draw(st.sampled_from(["quebec", "poland", "us-average", "singapore", None])),
    }


def _as_arrays(fields, layout_list):
    fields = dict(fields)
    fields["step_s"] = np.array([s for s, _ in layout_list])
    fields["gpu_busy_fraction"] = np.array([b for _, b in layout_list])
    return fields


@SETTINGS
@given(scenarios())
def test_goodput_in_0_1_and_everything_finite_scalar(fields):
    result = compute_ledger(make_inputs(**fields))
    assert 0.0 < result.reliability["goodput"] <= 1.0
    for section in (result.reliability, result.schedule, result.energy, result.carbon, result.tco):
        assert all(math.isfinite(x) for x in _numbers(section))


@SETTINGS
@given(scenarios(), layouts)
def test_goodput_in_0_1_and_everything_finite_arrays(fields, layout_list):
    result = compute_ledger(make_inputs(**_as_arrays(fields, layout_list)))
    goodput = np.asarray(result.reliability["goodput"])
    assert goodput.shape == (len(layout_list),)
    assert np.all((goodput > 0) & (goodput <= 1))
    for section in (result.reliability, result.schedule, result.energy, result.carbon, result.tco):
        assert all(math.isfinite(x) for x in _numbers(section))


@SETTINGS
@given(scenarios(), layouts, st.floats(1.0, 100.0))
def test_longer_mtbf_never_lowers_goodput(fields, layout_list, factor):
    """Every component lasts ``factor`` times longer; with the interval fixed, optimised by Young, or by
    Daly inside its domain (C < 2M: the published form jumps to T = M at C = 2M)."""
    for base in (make_inputs(**fields), make_inputs(**_as_arrays(fields, layout_list))):
        better = base._replace(
            gpu_mttf_h=base.gpu_mttf_h * factor,
            nic_mttf_h=base.nic_mttf_h * factor,
            psu_mttf_h=base.psu_mttf_h * factor,
        )
        before = compute_ledger(base).reliability
        after = compute_ledger(better).reliability
        interval_h = float(np.max(before["checkpoint_interval_h"]))
        fixed = base._replace(checkpoint_interval_h=interval_h)
        fixed_better = better._replace(checkpoint_interval_h=interval_h)
        assert np.all(
            compute_ledger(fixed_better).reliability["goodput"]
            >= compute_ledger(fixed).reliability["goodput"] * (1 - 1e-12)
        )
        if base.interval_method == "daly" and np.any(
            before["checkpoint_write_s"] >= 2 * before["cluster_mtbf_h"] * 3600
        ):
            continue
        assert np.all(after["goodput"] >= before["goodput"] * (1 - 1e-12))


@SETTINGS
@given(scenarios(), layouts, st.floats(1.0, 50.0))
def test_faster_storage_never_lengthens_the_optimal_intervals_total_loss(fields, layout_list, factor):
    """More bandwidth per writer and a higher cap shorten C; the lost hours at the (re-)optimised interval
    never grow, per layout. Daly is checked inside its domain C < 2M."""
    for base in (make_inputs(**fields), make_inputs(**_as_arrays(fields, layout_list))):
        faster = base._replace(
            storage_per_writer_gb_s=base.storage_per_writer_gb_s * factor,
            storage_write_gb_s=base.storage_write_gb_s * factor,
        )
        slow_result, fast_result = compute_ledger(base), compute_ledger(faster)
        slow, fast = slow_result.reliability, fast_result.reliability
        assert np.all(fast["checkpoint_write_s"] <= slow["checkpoint_write_s"])
        if base.interval_method == "daly" and np.any(
            slow["checkpoint_write_s"] >= 2 * slow["cluster_mtbf_h"] * 3600
        ):
            continue
        assert np.all(1 - fast["goodput"] <= (1 - slow["goodput"]) * (1 + 1e-12) + 1e-15)
        if base.total_tokens is not None:  # same useful work: the lost hours themselves never grow
            slow_lost = _lost(slow["lost_h"])
            fast_lost = _lost(fast["lost_h"])
            assert np.all(fast_lost <= slow_lost * (1 + 1e-9) + 1e-9)


@SETTINGS
@given(scenarios(), layouts, st.floats(0.01, 1.0))
def test_halving_electricity_price_never_raises_tco(fields, layout_list, price):
    for inputs in (make_inputs(**fields), make_inputs(**_as_arrays(fields, layout_list))):
        full = inputs._replace(electricity_usd_per_kwh=price)
        half = inputs._replace(electricity_usd_per_kwh=price / 2)
        assert np.all(compute_ledger(half).tco["total_usd"] <= compute_ledger(full).tco["total_usd"])


@SETTINGS
@given(scenarios(), layouts, st.floats(1.0, 1000.0), st.floats(1.01, 10.0))
def test_carbon_scales_with_grid_intensity(fields, layout_list, grid, factor):
    for inputs in (make_inputs(**fields), make_inputs(**_as_arrays(fields, layout_list))):
        low = compute_ledger(inputs._replace(grid_gco2_per_kwh=grid)).carbon
        high = compute_ledger(inputs._replace(grid_gco2_per_kwh=grid * factor)).carbon
        np.testing.assert_allclose(high["operational_kgco2e"], low["operational_kgco2e"] * factor, rtol=1e-9)
        assert np.all(high["total_kgco2e"] >= low["total_kgco2e"])


@SETTINGS
@given(st.floats(1.0, 3600.0), st.floats(60.0, 1e8), st.floats(0.0, 3600.0), st.floats(1.01, 100.0))
def test_young_optimum_loss_is_monotone_in_write_time_for_every_ledger_input(c, m, r, factor):
    """Directly on the functions: shorter writes at the Young optimum never lose more (expected_loss)."""
    slow = rel.goodput_shares(
        ledger="expected_loss",
        interval_s=ckpt.young_interval_s(checkpoint_write_s=c * factor, mtbf_s=m),
        checkpoint_write_s=c * factor,
        restart_s=r,
        mtbf_s=m,
    )
    fast = rel.goodput_shares(
        ledger="expected_loss",
        interval_s=ckpt.young_interval_s(checkpoint_write_s=c, mtbf_s=m),
        checkpoint_write_s=c,
        restart_s=r,
        mtbf_s=m,
    )
    assert fast.goodput >= slow.goodput * (1 - 1e-12)


def _lost(lost: Any) -> Any:
    """Hours lost to checkpoint writes, rework and restarts together."""
    return lost["checkpoint_writes"] + lost["rework"] + lost["restarts"]
