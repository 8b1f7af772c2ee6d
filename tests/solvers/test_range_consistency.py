"""Ranges agree with each other: a figure that only the step time moves has the step time's quantiles
(``solvers.ranges``, stratified draws; CONVENTIONS.md "Ranges")."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from solvers import solve

QUANTILES: tuple[Literal["p10", "p50", "p90"], ...] = ("p10", "p50", "p90")


def _no_failures(preset: str, gpus: int, tokens: float) -> dict[str, Any]:
    """A run whose components practically never fail: goodput within 1e-5 of one in every sample, so its
    wall clock is the number of steps times the step time."""
    return {
        "model": {"preset": preset},
        "cluster": {
            "node": "dgx-h100",
            "gpus": gpus,
            "reliability": {"gpu_mttf_h": 1e9, "nic_mttf_h": 1e9, "psu_mttf_h": 1e9},
        },
        "training": {"layout": "auto", "total_tokens": tokens},
    }


@pytest.mark.parametrize(
    ("preset", "gpus"),
    [("llama3-8b", 64), ("mixtral-8x7b", 256)],
)
def test_wall_clock_range_is_the_step_range_when_failures_are_negligible(preset: str, gpus: int) -> None:
    """With goodput fixed at one, wall clock = steps x step time sample by sample, so each of its quantiles is
    the step time's quantile times steps: p50 of the wall clock is the point moved by the class mean, as the
    step's p50 is, and p10 and p90 use the same slow and fast steps."""
    report = solve(_no_failures(preset, gpus, 1e11))
    goodput = report["ranges"]["reliability.goodput"]
    assert goodput["p10"] > 1 - 1e-4  # the premise: failures move nothing
    step, wall = report["ranges"]["step.step_s"], report["ranges"]["schedule.wall_clock_days"]
    point_step, point_wall = report["step"]["step_s"], report["schedule"]["wall_clock_days"]
    for q in QUANTILES:
        assert wall[q] / point_wall == pytest.approx(step[q] / point_step, rel=1e-3), q


def test_wall_clock_p50_sits_above_the_point_as_the_step_p50_does() -> None:
    """With failures negligible and the step the dominant uncertainty of time, the p50 of the wall clock
    lies on the same side of the point as the step's p50 (above it: the class mean is positive)."""
    report = solve(_no_failures("llama3-8b", 64, 1e11))
    mean = report["ranges_method"]["step_residual"]["mean"]
    assert mean > 0
    assert report["ranges"]["step.step_s"]["p50"] > report["step"]["step_s"]
    assert report["ranges"]["schedule.wall_clock_days"]["p50"] > report["schedule"]["wall_clock_days"]
