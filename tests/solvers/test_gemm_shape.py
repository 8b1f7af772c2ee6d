"""The matrix-shape curve's d_half comes from published kernel benchmarks (``solvers.gemm_shape``), and the
calibration holds the value that fit gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import effects
from solvers.catalog.fitted import FITTED_FILE
from solvers.fit import kernel_constants
from solvers.gemm_shape import MAX_HALF, ShapeFit, fit_shape_half_dim, load_kernel_sources


@pytest.fixture(scope="module")
def shape_fit() -> ShapeFit:
    return fit_shape_half_dim(load_kernel_sources())


def test_the_calibration_holds_the_kernel_fit(shape_fit: ShapeFit) -> None:
    """A change to ``corpus/kernels/`` or to the shape curve without ``python -m solvers fit`` fails here."""
    calibration = json.loads(FITTED_FILE.read_text(encoding="utf-8"))
    assert (
        calibration["constants"]["shape_half_dim"] == shape_fit.d_half == kernel_constants()["shape_half_dim"]
    )
    assert calibration["shape_half_dim_fit"]["plateau_tflops"] == shape_fit.plateau_tflops
    assert calibration["shape_half_dim_fit"]["rms_log_error"] == shape_fit.rms_log_error


def test_deepgemm_fit_is_inside_its_range_and_describes_the_table(shape_fit: ShapeFit) -> None:
    """Measured: d_half 99.8 and a plateau of 1,127 TFLOPS (57% of the H800's FP8 peak) over DeepGEMM's 28
    rows; the log error is 0.24 rms, at most 0.57 (128-row GEMMs the curve puts too fast: 128 x 2,112 fills
    17 of the H800's 132 SMs and 128 x 32,768 x 512 has a short K; the curve has neither wave quantisation
    nor a term in K alone)."""
    (source,) = load_kernel_sources()
    assert 0.0 < shape_fit.d_half < MAX_HALF and shape_fit.rows == len(source.tflops) == 28
    plateau = shape_fit.plateau_tflops[source.id]
    assert 0.2 * source.peak_tflops < plateau < source.peak_tflops
    errors = np.log(source.predicted_tflops(plateau, shape_fit.d_half) / source.tflops)
    assert math.isclose(float(np.sqrt(np.mean(errors**2))), shape_fit.rms_log_error, abs_tol=1e-4)
    assert float(np.max(np.abs(errors))) < math.log(2.0)


def test_the_fit_is_the_minimum_of_its_cost(shape_fit: ShapeFit) -> None:
    """Moving d_half away from the fitted value (each plateau refitted) never lowers the error."""
    sources = load_kernel_sources()

    def rms(d_half: float) -> float:
        total, rows = 0.0, 0
        for s in sources:
            best = min(
                float(np.sum(np.log(s.predicted_tflops(p, d_half) / s.tflops) ** 2))
                for p in np.geomspace(0.2 * s.peak_tflops, s.peak_tflops, 301)
            )
            total, rows = total + best, rows + len(s.tflops)
        return math.sqrt(total / rows)

    at_fit = rms(shape_fit.d_half)
    for delta in (-40.0, -10.0, 10.0, 40.0):
        assert rms(max(shape_fit.d_half + delta, 0.0)) >= at_fit - 1e-3


@settings(max_examples=60, deadline=None)
@given(
    tiles=st.integers(min_value=1, max_value=64),
    n=st.integers(min_value=1, max_value=64),
    k=st.integers(min_value=1, max_value=64),
)
def test_more_rows_never_lower_a_gemms_share(tiles: int, n: int, k: int) -> None:
    """On whole tiles the shape factor grows with the narrowest dimension, toward 1."""
    half = kernel_constants()["shape_half_dim"]
    small = effects.gemm_shape_factor(rows=128.0 * tiles, cols=128.0 * n, inner=128.0 * k, half=half)
    large = effects.gemm_shape_factor(rows=128.0 * (tiles + 1), cols=128.0 * n, inner=128.0 * k, half=half)
    assert 0.0 < small <= large <= 1.0


_H800 = "source: {id: x, accelerator: h800-sxm, precision: fp8}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must be a mapping"),
        ("source: {accelerator: h800-sxm, precision: fp8}\nrows: [[1, 64, 64, 64, 1]]\n", "source.id"),
        (
            "source: {id: x, accelerator: a100-sxm-80gb, precision: fp8}\nrows: [[1, 64, 64, 64, 1]]\n",
            "no fp8 peak",
        ),
        (_H800 + "rows: [[1, 64, 2112, 7168]]\n", r"rows\[0\] must be"),
        (_H800 + "rows: [[1, 64, a, 7168, 5]]\n", r"rows\[0\] must be"),
        (_H800 + "rows: [[1, 64, 64, 64, 9000]]\n", "more than the fp8 peak"),
    ],
)
def test_a_malformed_table_names_its_file_and_rule(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.yaml").write_text(text, "utf-8")
    with pytest.raises(ValueError, match=r"corpus/kernels/bad.yaml: .*" + message):
        load_kernel_sources(tmp_path)
