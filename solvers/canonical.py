"""Canonical JSON and the input hash of a resolved scenario.

The canonical form is JSON with sorted keys, no insignificant whitespace, UTF-8, and numbers normalised so
that equal values print equally: a float that holds an integer (405e9, 1.0) prints as that integer, other
floats use Python's shortest round-trip repr. Labels that do not change a single number (``name``,
``description``) are left out of the hash, so renaming a plan keeps its results.

Example: ``canonical_json({"b": 1.0, "a": [2, 0.5]}) == '{"a":[2,0.5],"b":1}'``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from solvers.errors import SolverInternalError

LABEL_KEYS: frozenset[str] = frozenset({"name", "description"})
_MAX_EXACT_INT = 2**53
_INF = math.inf


def _normalise(value: Any, drop_labels: bool) -> Any:
    kind = type(value)
    if kind is dict:
        return _normalise_dict(value, drop_labels)
    if kind is float:
        return _normalise_float(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is list or kind is tuple:
        return _normalise_list(value, drop_labels)
    return _normalise_other(value, drop_labels)


def _normalise_float(value: float) -> float | int:
    if value != value or value in (_INF, -_INF):
        raise SolverInternalError(f"non-finite number in a canonical document: {value!r}")
    if value.is_integer() and -_MAX_EXACT_INT < value < _MAX_EXACT_INT:
        return int(value)
    return value


# Leaves are dispatched inline (no call per string, int or bool): a resolved scenario has about a hundred
# of them, and this walk runs once per report.
def _normalise_dict(value: dict[Any, Any], drop_labels: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if drop_labels and key in LABEL_KEYS:
            continue
        kind = type(item)
        if kind is float:
            item = _normalise_float(item)
        elif kind is dict:
            item = _normalise_dict(item, drop_labels)
        elif not (kind is str or kind is int or kind is bool or item is None):
            item = _normalise(item, drop_labels)
        out[key if type(key) is str else str(key)] = item
    return out


def _normalise_list(value: list[Any] | tuple[Any, ...], drop_labels: bool) -> list[Any]:
    out: list[Any] = []
    for item in value:
        kind = type(item)
        if kind is float:
            item = _normalise_float(item)
        elif not (kind is str or kind is int or kind is bool or item is None):
            item = _normalise(item, drop_labels)
        out.append(item)
    return out


def _normalise_other(value: Any, drop_labels: bool) -> Any:
    if isinstance(value, dict):
        return _normalise_dict(dict(value), drop_labels)
    if isinstance(value, list | tuple):
        return _normalise_list(list(value), drop_labels)
    for base in (bool, int, float, str):  # subclasses such as numpy.float64 or IntEnum
        if isinstance(value, base):
            return _normalise(base(value), drop_labels)
    if hasattr(value, "item"):  # numpy scalar
        return _normalise(value.item(), drop_labels)
    kind = type(value)
    raise SolverInternalError(f"value of type {kind.__name__} cannot be canonicalised")


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(document: Any, *, drop_labels: bool = False) -> str:
    """Deterministic JSON text of ``document`` (sorted keys, compact, integral floats as integers)."""
    return _ENCODER.encode(_normalise(document, drop_labels))


def canonical_hash(document: Any) -> str:
    """Hex SHA-256 of the canonical JSON of a resolved scenario document, labels left out."""
    return hashlib.sha256(canonical_json(document, drop_labels=True).encode("utf-8")).hexdigest()


# ``canonical_hash_unlabelled`` reads the canonical text off the C encoder's: with the keys sorted, the two
# texts differ only where a float holds an integer, which Python prints as "<digits>.0" below 1e16 (and in
# exponent form above, as the canonical text keeps it). A float's repr has ".0" right before a comma or a
# closing bracket only then, and nothing else in such a document does: it has no labels and no "." in a string.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_SORTED_ASCII = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_hash_unlabelled(document: dict[str, Any]) -> str:
    """``canonical_hash(document)``, the same value without the Python walk, for a document of exact JSON types
    (dicts with str keys, lists, str, int, float, bool, None) that holds no label (``name``, ``description``)
    at any depth and no "." inside a string: a resolved scenario without its labels, whose other strings are
    keys and choices of the field table (``tests/solvers/test_canonical.py`` holds both conditions).

    What the text shows is checked, and such a document takes ``canonical_hash``'s walk: a non-finite number,
    a label, a character beyond ASCII, minus zero (the integer 0), or an integral float of 16 digits (an
    integer below 2**53, a float above).

    Example: ``canonical_hash_unlabelled({"b": 1.0, "a": [0.5]}) == canonical_hash({"a": [0.5], "b": 1})``.
    """
    try:
        data = _SORTED_ASCII.encode(document).encode("ascii")
    except (ValueError, TypeError):  # the walk names the non-finite number or the unknown type
        return canonical_hash(document)
    if (
        b"-0.0" in data
        or b"\\u" in data
        or b'"name":' in data
        or b'"description":' in data
        or b"0000000000000000.0" in data.translate(_DIGITS_AS_ZERO)
    ):
        return canonical_hash(document)
    return hashlib.sha256(data.replace(b".0,", b",").replace(b".0]", b"]").replace(b".0}", b"}")).hexdigest()
