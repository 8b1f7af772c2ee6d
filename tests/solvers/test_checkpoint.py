from __future__ import annotations

import numpy as np
import pytest

from solvers import checkpoint as ckpt
from solvers.errors import ScenarioError


@pytest.mark.parametrize(
    ("optimizer", "precision", "expected"),
    [
        ("adam", "bf16", 14.0),  # 2 + 4 master + 4 + 4
        ("adam", "fp16", 14.0),
        ("adam", "fp8", 14.0),  # fp8 copies are transient; bf16 weights + fp32 master and moments are saved
        ("adam", "fp32", 12.0),  # the fp32 weights are the master copy
        ("sgd", "bf16", 10.0),  # 2 + 4 master + 4 momentum
        ("sgd", "fp32", 8.0),
    ],
)
def test_bytes_per_param(optimizer, precision, expected):
    assert ckpt.checkpoint_bytes_per_param(optimizer=optimizer, precision=precision) == expected


def test_unknown_optimizer_and_precision_name_their_fields():
    with pytest.raises(ScenarioError) as info:
        ckpt.checkpoint_bytes_per_param(optimizer="lion", precision="bf16")
    assert info.value.first.path == "training.optimizer"
    with pytest.raises(ScenarioError) as info:
        ckpt.checkpoint_bytes_per_param(optimizer="adam", precision="int4")
    assert info.value.first.path == "training.precision"


def test_write_time_uses_the_slower_of_writers_and_the_cap():
    size = 1e12
    assert (
        ckpt.checkpoint_write_s(checkpoint_bytes=size, writers=2, per_writer_gb_s=5.0, storage_cap_gb_s=100.0)
        == 100.0
    )
    assert (
        ckpt.checkpoint_write_s(
            checkpoint_bytes=size, writers=100, per_writer_gb_s=5.0, storage_cap_gb_s=100.0
        )
        == 10.0
    )


def test_zero_writers_is_an_error():
    with pytest.raises(ScenarioError) as info:
        ckpt.checkpoint_write_s(checkpoint_bytes=1.0, writers=0, per_writer_gb_s=1.0, storage_cap_gb_s=1.0)
    assert info.value.first.path == "training.checkpoint.writers"


def test_default_writers_is_one_per_node():
    assert ckpt.default_checkpoint_writers(nodes=2048) == 2048
    assert ckpt.default_checkpoint_writers(nodes=0) == 1


def test_daly_is_close_to_young_when_writes_are_short_and_below_it_otherwise():
    m = 100 * 3600.0
    young = ckpt.young_interval_s(checkpoint_write_s=10.0, mtbf_s=m)
    daly = ckpt.daly_interval_s(checkpoint_write_s=10.0, mtbf_s=m)
    assert daly == pytest.approx(young, rel=0.01)
    # C = M / 2: d = 1/4 -> T = M (1 + 1/6 + 1/36) - M/2 = 0.6944 M; Young gives M
    assert ckpt.daly_interval_s(checkpoint_write_s=m / 2, mtbf_s=m) == pytest.approx(
        m * (1 + 1 / 6 + 1 / 36 - 0.5)
    )


def test_daly_uses_the_mtbf_when_the_write_exceeds_twice_the_mtbf():
    assert ckpt.daly_interval_s(checkpoint_write_s=300.0, mtbf_s=100.0) == 100.0
    assert ckpt.optimal_interval_s(method="daly", checkpoint_write_s=300.0, mtbf_s=100.0) == 100.0


def test_interval_functions_broadcast_and_agree_with_the_scalar_path():
    c = np.array([10.0, 100.0, 1000.0])
    m = np.array([[1e4], [1e6]])
    for method, vector in (("young", ckpt.young_interval_s), ("daly", ckpt.daly_interval_s)):
        grid = vector(checkpoint_write_s=c, mtbf_s=m)
        assert grid.shape == (2, 3)
        for i in range(2):
            for j in range(3):
                scalar = ckpt.optimal_interval_s(method=method, checkpoint_write_s=c[j], mtbf_s=m[i, 0])
                assert grid[i, j] == pytest.approx(scalar)


def test_unknown_interval_method_names_its_field():
    with pytest.raises(ScenarioError) as info:
        ckpt.optimal_interval_s(method="guess", checkpoint_write_s=1.0, mtbf_s=1.0)
    assert info.value.first.path == "training.checkpoint.interval_method"


@pytest.mark.parametrize("ratio", [1e-9, 1e-5, 1e-3, 0.05, 0.5, 1.0, 3.0, 20.0])
def test_exact_interval_minimises_the_expected_loss(ratio):
    """The exact method is the minimum of M (e^((T+C)/M) - 1) / T, checked against a dense grid."""
    m = 3600.0
    c = ratio * m
    exact = ckpt.exact_interval_s(checkpoint_write_s=c, mtbf_s=m)
    grid = exact * np.linspace(0.8, 1.2, 40_001)
    cost = np.expm1((grid + c) / m) / grid
    assert grid[np.argmin(cost)] == pytest.approx(exact, rel=1e-4)
    assert ckpt.optimal_interval_s(method="exact", checkpoint_write_s=c, mtbf_s=m) == pytest.approx(
        exact, rel=1e-12
    )


def test_exact_interval_tends_to_young_for_short_writes_and_to_m_for_long_ones():
    m = 1e6
    assert ckpt.exact_interval_s(checkpoint_write_s=1e-3, mtbf_s=m) == pytest.approx(
        ckpt.young_interval_s(checkpoint_write_s=1e-3, mtbf_s=m), rel=1e-4
    )
    # Daly's series is close to the exact optimum where it is meant to be used
    assert ckpt.exact_interval_s(checkpoint_write_s=141.2, mtbf_s=241_071.4) == pytest.approx(
        ckpt.daly_interval_s(checkpoint_write_s=141.2, mtbf_s=241_071.4), rel=1e-6
    )
    assert ckpt.exact_interval_s(checkpoint_write_s=1e9, mtbf_s=m) == m
    assert ckpt.optimal_interval_s(method="exact", checkpoint_write_s=1e9, mtbf_s=m) == m
