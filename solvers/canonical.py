"""Canonical JSON and the input hash of a resolved scenario.

The canonical form is JSON with sorted keys, no insignificant whitespace, UTF-8, and numbers normalised so
that equal values print equally: a float that holds an integer (405e9, 1.0) prints as that integer, other
floats use Python's shortest round-trip repr. Labels that do not change a single number (``name``,
``description``) are left out of the hash, so renaming a plan keeps its results.

Example: ``canonical_json({"b": 1.0, "a": [2, 0.5]}) == '{"a":[2,0.5],"b":1}'``.

The text is the standard library's ``json`` with ``sort_keys``, compact separators and ``ensure_ascii=False``:
that encoder defines it. orjson writes the same bytes about ten times faster for every document except three
kinds, for which the standard encoder writes the text: a float between 1e-10 and 1e-4 in magnitude (orjson
writes ``0.00001`` or ``1.5e-7`` where ``repr`` writes ``1e-05`` or ``1.5e-07``; its text then holds ``0.0000``
or a digit, ``e-`` and a digit, which is how this module tells), an integer beyond 64 bits, and a string that
UTF-8 cannot encode (a lone surrogate). The equality is a property test (``tests/solvers/test_canonical.py``)
over random floats, strings and nested documents.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import orjson

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
            # _normalise_float written out (a resolved scenario has about forty floats): an integral float
            # as its int; a NaN or an infinity is the one float whose difference with itself is not zero
            if item.is_integer():
                if -_MAX_EXACT_INT < item < _MAX_EXACT_INT:
                    item = int(item)
            elif item - item:
                item = _normalise_float(item)  # raises, naming the value
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
_ORJSON_SORTED = orjson.OPT_SORT_KEYS
# orjson's text of a float in [1e-10, 1e-4) in magnitude, the one number it writes unlike ``repr``, matches this
# (a string may match too: its document then takes the standard encoder, which is always right).
_SMALL_EXPONENT = re.compile(rb"\de-\d")


def _may_hold_a_small_float(text: bytes) -> bool:
    # substring tests first: a regular expression over the whole text costs ten times the encoding
    return b"0.0000" in text or (b"e-" in text and _SMALL_EXPONENT.search(text) is not None)


def _canonical_bytes(normalised: Any) -> bytes:
    """UTF-8 of the standard encoder's text of a normalised document (see the module's docstring)."""
    try:
        text = orjson.dumps(normalised, option=_ORJSON_SORTED)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits or a lone surrogate
        text = None
    # orjson refused it, or its text may hold a small float (or a string with the mark): the reference text
    if text is None or _may_hold_a_small_float(text):
        return _ENCODER.encode(normalised).encode("utf-8")
    return text


def canonical_json(document: Any, *, drop_labels: bool = False) -> str:
    """Deterministic JSON text of ``document`` (sorted keys, compact, integral floats as integers)."""
    normalised = _normalise(document, drop_labels)
    try:
        return _canonical_bytes(normalised).decode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the standard encoder's text, which UTF-8 cannot hold
        return _ENCODER.encode(normalised)


def canonical_hash(document: Any) -> str:
    """Hex SHA-256 of the canonical JSON of a resolved scenario document, labels left out."""
    return hashlib.sha256(_canonical_bytes(_normalise(document, True))).hexdigest()
