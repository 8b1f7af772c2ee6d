"""The fit and its validation (solvers.fit, solvers.validation): deterministic, bounded, honest formats."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers import fit as fit_module
from solvers.catalog.accelerators import ACCELERATORS
from solvers.catalog.calibration import COMPUTE_EFFICIENCY
from solvers.catalog.fitted import (
    CONSTANT_UNITS,
    CONSTANTS,
    EFFICIENCY_FAMILY,
    FAMILIES,
    FAMILY,
    FITTED,
    FITTED_FILE,
    efficiency_family_of,
    family_efficiency,
    family_of,
    fitted_constant,
)
from solvers.catalog.uncertainty import P90_Z
from solvers.corpus import Corpus, corpus_hash
from solvers.fit import BOUNDS, LOSS_SCALE, cauchy_residuals, fit, held_out, prepare
from solvers.gemm_shape import MAX_HALF
from solvers.inputs import resolve
from solvers.published import load_example, validation_corpus
from solvers.specs import EffectsSpec
from solvers.step_uncertainty import MIN_RUNS
from solvers.validation import (
    TARGET_MAX_POINTS,
    constants_across_folds,
    family_summary,
    kendall_tau,
    range_coverage,
    source_bootstrap,
    step_error_percent,
    within_source_scatter,
)

UNCERTAINTY = FITTED_FILE.parent / "step_uncertainty.json"


def test_step_error_percent_is_the_step_times_relative_error() -> None:
    out = step_error_percent([0.0, math.log(1.1), math.log(0.8)])
    assert out["median"] == pytest.approx(10.0)
    assert out["mean"] == pytest.approx(10.0)
    assert out["p90"] == pytest.approx(18.0)
    # a run twice as slow as predicted is 100% off in time, whatever its MFU
    assert step_error_percent([math.log(2.0)])["median"] == pytest.approx(100.0)
    assert step_error_percent([]) == {"median": 0.0, "mean": 0.0, "p90": 0.0}


def test_kendall_tau() -> None:
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


def test_fit_is_deterministic_and_bounded(small: Corpus) -> None:
    prepared = prepare(small)
    first, second = fit(prepared), fit(prepared)
    assert first == second
    for name, (lo, hi) in BOUNDS.items():
        assert lo <= first[name] <= hi, name


def test_the_fit_reaches_a_minimum_of_its_loss(small: Corpus) -> None:
    """No free constant moved by 1% of its range, either way inside its bounds, lowers the weighted loss: the
    solver stops at a minimum, not where an iteration count ran out."""
    prepared = prepare(small)
    weights = fit_module._weights(prepared)

    def loss(params: dict[str, float]) -> float:
        return float(weights @ np.square(cauchy_residuals(fit_module.residuals(prepared, params))))

    best = fit(prepared)
    at_best = loss(best)
    free = fit_module._free(prepared, effects=True)
    assert {"moe_skew", "expert_kernel_s", "jitter"} <= set(free)
    for name in free:
        lo, hi = BOUNDS[name]
        for sign in (-1.0, 1.0):
            moved = min(hi, max(lo, best[name] + sign * 0.01 * (hi - lo)))
            if moved != best[name]:
                assert loss({**best, name: moved}) >= at_best * (1.0 - 1e-6), (name, sign)


@given(st.floats(min_value=-5.0, max_value=5.0), st.floats(min_value=0.01, max_value=1.0))
def test_cauchy_pseudo_residuals_square_to_the_cauchy_loss(r: float, scale: float) -> None:
    (pseudo,) = cauchy_residuals(np.array([r]), scale)
    loss = scale * scale * math.log1p((r / scale) ** 2)
    assert pseudo * pseudo == pytest.approx(loss, rel=1e-12, abs=1e-15)
    assert abs(pseudo) <= abs(r) + 1e-15 and (
        pseudo == 0.0 or math.copysign(1.0, pseudo) == math.copysign(1.0, r)
    )


@given(st.floats(min_value=0.01, max_value=1.0))
def test_a_runs_pull_is_largest_one_scale_out_and_falls_beyond(scale: float) -> None:
    """The loss's slope (a run's pull on the constants) peaks at |r| = scale and falls further out."""
    r = np.array([0.5, 1.0, 2.0, 4.0, 8.0]) * scale
    h = 1e-6 * scale

    def loss(x: np.ndarray) -> np.ndarray:
        return np.square(cauchy_residuals(x, scale)) / 2.0

    slope = (loss(r + h) - loss(r - h)) / (2.0 * h)
    assert np.argmax(slope) == 1
    assert np.all(np.diff(slope[1:]) < 0)


def test_one_gross_outlier_moves_the_fit_less_than_least_squares(
    small: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run published three times slower than it ran moves the other runs' predictions far less under the
    Cauchy loss than under least squares, and keeps its own large residual instead of being fitted; published
    ten times slower it moves them less still (a run's pull falls as it gets further from the rest)."""
    victim = next(r for r in small.runs if r.metric == "step_s")
    clean = prepare(small)
    others = [p for p in clean if p.run.id != victim.id]

    def shift(factor: float, before: dict[str, float]) -> tuple[float, float]:
        bad = dataclasses.replace(victim, published=victim.published * factor)
        dirty = prepare(dataclasses.replace(small, runs=tuple(bad if r is victim else r for r in small.runs)))
        (victim_prepared,) = (p for p in dirty if p.run.id == victim.id)
        after = fit(dirty)
        moved = np.abs(fit_module.residuals(others, after) - fit_module.residuals(others, before))
        return float(np.mean(moved)), float(fit_module.residuals([victim_prepared], after)[0])

    robust_fit = fit(clean)
    robust, robust_victim = shift(3.0, robust_fit)
    further, _ = shift(10.0, robust_fit)
    assert LOSS_SCALE == 0.2
    assert further < robust
    monkeypatch.setattr(fit_module, "LOSS_SCALE", 1e9)  # plain least squares
    squared, squared_victim = shift(3.0, fit(clean))
    assert robust < 0.5 * squared
    assert robust_victim > squared_victim


