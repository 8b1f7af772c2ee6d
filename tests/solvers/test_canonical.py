"""Canonical JSON and the input hash."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.canonical import _normalise, canonical_hash, canonical_json
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


# The reference text: the standard library's encoder, as the module's docstring defines it.
_REFERENCE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_LEAVES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-3, max_value=1e-3, allow_nan=False),
    st.integers(-(2**70), 2**70),
    st.text(),
    st.text(alphabet='0.-e+1,:[]{}"\\\u2028\x7f\x00'),
    st.booleans(),
    st.none(),
)
_DOCUMENTS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_DOCUMENTS)
def test_the_text_is_the_standard_encoders(document: object) -> None:
    """Whichever encoder writes it, the canonical text is the standard library's (module docstring)."""
    normalised = _normalise(document, False)
    expected = _REFERENCE.encode(normalised)
    assert canonical_json(document) == expected
    try:
        data = expected.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no hash, as before
        with pytest.raises(UnicodeEncodeError):
            canonical_hash(document)
        return
    assert (
        canonical_hash(document)
        == hashlib.sha256(_REFERENCE.encode(_normalise(document, True)).encode()).hexdigest()
    )
    assert canonical_hash(document) != hashlib.sha256(data + b" ").hexdigest()


def test_small_floats_and_big_integers_print_as_the_standard_encoder_writes_them() -> None:
    assert canonical_json({"a": 1e-05, "b": 2.5e-07, "c": 2**70, "d": "0.0000"}) == (
        '{"a":1e-05,"b":2.5e-07,"c":1180591620717411303424,"d":"0.0000"}'
    )
