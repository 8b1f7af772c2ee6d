"""Ranges of the headline figures (``solvers.ranges``): ordered, reproducible on every path, faithful to the
ledger when nothing is uncertain, and additive (a report without them is the same report less its ranges)."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers import ranges as ranges_module
from solvers import reliability as rel
from solvers import resolve, solve, solve_resolved
from solvers.catalog.uncertainty import DISTRIBUTIONS, SPREADS, p10_p90_sigma
from solvers.ledger_inputs import FIELD_PATHS, LedgerInputs
from solvers.published import load_example
from solvers.search.document import search_document
from solvers.step_uncertainty import CLASSES, MIN_RUNS, PATH, fit, read, step_class
from tests.profiles import examples

HEADLINE = (
    "step.step_s",
    "step.tokens_per_s",
    "step.mfu",
    "reliability.goodput",
    "schedule.wall_clock_days",
    "energy.it_kwh",
    "energy.facility_kwh",
    "carbon.operational_kgco2e",
    "carbon.embodied_kgco2e",
    "carbon.total_kgco2e",
    "carbon.water_l",
    "tco.total_usd",
    "tco.usd_per_million_tokens",
)


def _point(report: Any, key: str) -> float:
    section, name = key.split(".")
    return float(report[section][name])


LLAMA = "llama3-405b-16384.yaml"


def _without_ranges(report: Any) -> dict[str, Any]:
    out = copy.deepcopy(report)
    out.pop("ranges")
    out.pop("ranges_method")
    out["assumptions"] = [a for a in out["assumptions"] if not a["key"].startswith("ranges.")]
    return out


def _bits(report: Any) -> str:
    return json.dumps(report, sort_keys=True, allow_nan=False)


def test_every_headline_figure_has_an_ordered_range() -> None:
    report = solve(load_example(LLAMA))
    assert tuple(report["ranges"]) == HEADLINE
    for key in HEADLINE:
        spread = report["ranges"][key]
        assert set(spread) == {"p10", "p50", "p90"}
        assert all(type(v) is float for v in spread.values())
        assert spread["p10"] <= spread["p50"] <= spread["p90"]
    # a real spread, not three copies of the point
    assert report["ranges"]["step.step_s"]["p10"] < report["ranges"]["step.step_s"]["p90"]
    assert report["ranges"]["carbon.water_l"]["p10"] < report["ranges"]["carbon.water_l"]["p90"]
    method = report["ranges_method"]
    assert method["samples"] >= 1_000 and method["step_residual"]["step_class"] == "dense/large"
    sampled = {a["key"] for a in report["assumptions"] if a["key"].startswith("ranges.")}
    assert sampled == {f"ranges.{path}" for path in method["inputs"]}
    assert "ranges.site.pue" in sampled and "ranges.cluster.reliability.gpu_mttf_h" in sampled


def test_step_p50_is_the_point_moved_by_the_class_mean() -> None:
    resolved = resolve(load_example(LLAMA))
    report = solve_resolved(resolved)
    mean, sigma = ranges_module.STEP_CLASSES["dense/large"]
    step, ranges = report["step"], report["ranges"]
    assert ranges["step.step_s"]["p50"] == pytest.approx(step["step_s"] * math.exp(mean), rel=1e-12)
    assert ranges["step.step_s"]["p90"] == pytest.approx(
        step["step_s"] * math.exp(mean + 1.2815515655446004 * sigma), rel=1e-12
    )
    # MFU and throughput move against the step time
    assert ranges["step.mfu"]["p10"] == pytest.approx(step["mfu"] / math.exp(mean + 1.28155157 * sigma))


def test_a_report_without_ranges_is_the_same_report_less_its_ranges() -> None:
    document = load_example(LLAMA)
    with_ranges, without = solve(document), solve(document, ranges=False)
    assert "ranges" not in without and "ranges_method" not in without
    assert _bits(_without_ranges(with_ranges)) == _bits(without)


def test_the_same_document_gives_the_same_bits_on_every_path() -> None:
    document = load_example("quickstart-llama3-8b-64xh100.yaml")
    first = solve(document)
    assert _bits(solve(copy.deepcopy(document))) == _bits(first)  # a re-run
    assert _bits(solve_resolved(resolve(document))) == _bits(first)
    searched = search_document(document, top=2)["best"]
    # the search's best layout, given as the layout of the same scenario, gives the same ranges
    given = copy.deepcopy(document)
    given["training"]["layout"] = {
        key: searched["layout"][key] for key in ("tp", "pp", "cp", "ep", "dp", "microbatch_seqs", "schedule")
    }
    again = solve(given)
    assert searched["ranges"] == again["ranges"]


def test_two_plans_share_their_draws() -> None:
    """Common random numbers: the same scenario at two prices moves its cost range by the price alone."""
    document = load_example(LLAMA)
    dearer = copy.deepcopy(document)
    dearer["site"] = {**document.get("site", {}), "electricity_usd_per_kwh": 0.24}
    cheap = {**document, "site": {**document.get("site", {}), "electricity_usd_per_kwh": 0.12}}
    a, b = solve(cheap)["ranges"], solve(dearer)["ranges"]
    carbon = [key for key in HEADLINE if key.startswith("carbon.")]
    assert [a[k] for k in carbon] == [b[k] for k in carbon]  # carbon reads no price: the same draws
    assert a["tco.total_usd"] != b["tco.total_usd"]


def test_with_nothing_uncertain_the_range_collapses_on_the_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampled path (arrays through the ledger's blocks and the vectorised reliability) gives the point
    figures when every spread and the step's sigma are zero."""
    monkeypatch.setattr(ranges_module, "SPREADS", tuple(replace(s, sigma=0.0) for s in SPREADS))
    monkeypatch.setattr(ranges_module, "STEP_CLASSES", dict.fromkeys(CLASSES, (0.0, 0.0)))
    monkeypatch.setattr(
        ranges_module,
        "FACTORS",
        ranges_module.factor_table(ranges_module.STEP_CLASSES, ranges_module.SPREADS),
    )
    for name in (LLAMA, "seed000-llama3-70b-512xh100-poland.yaml", "deepseek-v3-2048xh800.yaml"):
        report = solve(load_example(name))
        for key in HEADLINE:
            for q in ("p10", "p50", "p90"):
                assert report["ranges"][key][q] == pytest.approx(_point(report, key), rel=1e-9), (name, key)


SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    gpus=st.sampled_from([64, 512, 2048, 4096]),
    region=st.sampled_from([None, "quebec", "poland", "iceland"]),
    tokens=st.one_of(st.none(), st.floats(1e10, 1e13)),
    days=st.one_of(st.none(), st.floats(1.0, 200.0)),
    method=st.sampled_from(["daly", "young", "exact"]),
    ledger=st.sampled_from(["expected_loss", "sec5_writes_half_interval", "mlsysim_goodput_ratio"]),
    pue=st.one_of(st.none(), st.floats(1.0, 2.5)),
)
def test_p10_p50_p90_are_ordered_for_any_scenario(
    gpus: int,
    region: str | None,
    tokens: float | None,
    days: float | None,
    method: str,
    ledger: str,
    pue: float | None,
) -> None:
    document: dict[str, Any] = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": gpus},
        "training": {
            "layout": {"tp": 1, "pp": 1, "dp": gpus},
            "checkpoint": {"interval_method": method, "goodput_ledger": ledger},
        },
        "site": {},
        "economics": {},
    }
    if region is not None:
        document["site"]["region"] = region
    if pue is not None:
        document["site"]["pue"] = pue
    if tokens is not None:
        document["training"]["total_tokens"] = tokens
    if days is not None:
        document["economics"]["job_days"] = days
    report = solve(document)
    for key in HEADLINE:
        spread = report["ranges"][key]
        assert math.isfinite(spread["p10"]) and math.isfinite(spread["p90"])
        assert spread["p10"] <= spread["p50"] <= spread["p90"], (key, spread)