def test_held_out_predicts_each_source_without_it(small: Corpus) -> None:
    prepared = prepare(small)
    rows, by_source = held_out(prepared)
    assert len(rows) == len(prepared)
    assert set(by_source) == {p.run.source for p in prepared}


def test_a_family_is_held_out_as_a_whole(small: Corpus) -> None:
    """Two sources of one family: one refit without both predicts both; the third source, a family of its own,
    keeps the leave-one-source-out rows it is given (not refitted)."""
    prepared = prepare(small)
    a, b, c = small.source_ids()
    rows, by_source = held_out(prepared)
    family_rows, by_group = held_out(prepared, groups={a: "x", b: "x"}, reuse=rows)
    assert set(by_group) == {"x"}
    without_both = fit([p for p in prepared if p.run.source == c])
    assert by_group["x"] == without_both
    for p, row, family_row in zip(prepared, rows, family_rows, strict=True):
        if p.run.source == c:
            assert family_row is row
        else:
            assert family_row == fit_module.predict_row(p, without_both)
            assert by_source[p.run.source] != without_both  # a fold without one source only is another fit


def test_family_summary_worked_example() -> None:
    def run(source: str, family: str, by_family: float, by_source: float) -> dict[str, object]:
        return {
            "source": source,
            "family": family,
            "held_out_by_family": {"error_points": by_family},
            "held_out": {"error_points": by_source},
        }

    out = family_summary([run("a", "x", 2.0, 1.0), run("b", "x", -4.0, 3.0), run("c", "c", 5.0, 5.0)])
    assert out["families"] == 2 and out["mean_abs_points"] == pytest.approx(11 / 3)
    assert out["max_abs_points"] == 5.0 and out["within_8_points"] == 3
    assert out["multi_source_families"] == [
        {
            "family": "x",
            "sources": ["a", "b"],
            "runs": 2,
            "held_out_mean_abs_points": 3.0,
            "source_held_out_mean_abs_points": 2.0,
        }
    ]


