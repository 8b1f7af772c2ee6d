"""A hand check of the ledger (reliability, checkpoint, schedule, energy, carbon, water, TCO).

Each figure was recomputed by hand from the report's own ``assumptions`` (node-series MTBF, Daly/Young
interval on the real write time, Daly's renewal goodput, energy with PUE, carbon, WUE x IT energy, amortised
TCO); the cases below hold the report, and the documented worked examples, to what the report states.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from solvers import ledger as ledger_module
from solvers import solve
from solvers.catalog.regions import REGIONS
from solvers.cli import load_yaml
from solvers.ledger import tco
from solvers.report_types import Report

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _report(name: str) -> Report:
    return solve(load_yaml((EXAMPLES / name).read_text(encoding="utf-8")), ranges=False)


def _numbers(value: object) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _numbers(item)]
    return []


def test_deepseek_v3_checkpoint_parameter_count_is_in_the_assumptions() -> None:
    """DeepSeek-V3 (one MTP module): the checkpoint is sized on 682.61e9 parameters (671e9 + the MTP module's
    11.61e9), 9.5565e12 B = 682.61e9 x 14, but the only parameter count the assumptions give is model.params =
    671e9 (671e9 x 14 = 9.394e12 B, write 18.79 s instead of 19.11 s, interval 0.4145 h instead of 0.4181 h).
    Every input the ledger uses must be listed with the value used (CONVENTIONS.md, first paragraph)."""
    report = _report("deepseek-v3-2048xh800.yaml")
    rel = report["reliability"]
    params_used = rel["checkpoint_bytes"] / rel["checkpoint_bytes_per_param"]
    assert math.isclose(params_used, 682_610_067_968.0, rel_tol=1e-9)  # what the ledger used
    listed = {a["key"]: a["value"] for a in report["assumptions"]}
    assert listed["model.params"] == 671e9
    stated = [x for a in report["assumptions"] for x in _numbers(a["value"])]
    assert any(math.isclose(x, params_used, rel_tol=1e-6) for x in stated), (
        f"the checkpoint's {params_used:.6g} parameters appear in no assumption "
        f"(model.params = {listed['model.params']:.6g})"
    )


def test_tco_docstring_worked_example_matches_the_code() -> None:
    """solvers/ledger.py ``tco`` docstring: "$25,000 x 512 H100 x 2.0 over 3 years for 30 days: capex $2.10 M".
    Straight-line over 3 years: 25,000 x 512 x 2.0 / 3 x 30 / 365 = $0.701 M (what the code and the seed-000
    report give); $2.10 M is 25.6 M x 30 / 365, the three years left out."""
    doc = ledger_module.tco.__doc__ or ""
    match = re.search(r"capex \$([0-9.]+) M", doc)
    assert match, "the tco docstring states no capex example"
    stated = float(match.group(1)) * 1e6
    t = tco(
        unit_price_usd=25_000.0,
        gpus=512,
        infra_multiplier=2.0,
        amortization_years=3.0,
        maintenance_per_year=0.05,
        electricity_usd_per_kwh=0.12,
        cloud_usd_per_gpu_hour=None,
        wall_h=720.0,
        wall_days=30.0,
        facility_kwh=0.0,
        tokens=1e12,
        failure_share=0.0,
        checkpoint_share=0.0,
    )
    assert math.isclose(t.capex_usd, 25_000.0 * 512 * 2.0 / 3.0 * 30.0 / 365.0)
    assert math.isclose(stated, t.capex_usd, rel_tol=0.01), (stated, t.capex_usd)


def test_energy_carbon_docstring_quebec_matches_the_catalog() -> None:
    """solvers/ledger.py ``energy_carbon`` docstring example: "PUE 1.1, Quebec (1.7 gCO2e/kWh)"; the catalog's
    Quebec (seed 000 §4, mlsysim grids.yaml) is 20 gCO2e/kWh at PUE 1.06, and every Quebec report uses those."""
    doc = ledger_module.energy_carbon.__doc__ or ""
    match = re.search(r"Quebec \(([0-9.]+) gCO2e/kWh\)", doc)
    assert match, "the energy_carbon docstring names no Quebec intensity"
    assert float(match.group(1)) == REGIONS["quebec"]["grid_gco2_per_kwh"]


def test_figure_ranges_docstring_uses_the_catalog_step_class() -> None:
    """solvers/ranges.py ``figure_ranges`` docstring names the catalog's dense/large step class: at 1.8.0
    solvers/catalog/step_uncertainty.json gives mean 0.00372, sigma 0.0603, and the 405B example reports a
    6.601 s step with step_s p10 / p50 / p90 = 6.133 / 6.626 / 7.158 s (6.601 x exp(0.0037 + 0.0603 z),
    z = -1.2816, 0, 1.2816)."""
    from solvers import ranges

    doc = ranges.figure_ranges.__doc__ or ""
    match = re.search(r"dense/large: mean ([0-9.]+), sigma ([0-9.]+)", doc)
    assert match, "the figure_ranges docstring names no dense/large class"
    mean, sigma = ranges.STEP_CLASSES["dense/large"]
    assert math.isclose(float(match.group(1)), mean, abs_tol=5e-4), (match.group(1), mean)
    assert math.isclose(float(match.group(2)), sigma, abs_tol=5e-4), (match.group(2), sigma)
