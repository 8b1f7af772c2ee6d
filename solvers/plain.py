"""Is a JSON-like value plain (dicts, lists, str, int, bool, None and floats) and free of NaN and infinity?

A report must hold only values ``json.dumps`` writes as standard JSON: python scalars (no numpy scalars) and
finite floats. This walk is on the path of every report, so it is written for speed (exact type checks).
"""

from __future__ import annotations

import io
import math
import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np

_PLAIN_LEAVES = (str, int, bool, type(None))
_ISFINITE = math.isfinite


def all_plain_finite(value: Any) -> bool:
    """True when ``value`` holds only dicts, lists, tuples, strings, ints, bools, None and finite floats.

    Example: ``all_plain_finite({"a": [1.0, "x"]})`` is True; ``all_plain_finite([float("nan")])`` and
    ``all_plain_finite([numpy.float32(1)])`` are False.
    """
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind is float:
        return _ISFINITE(value)
    else:
        return kind in _PLAIN_LEAVES
    for item in items:
        kind = type(item)
        if kind is float:
            if not _ISFINITE(item):
                return False
        elif kind is dict or kind is list or kind is tuple:
            if not all_plain_finite(item):
                return False
        elif kind not in _PLAIN_LEAVES:
            return False
    return True


def to_plain(value: Any) -> Any:
    """``value`` with exact python types: numpy scalars as python scalars, tuples as lists, subclasses of
    str, int, float, dict and list (a ``StrEnum``, a template-safe string) as their base type.

    Example: ``to_plain((numpy.float64(1.5), "x"))`` is ``[1.5, "x"]``. Non-finite floats stay as they are
    (``all_plain_finite`` is the check).
    """
    kind = type(value)
    if kind in _EXACT:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


_EXACT = frozenset({str, int, float, bool, type(None)})


class _PlainPickler(pickle.Pickler):
    """Pickles exact JSON-like types only. ``reducer_override`` sees every object that is not an exact dict,
    list, tuple, str, int, float, bool or None (subclasses, Mappings and numpy scalars included) and refuses
    it, so an object that pickles by reference or by its own ``__reduce__`` never becomes a key."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain


class _NotPlain(Exception):
    pass


def plain_key(value: Any) -> bytes | None:
    """A cache key for ``value`` when it is made of exact JSON-like types, else None (do not cache).

    Equal keys mean equal content of equal types: pickle tells 1, 1.0, True and -0.0 apart. A reordered dict
    gives another key (a miss, never a wrong hit).
    """
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except (_NotPlain, pickle.PicklingError, RecursionError, TypeError):
        return None
    return buffer.getvalue()
