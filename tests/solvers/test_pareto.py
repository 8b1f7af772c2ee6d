"""Pareto fronts: exact against brute force (ties and duplicates included), for 2 and 3 objectives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from solvers.errors import ScenarioError
from solvers.pareto import pareto_indices, pareto_mask
from tests.profiles import examples


def brute_force(values: np.ndarray) -> np.ndarray:
    """Row i is kept unless another row j is <= everywhere and (< somewhere, or equal and earlier): all
    pairs at once, independent of the sort-and-sweep under test."""
    n = values.shape[0]
    le = np.all(values[:, None, :] <= values[None, :, :], axis=2)  # le[j, i]: row j <= row i
    lt = np.any(values[:, None, :] < values[None, :, :], axis=2)
    earlier = np.arange(n)[:, None] < np.arange(n)[None, :]
    removes = le & (lt | earlier) & ~np.eye(n, dtype=bool)
    return ~np.any(removes, axis=0)


def test_docstring_example() -> None:
    values = np.array([[1.0, 5.0], [2.0, 3.0], [3.0, 4.0], [2.0, 3.0]])
    assert pareto_mask(values).tolist() == [True, True, False, False]
    assert pareto_indices(values).tolist() == [0, 1]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.integers(min_value=2, max_value=3).flatmap(
        lambda k: arrays(
            np.float64, st.tuples(st.integers(0, 40), st.just(k)), elements=st.integers(0, 6).map(float)
        )
    )
)
def test_equals_brute_force_with_ties(values: np.ndarray) -> None:
    assert pareto_mask(values).tolist() == brute_force(values).tolist()


@pytest.mark.parametrize("k", [2, 3])
def test_large_random_front_is_exact_and_mutually_non_dominated(k: int) -> None:
    rng = np.random.default_rng(k)
    x = rng.random(3_000)
    # an anti-correlated cloud gives a large front, the hard case for the sweep
    cols = [x, 1.0 / (x + 0.01) + rng.random(3_000) * 0.5]
    if k == 3:
        cols.append(rng.random(3_000))
    values = np.column_stack(cols)
    mask = pareto_mask(values)
    assert mask.tolist() == brute_force(values).tolist()
    front = values[mask]
    rest = values[~mask]
    # every point off the front is weakly dominated by a front point
    assert np.all(np.any(np.all(front[:, None, :] <= rest[None, :, :], axis=2), axis=0))


def test_indices_are_ordered_by_the_first_objective() -> None:
    values = np.array([[3.0, 1.0, 1.0], [1.0, 3.0, 2.0], [2.0, 2.0, 3.0], [4.0, 4.0, 4.0]])
    assert pareto_indices(values).tolist() == [1, 2, 0]


def test_bad_shapes_and_values_raise_with_a_path() -> None:
    with pytest.raises(ScenarioError) as info:
        pareto_mask(np.zeros((3, 4)))
    assert info.value.first.path == "pareto"
    with pytest.raises(ScenarioError):
        pareto_mask(np.array([[1.0, np.nan]]))
    assert pareto_mask(np.zeros((0, 2))).tolist() == []
