from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from solvers.errors import ScenarioError
from solvers.ledger import FIELD_PATHS, LedgerInputs, compute_ledger, ledger_inputs_with_defaults
from solvers.ledger_checks import check_ledger_inputs
from solvers.ledger_defaults import DEFAULTS, GOODPUT_LEDGERS, INTERVAL_METHODS, MTBF_CONVENTIONS

H100_512 = {
    "step_s": 8.0,
    "gpu_busy_fraction": 0.75,
    "tokens_per_step": 4 * 1024 * 1024,
    "gpus": 512,
    "gpus_per_node": 8,
    "accelerator_tdp_w": 700.0,
    "accelerator_unit_price_usd": 25_000.0,
    "accelerator_embodied_kgco2e": 150.0,
    "params": 70.6e9,
    "optimizer": "adam",
    "precision": "bf16",
    "total_tokens": 1e12,
    "job_days": None,
}


def make_inputs(**overrides) -> LedgerInputs:
    fields = {**H100_512, **overrides}
    region = fields.pop("region", "us-average")
    return ledger_inputs_with_defaults(region=region, **fields)


def _numbers(section: Mapping[str, Any]) -> list[float]:
    values: list[float] = []
    for value in section.values():
        if isinstance(value, dict):
            values.extend(_numbers(value))
        elif isinstance(value, float | int | np.ndarray) and not isinstance(value, bool):
            values.extend(np.ravel(value).tolist())
    return values


def test_report_sections_have_the_contract_keys():
    result = compute_ledger(make_inputs())
    assert {
        "node_mtbf_h",
        "cluster_mtbf_h",
        "expected_failures",
        "checkpoint_bytes",
        "checkpoint_write_s",
        "checkpoint_interval_h",
        "lost_h",
        "goodput",
    } <= set(result.reliability)
    assert set(result.reliability["lost_h"]) == {"checkpoint_writes", "rework", "restarts"}
    assert {"ideal_days", "wall_clock_days"} <= set(result.schedule)
    assert {"it_kwh", "facility_kwh"} <= set(result.energy)
    assert {"operational_kgco2e", "embodied_kgco2e", "total_kgco2e", "water_l"} <= set(result.carbon)
    assert {
        "capex_usd",
        "maintenance_usd",
        "electricity_usd",
        "total_usd",
        "usd_per_million_tokens",
        "cloud_usd",
        "failure_cost_usd",
    } <= set(result.tco)


def test_scalar_inputs_give_python_floats():
    result = compute_ledger(make_inputs())
    assert type(result.reliability["goodput"]) is float
    assert type(result.schedule["wall_clock_days"]) is float
    assert type(result.tco["total_usd"]) is float
    assert result.tco["cloud_usd"] is None


def test_array_inputs_match_one_call_per_layout():
    steps = np.array([6.0, 8.0, 12.0])
    busy = np.array([0.9, 0.75, 0.5])
    batch = compute_ledger(make_inputs(step_s=steps, gpu_busy_fraction=busy, cloud_usd_per_gpu_hour=2.0))
    for i in range(3):
        one = compute_ledger(
            make_inputs(step_s=float(steps[i]), gpu_busy_fraction=float(busy[i]), cloud_usd_per_gpu_hour=2.0)
        )
        for section in ("schedule", "energy", "carbon", "tco"):
            for key, value in getattr(one, section).items():
                if isinstance(value, float):
                    assert getattr(batch, section)[key][i] == pytest.approx(value), (section, key)
        assert np.asarray(batch.reliability["goodput"])[i] == pytest.approx(one.reliability["goodput"])


def test_wall_clock_is_ideal_over_goodput_and_lost_time_adds_up():
    result = compute_ledger(make_inputs())
    rel, sched = result.reliability, result.schedule
    assert sched["wall_clock_days"] == pytest.approx(sched["ideal_days"] / rel["goodput"])
    lost = rel["lost_h"]
    lost_h = lost["checkpoint_writes"] + lost["rework"] + lost["restarts"]
    assert (sched["wall_clock_days"] - sched["ideal_days"]) * 24 == pytest.approx(lost_h)
    steps = math.ceil(1e12 / (4 * 1024 * 1024))
    assert sched["steps"] == steps
    assert sched["ideal_days"] == pytest.approx(steps * 8.0 / 86400)


