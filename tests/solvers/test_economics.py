from __future__ import annotations

import numpy as np
import pytest

from solvers import economics as econ


def test_capex_is_price_times_gpus_times_multiplier():
    assert econ.capex_total_usd(unit_price_usd=25_000.0, gpus=1024, infra_multiplier=2.0) == 51_200_000.0


def test_amortised_capex_is_straight_line():
    # a 3-year life charged for a full year is a third of the capex
    assert econ.amortized_capex_usd(capex_total_usd=3e6, amortization_years=3.0, duration_days=365.0) == 1e6
    assert econ.amortized_capex_usd(capex_total_usd=3e6, amortization_years=3.0, duration_days=0.0) == 0.0


def test_maintenance_is_a_yearly_share_of_the_full_capex():
    assert econ.maintenance_usd(
        capex_total_usd=1e6, maintenance_per_year=0.05, duration_days=73.0
    ) == pytest.approx(10_000.0)


def test_electricity_and_cloud():
    assert econ.electricity_usd(facility_kwh=1000.0, usd_per_kwh=0.1) == pytest.approx(100.0)
    assert econ.cloud_usd(gpus=8, duration_h=10.0, usd_per_gpu_hour=2.0) == 160.0


def test_cost_per_million_tokens_and_zero_tokens_stay_finite():
    assert econ.usd_per_million_tokens(total_usd=50.0, tokens=10e6) == 5.0
    assert np.isfinite(econ.usd_per_million_tokens(total_usd=50.0, tokens=0.0))


def test_functions_broadcast_over_durations():
    days = np.array([1.0, 30.0, 365.0])
    capex = econ.amortized_capex_usd(capex_total_usd=3.65e6, amortization_years=1.0, duration_days=days)
    np.testing.assert_allclose(capex, [1e4, 3e5, 3.65e6])
