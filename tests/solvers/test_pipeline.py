"""solvers.pipeline: bubble formulas and in-flight microbatches per schedule (module docstring table)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers import pipeline
from solvers.specs import SCHEDULE_CODE


def _bubble(schedule: str, p: int, m: int, v: int = 1, t_mb: float = 3.0, rec: float = 0.0) -> float:
    return float(
        pipeline.bubble_s(
            schedule=np.array([SCHEDULE_CODE[schedule]]),
            pp=np.array([p]),
            microbatches=np.array([m]),
            virtual_stages=np.array([v]),
            microbatch_s=np.array([t_mb]),
            recompute_forward_share=rec,
        )[0]
    )


def test_docstring_worked_example() -> None:
    """p = 16, m = 128, t_mb = 3 (F = 1): 1F1B 45, interleaved v=2 22.5, ZB-H1 15, DualPipe 14."""
    assert _bubble("1f1b", 16, 128) == pytest.approx(45.0)
    assert _bubble("gpipe", 16, 128) == pytest.approx(45.0)
    assert _bubble("interleaved", 16, 128, v=2) == pytest.approx(22.5)
    assert _bubble("zero_bubble", 16, 128) == pytest.approx(15.0)
    assert _bubble("dualpipe", 16, 128) == pytest.approx(14.0)
    f = pipeline.bubble_fraction(bubble_s=np.array([45.0]), compute_s=np.array([128 * 3.0]))
    assert f[0] == pytest.approx(15 / (128 + 15))


def test_no_pipeline_no_bubble() -> None:
    for schedule in SCHEDULE_CODE:
        assert _bubble(schedule, 1, 8) == 0.0


def test_full_recompute_lengthens_b_in_zero_bubble() -> None:
    """ZB-H1: (p-1)(F + B - W) with B = 1 + 1 (recomputed forward): (p-1) x 2F, F = t_mb / 4."""
    assert _bubble("zero_bubble", 16, 64, t_mb=4.0, rec=1.0) == pytest.approx(15 * 2.0)


def test_microbatches_in_flight() -> None:
    codes = np.array([SCHEDULE_CODE[s] for s in ("gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe")])
    got = pipeline.microbatches_in_flight(
        schedule=codes,
        pp=np.full(5, 16),
        microbatches=np.full(5, 64),
        virtual_stages=np.array([1, 1, 2, 1, 1]),
    )
    np.testing.assert_allclose(got, [64, 16, 16 * (1 + 15 / 32), 16, 17])
    single = pipeline.microbatches_in_flight(
        schedule=codes,
        pp=np.ones(5, dtype=np.int64),
        microbatches=np.full(5, 8),
        virtual_stages=np.ones(5, dtype=np.int64),
    )
    np.testing.assert_allclose(single, [8, 1, 1, 1, 1])


def test_parameter_copies_and_sends() -> None:
    codes = np.array([SCHEDULE_CODE["dualpipe"], SCHEDULE_CODE["1f1b"], SCHEDULE_CODE["interleaved"]])
    np.testing.assert_allclose(pipeline.parameter_copies(schedule=codes), [2, 1, 1])
    np.testing.assert_allclose(
        pipeline.pipeline_sends_per_microbatch(schedule=codes, virtual_stages=np.array([1, 1, 4])), [1, 1, 4]
    )