def test_job_days_window_delivers_tokens():
    result = compute_ledger(make_inputs(total_tokens=None, job_days=10.0))
    sched = result.schedule
    assert sched["mode"] == "job_days"
    assert sched["wall_clock_days"] == 10.0
    assert sched["ideal_days"] == pytest.approx(10.0 * result.reliability["goodput"])
    assert sched["tokens"] == math.floor(sched["ideal_days"] * 86400 / 8.0) * 4 * 1024 * 1024


def test_default_window_is_30_days_and_stated():
    result = compute_ledger(make_inputs(total_tokens=None, job_days=None))
    assert result.schedule["wall_clock_days"] == 30.0
    duration = next(a for a in result.assumptions if a["key"] == "schedule.duration")
    assert duration["value"] == 30.0
    assert "30-day window" in duration["source"]


def test_total_tokens_beyond_job_days_warns():
    result = compute_ledger(make_inputs(total_tokens=1e13, job_days=1.0))
    assert any("economics.job_days" in w for w in result.warnings)


def test_interval_is_optimised_on_the_real_write_time():
    result = compute_ledger(make_inputs(checkpoint_writers=1, interval_method="young"))
    rel = result.reliability
    assert rel["checkpoint_write_s"] == pytest.approx(141.2)
    expected_h = math.sqrt(2 * 141.2 * rel["cluster_mtbf_h"] * 3600) / 3600
    assert rel["checkpoint_interval_h"] == pytest.approx(expected_h)
    assert rel["checkpoint_interval_method"] == "young"


def test_fixed_interval_far_from_the_optimum_warns():
    result = compute_ledger(make_inputs(checkpoint_interval_h=20.0))
    assert result.reliability["checkpoint_interval_method"] == "fixed"
    assert result.reliability["checkpoint_interval_h"] == 20.0
    assert any("outside 0.5x-2x" in w for w in result.warnings)


def test_default_writers_one_per_node_and_the_cap_binds():
    result = compute_ledger(make_inputs())
    assert result.reliability["checkpoint_writers"] == 64
    assert result.reliability["checkpoint_write_gb_s"] == 448.0  # 64 x 7 GB/s under the 500 GB/s cap
    big = compute_ledger(make_inputs(gpus=16384))
    assert big.reliability["checkpoint_write_gb_s"] == 500.0


def test_gpu_only_convention_is_labelled_and_longer():
    series = compute_ledger(make_inputs())
    gpu_only = compute_ledger(make_inputs(mtbf_convention="gpu_only"))
    assert gpu_only.reliability["cluster_mtbf_h"] == pytest.approx(50_000 / 512)
    assert gpu_only.reliability["cluster_mtbf_h"] > series.reliability["cluster_mtbf_h"]
    convention = next(a for a in gpu_only.assumptions if a["key"] == "reliability.mtbf_convention")
    assert convention["value"] == "gpu_only"


def test_embodied_carbon_is_charged_for_the_duration_only():
    result = compute_ledger(make_inputs(total_tokens=None, job_days=365.0, embodied_lifetime_years=5.0))
    assert result.carbon["embodied_kgco2e"] == pytest.approx(512 * 150.0 / 5)


def test_carbon_and_water_follow_the_region():
    quebec = compute_ledger(make_inputs(region="quebec"))
    poland = compute_ledger(make_inputs(region="poland"))
    assert quebec.energy["it_kwh"] == pytest.approx(poland.energy["it_kwh"])
    assert poland.carbon["operational_kgco2e"] / quebec.carbon["operational_kgco2e"] == pytest.approx(
        820 * 1.58 / (20 * 1.06)
    )
    assert quebec.carbon["water_l"] == 0.0


def test_tco_parts_add_up_and_failure_cost_is_shown_alone():
    result = compute_ledger(make_inputs(cloud_usd_per_gpu_hour=2.5))
    tco = result.tco
    assert tco["total_usd"] == pytest.approx(
        tco["capex_usd"] + tco["maintenance_usd"] + tco["electricity_usd"]
    )
    lost_share = (result.reliability["lost_h"]["rework"] + result.reliability["lost_h"]["restarts"]) / (
        result.schedule["wall_clock_days"] * 24
    )
    assert tco["failure_cost_usd"] == pytest.approx(tco["total_usd"] * lost_share)
    assert tco["cloud_usd"] == pytest.approx(512 * result.schedule["wall_clock_days"] * 24 * 2.5)
    assert tco["usd_per_million_tokens"] == pytest.approx(
        tco["total_usd"] / (result.schedule["tokens"] / 1e6)
    )