def test_the_written_files_have_the_agreed_format() -> None:
    data = json.loads(Path(UNCERTAINTY).read_text(encoding="utf-8"))
    assert data["generated_by"] == "python -m solvers fit"
    assert data["convention"] == "log(actual step_s / predicted step_s), held out by source"
    assert data["held_out"] is True
    assert set(data["classes"]) == {"dense/small", "dense/large", "moe/small", "moe/large"}
    for entry in data["classes"].values():
        assert isinstance(entry["n"], int) and entry["sigma"] >= 0
        assert ("pooled_from" in entry) == (entry["n"] < MIN_RUNS)
    assert data["outside_target"]["max_abs_points"] == TARGET_MAX_POINTS
    assert all(abs(r["held_out_error_points"]) > TARGET_MAX_POINTS for r in data["outside_target"]["runs"])
    calibration = json.loads(FITTED_FILE.read_text(encoding="utf-8"))
    assert calibration["corpus_sha256"] and calibration["date"]
    for name, value in calibration["constants"].items():
        lo, hi = BOUNDS.get(name, (0.0, MAX_HALF))  # shape_half_dim: fitted to kernels, within the grid
        assert lo <= value <= hi
    assert "shape_half_dim" not in BOUNDS and calibration["shape_half_dim_fit"]["rows"] > 0


def test_the_fitted_files_were_fitted_on_the_corpus_as_it_is() -> None:
    """A run added to or changed in ``corpus/`` without ``python -m solvers fit`` leaves the calibration and the
    step ranges fitted on another corpus: this fails until the fit is run again."""
    calibration = json.loads(FITTED_FILE.read_text(encoding="utf-8"))
    corpus = validation_corpus()
    assert calibration["corpus_sha256"] == corpus_hash(corpus), "run `python -m solvers fit`"
    assert calibration["corpus_runs"] == len(corpus.runs)
    assert calibration["loss"] == dict(fit_module.LOSS), "the loss changed: run `python -m solvers fit`"


def _run(source: str, predicted: float, published: float) -> dict[str, object]:
    return {
        "source": source,
        "in_sample": {
            "mfu_predicted": predicted,
            "mfu_published": published,
            "log_ratio": math.log(predicted / published),
        },
    }


def test_within_source_scatter_takes_out_each_sources_own_scale() -> None:
    # Source a is 10% fast on every run and b 20% slow: one scale per source explains all of it.
    runs = [_run("a", 0.55, 0.5), _run("a", 0.33, 0.3), _run("b", 0.32, 0.4), _run("b", 0.4, 0.5)]
    assert within_source_scatter(runs) == pytest.approx(0.0, abs=1e-9)
    # Inside source a the two runs are 10% fast and 10% slow: the scale (their geometric mean, 1) leaves both.
    spread = [_run("a", 0.55, 0.5), _run("a", 0.27, 0.3), _run("b", 0.4, 0.4)]
    expected = (abs(0.55 / 0.99**0.5 - 0.5) + abs(0.27 / 0.99**0.5 - 0.3)) / 3 * 100
    assert within_source_scatter(spread) == pytest.approx(expected)


def test_constants_across_folds_name_the_source_left_out_at_each_end() -> None:
    by_source = {
        "a": {"eff_blackwell": 0.66, "jitter": 0.0},
        "b": {"eff_blackwell": 0.49, "jitter": 0.0},
        "c": {"eff_blackwell": 0.53, "jitter": 0.0},
    }
    folds = constants_across_folds(by_source)
    assert folds["eff_blackwell"] == {"min": 0.49, "min_without": "b", "max": 0.66, "max_without": "a"}
    assert folds["jitter"]["min"] == folds["jitter"]["max"] == 0.0


def test_the_held_out_folds_of_a_small_corpus_bracket_each_constant(small: Corpus) -> None:
    _, by_source = held_out(prepare(small))
    for name, c in constants_across_folds(by_source).items():
        values = [params[name] for params in by_source.values()]
        assert c["min"] == min(values) <= c["max"] == max(values), name
        assert by_source[c["min_without"]][name] == c["min"] and by_source[c["max_without"]][name] == c["max"]


