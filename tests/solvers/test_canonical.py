"""Canonical JSON and the input hash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.canonical import canonical_hash, canonical_json
from solvers.errors import SolverInternalError


def test_key_order_and_whitespace_do_not_matter() -> None:
    a = {"b": 1, "a": {"y": [1, 2], "x": "s"}}
    b = {"a": {"x": "s", "y": [1, 2]}, "b": 1}
    assert canonical_json(a) == canonical_json(b) == '{"a":{"x":"s","y":[1,2]},"b":1}'
    assert canonical_hash(a) == canonical_hash(b)


def test_integral_floats_print_as_integers() -> None:
    assert canonical_json({"p": 405e9, "q": 1.0, "r": 0.5}) == '{"p":405000000000,"q":1,"r":0.5}'
    assert canonical_hash({"x": 1}) == canonical_hash({"x": 1.0})


def test_labels_do_not_change_the_hash_but_values_do() -> None:
    base = {"name": "a", "model": {"name": "m", "layers": 2}}
    renamed = {"name": "b", "description": "d", "model": {"name": "n", "layers": 2}}
    assert canonical_hash(base) == canonical_hash(renamed)
    assert canonical_hash(base) != canonical_hash({"model": {"layers": 3}})


def test_hash_is_sha256_hex() -> None:
    value = canonical_hash({})
    assert len(value) == 64 and int(value, 16) >= 0
    # sha256 of "{}"
    assert value == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_an_internal_error(bad: float) -> None:
    with pytest.raises(SolverInternalError):
        canonical_json({"x": [1, bad]})


def test_unsupported_types_are_an_internal_error() -> None:
    with pytest.raises(SolverInternalError):
        canonical_json({"x": object()})


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([-0.0, 2.0**53, 2.0**53 - 1, -(2.0**53), 1e16, 0.5]),
        st.integers(-(2**60), 2**60).map(float),
    )
)
def test_a_float_in_an_object_prints_as_in_a_list(value: float) -> None:
    """Objects normalise their floats inline, lists through ``_normalise_float``: the same text."""
    assert canonical_json({"x": value}) == '{"x":' + canonical_json([value])[1:-1] + "}"
