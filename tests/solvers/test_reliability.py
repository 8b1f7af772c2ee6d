from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from solvers import reliability as rel
from solvers.errors import ScenarioError

DGX: dict[str, Any] = {
    "gpus_per_node": 8,
    "gpu_mttf_h": 50_000.0,
    "nics_per_node": 8,
    "nic_mttf_h": 150_000.0,
    "psus_per_node": 2,
    "psu_mttf_h": 100_000.0,
}


def test_node_mtbf_adds_failure_rates_of_components_in_series():
    base = rel.node_mtbf_h(**DGX)
    with_switch = rel.node_mtbf_h(**DGX, other_mttf_h=(200_000.0, 300_000.0))
    assert 1 / with_switch == pytest.approx(1 / base + 1 / 200_000 + 1 / 300_000)


def test_node_without_nics_or_psus_is_the_gpus_alone():
    only_gpus = rel.node_mtbf_h(**{**DGX, "nics_per_node": 0, "psus_per_node": 0})
    assert only_gpus == pytest.approx(50_000 / 8)


def test_cluster_mtbf_divides_by_nodes_and_gpu_only_by_gpus():
    assert rel.cluster_mtbf_h(node_mtbf_h=4000.0, nodes=16) == 250.0
    assert rel.gpu_only_cluster_mtbf_h(gpu_mttf_h=50_000.0, gpus=1000) == 50.0


def test_expected_failures_is_time_over_mtbf():
    assert rel.expected_failures(wall_clock_h=720.0, cluster_mtbf_h=36.0) == 20.0


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("gpu_mttf_h", 0.0, "cluster.reliability.gpu_mttf_h"),
        ("nic_mttf_h", -1.0, "cluster.reliability.nic_mttf_h"),
        ("psu_mttf_h", math.inf, "cluster.reliability.psu_mttf_h"),
        ("psus_per_node", -1, "cluster.reliability.psus_per_node"),
    ],
)
def test_bad_component_figures_name_their_field(field, value, path):
    with pytest.raises(ScenarioError) as info:
        rel.node_mtbf_h(**{**DGX, field: value})
    assert info.value.first.path == path


def test_bad_other_mttf_names_its_index():
    with pytest.raises(ScenarioError) as info:
        rel.node_mtbf_h(**DGX, other_mttf_h=(1e5, 0.0))
    assert info.value.first.path == "cluster.reliability.other_mttf_h[1]"


@pytest.mark.parametrize("ledger", ["expected_loss", "sec5_writes_half_interval", "mlsysim_goodput_ratio"])
def test_shares_sum_to_one(ledger):
    shares = rel.goodput_shares(
        ledger=ledger, interval_s=7200.0, checkpoint_write_s=120.0, restart_s=600.0, mtbf_s=20 * 3600.0
    )
    total = shares.goodput + shares.checkpoint_writes + shares.rework + shares.restarts
    assert total == pytest.approx(1.0, abs=1e-12)
    assert 0 < shares.goodput < 1


def test_expected_loss_tends_to_the_first_order_ledger_when_failures_are_rare():
    """For T, C, R << M the renewal model's segment lasts (T + C)(1 + (T + C)/(2M) + R/M), so it loses
    C/(T + C) + T/(T + C) x ((T + C)/(2M) + R/M) to first order in 1/M."""
    t, c, r, m = 3600.0, 30.0, 300.0, 1e7
    shares = rel.goodput_shares(
        ledger="expected_loss", interval_s=t, checkpoint_write_s=c, restart_s=r, mtbf_s=m
    )
    first_order = c / (t + c) + t / (t + c) * ((t + c) / (2 * m) + r / m)
    assert 1 - shares.goodput == pytest.approx(first_order, rel=1e-3)
    assert shares.rework == pytest.approx((t + c) / (2 * m), rel=1e-3)
    assert shares.restarts == pytest.approx(r / m, rel=1e-3)


def test_expected_loss_matches_a_monte_carlo_run():
    """Simulate segments of T + C retried after exponential failures with interruptible restarts R."""
    rng = np.random.default_rng(7)
    t, c, r, m = 2.0, 0.25, 0.5, 3.0
    segments = 40_000
    total = writes = 0.0
    for _ in range(segments):
        while True:
            failure_in = rng.exponential(m)
            if failure_in >= t + c:
                total += t + c
                writes += c
                break
            total += failure_in
            while True:  # restart until one completes
                failure_in = rng.exponential(m)
                if failure_in >= r:
                    total += r
                    break
                total += failure_in
    shares = rel.goodput_shares(
        ledger="expected_loss", interval_s=t, checkpoint_write_s=c, restart_s=r, mtbf_s=m
    )
    assert shares.goodput == pytest.approx(segments * t / total, rel=0.02)
    assert shares.checkpoint_writes == pytest.approx(writes / total, rel=0.02)


def test_first_order_ledgers_are_floored_and_flagged():
    shares = rel.goodput_shares(
        ledger="sec5_writes_half_interval",
        interval_s=3600.0,
        checkpoint_write_s=3600.0,
        restart_s=0.0,
        mtbf_s=1800.0,
    )
    assert shares.floored
    assert shares.goodput == rel.GOODPUT_FLOOR
    assert shares.goodput + shares.checkpoint_writes + shares.rework + shares.restarts == pytest.approx(1.0)


def test_hopeless_cluster_gives_tiny_finite_goodput():
    shares = rel.goodput_shares(
        ledger="expected_loss", interval_s=1e6, checkpoint_write_s=1e6, restart_s=1e6, mtbf_s=1.0
    )
    assert 0 < shares.goodput < 1e-6
    assert all(math.isfinite(x) for x in (shares.checkpoint_writes, shares.rework, shares.restarts))


def test_unknown_ledger_is_an_error_naming_the_field():
    with pytest.raises(ScenarioError) as info:
        rel.goodput_shares(ledger="magic", interval_s=1.0, checkpoint_write_s=1.0, restart_s=1.0, mtbf_s=1.0)
    assert info.value.first.path == "training.checkpoint.goodput_ledger"