def test_source_bootstrap_worked_example() -> None:
    # Sources [1, 1] and [5]: a draw of both first sources gives 1, of both second 5, a mixed draw 7/3.
    out = source_bootstrap([[1.0, -1.0], [5.0]])
    assert (out["low"], out["high"]) == (1.0, 5.0)
    assert out["share_at_or_below_target"] == pytest.approx(0.75, abs=0.03)
    assert out["level"] == 0.9 and out["resamples"] == 4_000


def test_one_source_has_no_sampling_spread() -> None:
    out = source_bootstrap([[2.0, -4.0]])
    assert out["low"] == out["high"] == 3.0
    assert out["share_at_or_below_target"] == 1.0


def test_the_source_bootstrap_is_the_same_on_every_call() -> None:
    errors = [[1.5, -2.0], [0.2], [7.0, 3.0, -1.0]]
    assert source_bootstrap(errors) == source_bootstrap(errors)


@given(
    st.lists(
        st.lists(st.floats(-20.0, 20.0, allow_nan=False), min_size=1, max_size=6), min_size=1, max_size=8
    )
)
def test_the_interval_lies_between_the_least_and_the_most_wrong_source(errors: list[list[float]]) -> None:
    out = source_bootstrap(errors, resamples=200)
    means = [sum(abs(e) for e in source) / len(source) for source in errors]
    assert min(means) - 1e-9 <= out["low"] <= out["high"] <= max(means) + 1e-9
    assert 0.0 <= out["share_at_or_below_target"] <= 1.0


def test_the_source_bootstrap_refuses_an_empty_source() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        source_bootstrap([[1.0], []])
    with pytest.raises(ValueError, match="at least one source"):
        source_bootstrap([])
    with pytest.raises(ValueError, match="0 < level < 1"):
        source_bootstrap([[1.0]], level=1.0)
    with pytest.raises(ValueError, match="resamples >= 1"):
        source_bootstrap([[1.0]], resamples=0)


def _held(source: str, log_ratio: float, *, moe: bool = False, gpus: int = 64) -> dict[str, object]:
    return {"source": source, "moe": moe, "gpus": gpus, "held_out": {"log_ratio": log_ratio}}


def test_a_source_far_from_the_rest_lies_outside_the_band_fitted_without_it() -> None:
    ratios = [-0.02, -0.01, 0.0, 0.01, 0.02, 1.0]
    out = range_coverage([_held(f"s{i}", r) for i, r in enumerate(ratios)])
    # the five near zero each sit inside the band of the others (the far source widens it); the far one above
    assert out["above"] == pytest.approx(1 / 6)
    assert out["inside"] == pytest.approx(5 / 6) and out["below"] == 0.0
    assert out["nominal"] == 0.8
    assert set(out["by_kind"]) == {"dense"} and out["by_kind"]["dense"]["runs"] == 6


def test_range_coverage_counts_each_run_once_by_kind() -> None:
    runs = [_held(f"d{i}", 0.05 * (i - 3)) for i in range(7)]
    runs += [_held(f"m{i}", -0.3 + 0.1 * i, moe=True, gpus=4_096) for i in range(6)]
    out = range_coverage(runs)
    assert out["inside"] + out["below"] + out["above"] == pytest.approx(1.0)
    assert {k: v["runs"] for k, v in out["by_kind"].items()} == {"dense": 7, "moe": 6}
    for kind in out["by_kind"].values():
        assert kind["inside"] + kind["below"] + kind["above"] == pytest.approx(1.0)


def test_a_source_whose_others_are_too_few_for_a_class_is_not_checked() -> None:
    out = range_coverage([_held("a", 0.1), _held("b", 0.2)])
    assert out["runs"] == 0 and out["inside"] is None and out["by_kind"] == {}
    # b is checked against a's five runs; a has only b's one
    six = range_coverage([*(_held("a", 0.05 * i) for i in range(5)), _held("b", 0.2)])
    assert six["runs"] == 1 and six["by_kind"]["dense"]["runs"] == 1


