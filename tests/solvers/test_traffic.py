"""solvers.traffic: NIC duty cycle and burst size (seed 004 §5.6)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import traffic


def test_duty_cycle_example() -> None:
    """Docstring example: 12.6 GB on a 50 GB/s NIC in a 6.5 s step -> 3.9%."""
    duty = traffic.nic_duty_cycle(nic_bytes=np.array([12.6e9]), nic_gb_s=50.0, step_s=np.array([6.5]))
    assert duty[0] == pytest.approx(0.252 / 6.5)


def test_duty_cycle_is_capped() -> None:
    duty = traffic.nic_duty_cycle(nic_bytes=np.array([1e12, 0.0]), nic_gb_s=50.0, step_s=np.array([1.0, 1.0]))
    np.testing.assert_allclose(duty, [1.0, 0.0])


def test_burst_round_trip() -> None:
    """Seed 004 §5.6: 50 ms at 400 Gb/s = 2.5 GB, and back."""
    b = traffic.burst_bytes_from_duration(burst_s=0.05, line_rate_gb_s=50.0)
    assert b == pytest.approx(2.5e9)
    assert traffic.burst_duration_s(burst_bytes=b, line_rate_gb_s=50.0) == pytest.approx(0.05)
    assert traffic.nic_busy_s(nic_bytes=12.6e9, nic_gb_s=50.0) == pytest.approx(0.252)
