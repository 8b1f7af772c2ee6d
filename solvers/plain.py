"""Is a JSON-like value plain (dicts, lists, str, int, bool, None and floats) and free of NaN and infinity?

A report must hold only values ``json.dumps`` writes as standard JSON: python scalars (no numpy scalars) and
finite floats. This walk is on the path of every report, so it is written for speed (exact type checks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

_PLAIN_LEAVES = (str, int, bool, type(None))
_EXACT = frozenset({str, int, float, bool, type(None)})
_ISFINITE = math.isfinite


def all_plain_finite(value: Any) -> bool:
    """True when ``value`` holds only dicts, lists, tuples, strings, ints, bools, None and finite floats.

    Example: ``all_plain_finite({"a": [1.0, "x"]})`` is True; ``all_plain_finite([float("nan")])`` and
    ``all_plain_finite([numpy.float32(1)])`` are False.
    """
    total = _plain_sum(value)
    if total is None:
        return False
    # A NaN or an infinity makes the sum of all floats NaN or infinite; a finite sum clears them all. Only a
    # sum that overflows (or a true NaN/infinity) takes the exact walk.
    return total - total == 0.0 or not has_non_finite(value)


def _plain_sum(value: Any) -> float | None:
    """The sum of every float in a plain JSON-like value, or None when it holds anything else."""
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind is float:
        return float(value)
    else:
        return 0.0 if kind in _PLAIN_LEAVES else None
    total = 0.0
    for item in items:
        kind = type(item)
        if kind is float:
            total += item
        elif kind is dict or kind is list or kind is tuple:
            inner = _plain_sum(item)
            if inner is None:
                return None
            total += inner
        elif kind not in _PLAIN_LEAVES:
            return None
    return total


def has_non_finite(value: Any) -> bool:
    """True when a NaN or an infinity (a python or numpy float) is anywhere in ``value`` (dicts, lists,
    tuples). Example: ``has_non_finite({"a": [1.0, float("inf")]})`` is True."""
    if isinstance(value, dict):
        return any(has_non_finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(has_non_finite(item) for item in value)
    return isinstance(value, float | np.floating) and not _ISFINITE(value)


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
