"""The plain-JSON checks on the path of every report: exact types, no NaN or infinity."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solvers.plain import all_plain_finite, has_non_finite

INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("value", "plain_finite"),
    [
        ({"a": [1.0, "x"]}, True),
        ([1.0, None, True, 3, "s"], True),
        (1.0, True),
        ("x", True),
        ([NAN], False),
        (INF, False),
        ({"a": {"b": [INF, -INF]}}, False),  # their sum is NaN
        ([1e308, 1e308], True),  # finite values whose sum overflows
        ([[1e308], [1e308]], True),
        ({"x": -1e308, "y": [-1e308, NAN]}, False),
        ([1e308, 1e308, INF], False),
        ([np.float32(1)], False),
        (np.float64(1.0), False),
        ([object()], False),
    ],
)
def test_all_plain_finite(value: Any, plain_finite: bool) -> None:
    assert all_plain_finite(value) is plain_finite


@pytest.mark.parametrize(
    ("value", "non_finite"),
    [
        ({"a": [1.0, INF]}, True),
        ((np.float32("nan"),), True),
        ([np.float64(1.0), "x", None], False),
        ([1e308, 1e308], False),
    ],
)
def test_has_non_finite(value: Any, non_finite: bool) -> None:
    assert has_non_finite(value) is non_finite