def test_the_band_is_the_reports_mean_plus_or_minus_its_z_sigmas() -> None:
    # One source of five runs off by +0.2 on average; a new source's run is checked against their class
    # (mean + P90_Z x stdev either side), and the five are not checked (the new source alone is too few).
    others = [0.1, 0.15, 0.2, 0.25, 0.3]
    mean, sigma = statistics.fmean(others), statistics.stdev(others)
    base = [_held("a", r) for r in others]
    for ratio, expected in (
        (mean + P90_Z * sigma * 0.99, "inside"),
        (mean + P90_Z * sigma * 1.01, "above"),
        (mean - P90_Z * sigma * 0.99, "inside"),
        (mean - P90_Z * sigma * 1.01, "below"),
        (0.25, "inside"),  # inside the band about +0.2, outside one about 0
    ):
        out = range_coverage([*base, _held("new", ratio)])
        assert out["runs"] == 1 and out[expected] == 1.0, (ratio, expected, out)


def test_the_share_inside_carries_its_interval_over_the_sources() -> None:
    runs = [_held(f"d{i}", 0.05 * (i - 3)) for i in range(7)]
    runs += [_held("far", 1.0), _held("far", 1.1)]
    out = range_coverage(runs)
    low, high = out["inside_interval"]
    assert low <= out["inside"] <= high
    # a draw of only "far" has none inside, a draw without it all: the interval spans most of [0, 1]
    assert low < 0.8 and high == 1.0
    # one source checked: no spread to draw from
    one = range_coverage([*(_held("a", 0.05 * i) for i in range(5)), _held("b", 0.2)])
    assert one["inside_interval"] == [1.0, 1.0]


def test_the_fit_starts_each_family_at_the_hand_efficiency_all_its_members_share() -> None:
    """``fit.START`` takes a family's start from its members' hand calibration, one figure per family: a member
    with another figure would be overwritten silently, so every member must have the same one."""
    for family in FAMILIES:
        figures = {COMPUTE_EFFICIENCY[key][0] for key, f in EFFICIENCY_FAMILY.items() if f == family}
        assert figures == {fit_module.START[f"eff_{family}"]}, (family, figures)


def test_gb300_has_its_own_fitted_efficiency_and_stays_a_blackwell_part() -> None:
    """GB300's efficiency is its own family's (``EFFICIENCY_FAMILY``), while its architecture, which the attention
    kernels' benchmarks and the envelope go by, stays Blackwell (``FAMILY``); every other accelerator's efficiency
    family is its architecture."""
    assert family_of("gb300") == family_of("gb200") == "blackwell"
    assert efficiency_family_of("gb300") == "blackwell_ultra" != efficiency_family_of("gb200")
    assert efficiency_family_of(str(ACCELERATORS["gb300"]["name"])) == "blackwell_ultra"
    assert {key: f for key, f in EFFICIENCY_FAMILY.items() if key != "gb300"} == {
        key: f for key, f in FAMILY.items() if key != "gb300"
    }
    assert set(FAMILIES) == set(FITTED["compute_efficiency"])
    table = FITTED["compute_efficiency"]
    assert family_efficiency(efficiency_family_of("gb300") or "") == table["blackwell_ultra"]
    assert family_efficiency(efficiency_family_of("gb200") or "") == table["blackwell"]
    assert efficiency_family_of("b200") == "blackwell" and efficiency_family_of("mi300x") is None


def test_the_effect_constants_are_one_table() -> None:
    """Every fitted constant has a unit, is a field of ``EffectsSpec`` (whose default is the neutral value the fit's
    hand calibration uses) and is in the written calibration; the parser gives the effects the written values."""
    spec_fields = {f.name for f in dataclasses.fields(EffectsSpec)}
    assert set(CONSTANTS) <= spec_fields and set(CONSTANT_UNITS) == set(CONSTANTS)
    assert set(fit_module.NEUTRAL) == set(CONSTANTS) == set(FITTED["constants"])
    assert (
        fit_module.NEUTRAL["attention_rate_factor"] == fit_module.NEUTRAL["expert_kernel_padded_share"] == 1.0
    )
    fx = resolve(load_example("quickstart-llama3-8b-64xh100.yaml")).training.effects
    assert {name: getattr(fx, name) for name in CONSTANTS} == {n: fitted_constant(n) for n in CONSTANTS}