@pytest.mark.parametrize("ledger", ["expected_loss", "sec5_writes_half_interval", "mlsysim_goodput_ratio"])
def test_the_array_goodput_shares_are_the_scalar_ones_elementwise(ledger: str) -> None:
    intervals = [600.0, 8_157.0, 40_000.0, 3_600.0]
    mtbfs = [1_000.0, 241_071.4, 30_000.0, 900.0]  # the last is floored by the first-order ledgers
    arrays = rel.goodput_shares_array(
        ledger=ledger,
        interval_s=np.array(intervals),
        checkpoint_write_s=141.2,
        restart_s=300.0,
        mtbf_s=np.array(mtbfs),
    )
    for i, (interval, mtbf) in enumerate(zip(intervals, mtbfs, strict=True)):
        one = rel.goodput_shares(
            ledger=ledger, interval_s=interval, checkpoint_write_s=141.2, restart_s=300.0, mtbf_s=mtbf
        )
        for field in ("goodput", "checkpoint_writes", "rework", "restarts"):
            assert getattr(arrays, field)[i] == pytest.approx(getattr(one, field), rel=1e-12, abs=1e-15)


def test_the_spreads_table_names_ledger_fields_and_sources() -> None:
    assert p10_p90_sigma(30_000.0, 40_000.0) == pytest.approx(0.11224, abs=1e-5)
    seen: set[str] = set()
    for spread in SPREADS:
        assert spread.distribution in DISTRIBUTIONS
        assert spread.sigma > 0 and spread.source and spread.derivation
        for field in spread.fields:
            assert field in LedgerInputs._fields and field in FIELD_PATHS
            assert field not in seen
            seen.add(field)
    assert {"gpu_mttf_h", "pue", "grid_gco2_per_kwh", "wue_l_per_kwh", "electricity_usd_per_kwh"} <= seen
    assert {"accelerator_unit_price_usd", "accelerator_embodied_kgco2e"} <= seen


def test_the_step_uncertainty_file_has_every_class() -> None:
    document = json.loads(Path(PATH).read_text(encoding="utf-8"))
    assert set(document["classes"]) == set(CLASSES)
    for name, entry in document["classes"].items():
        assert entry["sigma"] > 0
        if entry["n"] < MIN_RUNS:
            assert entry["pooled_from"], name
    assert set(read()) == set(CLASSES)


def test_classes_and_pooling() -> None:
    assert step_class(moe=False, gpus=2_048) == "dense/small"
    assert step_class(moe=False, gpus=2_049) == "dense/large"
    assert step_class(moe=True, gpus=16) == "moe/small"
    pairs = [("dense/small", r) for r in (0.0, 0.1, -0.1, 0.05, -0.05)] + [("moe/large", 0.3)]
    document = fit(pairs, generated_by="test", convention="test", held_out=True)
    small = document["classes"]["dense/small"]
    assert small["n"] == 5 and "pooled_from" not in small
    assert small["mean"] == pytest.approx(0.0, abs=1e-15)
    assert small["sigma"] == pytest.approx(np.std([0.0, 0.1, -0.1, 0.05, -0.05], ddof=1))
    moe = document["classes"]["moe/large"]
    assert moe["n"] == 1 and moe["pooled_from"] == list(CLASSES) and moe["n_pooled"] == 6


def test_reports_with_and_without_ranges_follow_the_report_schema() -> None:
    import jsonschema

    from solvers.report_schema import report_json_schema

    schema = report_json_schema()
    for name in (LLAMA, "deepseek-v3-2048xh800.yaml", "auto-llama3-70b-1024xh100.yaml"):
        document = load_example(name)
        jsonschema.validate(solve(document), schema)
        jsonschema.validate(solve(document, ranges=False), schema)
    broken: Any = solve(load_example(LLAMA))
    broken["ranges"]["step.step_s"].pop("p50")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
