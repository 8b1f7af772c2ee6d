"""Canonical JSON and the input hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import resolve
from solvers.canonical import LABEL_KEYS, canonical_hash, canonical_hash_unlabelled, canonical_json
from solvers.cli import load_yaml
from solvers.errors import SolverInternalError
from solvers.inputs import fields

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


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


# Documents that meet ``canonical_hash_unlabelled``'s conditions (exact JSON types, no label, no "." in a
# string), with floats of every kind: integral ones around 2**53 and 1e16, minus zero, long fractions.
_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0**53, 2.0**53 - 2, -(2.0**53), 1e15, 1e16, 9.99e15, 1e22, 0.1]),
    st.integers(-(2**60), 2**60).map(float),
)
_TEXT = st.text(alphabet="abz_019 ,]}:[{", max_size=6)
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), _FLOATS, _TEXT)
_DOCUMENTS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_TEXT, _DOCUMENTS, max_size=6))
def test_the_unlabelled_hash_is_the_hash(document: dict[str, Any]) -> None:
    assert canonical_hash_unlabelled(document) == canonical_hash(document)


@pytest.mark.parametrize(
    "document",
    [{"name": "x", "a": 1.0}, {"a": {"description": 2.0}}, {"a": "é", "b": 2.0}, {"a": -0.0}],
)
def test_what_the_unlabelled_hash_does_not_cover_takes_the_walk(document: dict[str, Any]) -> None:
    assert canonical_hash_unlabelled(document) == canonical_hash(document)


def test_the_unlabelled_hash_refuses_non_finite_numbers() -> None:
    with pytest.raises(SolverInternalError):
        canonical_hash_unlabelled({"a": [1.0, float("nan")]})


def test_a_resolved_document_meets_the_unlabelled_hash_conditions() -> None:
    """Besides its labels (every free-text field of the table is one), a resolved document's strings are
    keys and choices of the field table, and none holds a "."."""
    assert {row.name for row in fields.TABLE.rows if row.kind == "text"} == LABEL_KEYS
    for row in fields.TABLE.rows:
        assert "." not in row.name and all("." not in choice for choice in row.choices), row.path
    assert len(EXAMPLES) > 20
    for path in EXAMPLES:
        held = resolve(load_yaml(path.read_text(encoding="utf-8")))
        assert held.input_hash == canonical_hash(held.document), path.name
