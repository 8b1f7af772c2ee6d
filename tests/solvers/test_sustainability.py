from __future__ import annotations

import numpy as np
import pytest

from solvers import sustainability as sus
from solvers.catalog.regions import REGIONS


def test_gpu_power_runs_from_the_idle_floor_to_tdp():
    assert sus.gpu_power_w(tdp_w=700.0, busy_fraction=0.0, idle_fraction=0.3) == pytest.approx(210.0)
    assert sus.gpu_power_w(tdp_w=700.0, busy_fraction=1.0, idle_fraction=0.3) == pytest.approx(700.0)
    assert sus.gpu_power_w(tdp_w=700.0, busy_fraction=0.8, idle_fraction=0.3) == pytest.approx(602.0)


def test_it_energy_adds_hosts_and_charges_stalls_at_the_floor():
    kwh = sus.it_energy_kwh(
        gpus=8,
        nodes=1,
        tdp_w=1000.0,
        busy_fraction=1.0,
        idle_fraction=0.25,
        host_w_per_node=2000.0,
        running_h=10.0,
        stalled_h=2.0,
    )
    # GPUs: 8 kW x 10 h + 2 kW x 2 h; host: 2 kW x 12 h
    assert kwh == pytest.approx(80.0 + 4.0 + 24.0)


def test_embodied_carbon_is_amortised_over_the_service_life():
    one_year = sus.embodied_carbon_kgco2e(
        accelerators=10, embodied_kgco2e_per_accelerator=150.0, duration_h=8760.0, lifetime_years=5.0
    )
    assert one_year == pytest.approx(10 * 150.0 / 5)


def test_water_multiplies_it_energy_not_facility_energy():
    assert sus.water_l(it_kwh=1000.0, wue_l_per_kwh=1.8) == pytest.approx(1800.0)


def test_operational_carbon_is_facility_energy_times_grid():
    assert sus.operational_carbon_kgco2e(facility_kwh=1000.0, grid_gco2_per_kwh=400.0) == pytest.approx(400.0)


def test_functions_broadcast():
    busy = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(
        sus.gpu_power_w(tdp_w=100.0, busy_fraction=busy, idle_fraction=0.2), [20, 60, 100]
    )


def test_every_region_has_all_fields_with_sources():
    fields = ("grid_gco2_per_kwh", "pue", "wue_l_per_kwh", "electricity_usd_per_kwh")
    required = {
        "quebec", "poland", "us-average", "iceland", "norway", "france", "germany", "virginia", "texas",
        "california", "oregon", "ireland", "sweden", "finland", "netherlands", "singapore", "japan",
        "china-average", "india",
    }  # fmt: skip
    assert required <= set(REGIONS)
    for key, region in REGIONS.items():
        assert region["name"]
        for name in fields:
            assert region[name] >= 0, (key, name)
            assert region["sources"][name], (key, name)
        assert region["pue"] >= 1.0


def test_seed_regions_keep_mlsysim_values():
    assert (REGIONS["quebec"]["grid_gco2_per_kwh"], REGIONS["quebec"]["pue"]) == (20.0, 1.06)
    assert (REGIONS["poland"]["grid_gco2_per_kwh"], REGIONS["poland"]["pue"]) == (820.0, 1.58)
    assert (REGIONS["us-average"]["grid_gco2_per_kwh"], REGIONS["us-average"]["pue"]) == (429.0, 1.12)
    assert (REGIONS["iceland"]["grid_gco2_per_kwh"], REGIONS["iceland"]["pue"]) == (28.0, 1.06)