@pytest.mark.parametrize("ledger", GOODPUT_LEDGERS)
@pytest.mark.parametrize("method", INTERVAL_METHODS)
@pytest.mark.parametrize("convention", MTBF_CONVENTIONS)
def test_every_convention_combination_is_finite(ledger, method, convention):
    result = compute_ledger(
        make_inputs(goodput_ledger=ledger, interval_method=method, mtbf_convention=convention)
    )
    for section in (result.reliability, result.schedule, result.energy, result.carbon, result.tco):
        assert all(math.isfinite(x) for x in _numbers(section))
    keys = {a["key"] for a in result.assumptions}
    assert {"reliability.goodput_ledger", "checkpoint.interval_method", "reliability.mtbf_convention"} <= keys


def test_ledger_inputs_are_immutable():
    inputs = make_inputs()
    with pytest.raises(AttributeError):
        inputs.pue = 2.0  # type: ignore[misc]
    assert inputs._replace(pue=2.0).pue == 2.0 and inputs.pue != 2.0


def test_bad_inputs_raise_one_error_per_field_with_paths():
    inputs = make_inputs()._replace(
        pue=0.9, gpus=0, idle_fraction=1.5, goodput_ledger="x", step_s=np.array([1.0, -1.0])
    )
    with pytest.raises(ScenarioError) as info:
        check_ledger_inputs(inputs)
    paths = {e.path for e in info.value.errors}
    assert {
        "site.pue",
        "cluster.gpus",
        "cluster.power.idle_fraction",
        "training.checkpoint.goodput_ledger",
        "step.step_s",
    } <= paths


def test_missing_required_inputs_name_their_paths():
    with pytest.raises(ScenarioError) as info:
        ledger_inputs_with_defaults(step_s=1.0, gpu_busy_fraction=0.5, tokens_per_step=1.0)
    paths = {e.path for e in info.value.errors}
    assert {"cluster.gpus", "model.params", "training.total_tokens"} <= paths


def test_unknown_region_is_an_error():
    with pytest.raises(ScenarioError) as info:
        make_inputs(region="atlantis")
    assert info.value.first.path == "site.region"


def test_defaults_cover_every_defaulted_field_with_a_source():
    for name, path in FIELD_PATHS.items():
        if path in DEFAULTS:
            assert DEFAULTS[path].source, name
    for key, default in DEFAULTS.items():
        assert default.source, key
    assert DEFAULTS["training.checkpoint.goodput_ledger"].value == GOODPUT_LEDGERS[0]
    assert DEFAULTS["cluster.reliability.mtbf_convention"].value in MTBF_CONVENTIONS
    assert DEFAULTS["training.checkpoint.interval_method"].value in INTERVAL_METHODS
    assert DEFAULTS["economics.window_days"].value == 30.0


def test_one_layout_is_fast():
    import time

    inputs = make_inputs()
    compute_ledger(inputs)
    start = time.perf_counter()
    for _ in range(200):
        compute_ledger(inputs)
    per_call_s = (time.perf_counter() - start) / 200
    assert per_call_s < 0.5e-3


def test_llama3_validation_rows_are_complete_and_use_untuned_defaults():
    from solvers.published import ledger_rows

    rows = ledger_rows()
    assert {"case", "metric", "predicted", "published", "unit", "source"} <= set(rows[0])
    by_metric = {row["metric"]: row for row in rows}
    failures = by_metric["unexpected interruptions (node_series MTBF, default MTTFs)"]
    assert failures["published"] == 419.0
    # 54 days over 2,048 DGX nodes at 4,285.71 h each: 1,296 h x 2,048 / 4,285.71 h
    assert failures["predicted"] == pytest.approx(1296 * 2048 / (1 / (8 / 5e4 + 8 / 1.5e5 + 2 / 1e5)))
    goodput = next(row for row in rows if row["metric"].startswith("goodput"))
    assert 0 < goodput["predicted"] <= 1
    assert all(math.isfinite(row["predicted"]) for row in rows)
