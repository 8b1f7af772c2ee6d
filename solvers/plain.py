"""Is a JSON-like value plain (dicts, lists, str, int, bool, None and floats) and free of NaN and infinity?

A report must hold only values ``json.dumps`` writes as standard JSON: python scalars (no numpy scalars) and
finite floats. This walk is on the path of every report, so it is written for speed (exact type checks).
"""

from __future__ import annotations

import io
import math
import pickle
import threading
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
    total = _plain_sum(value)
    if total is None:
        return False
    # A NaN or an infinity makes the sum of all floats NaN or infinite; a finite sum clears them all. Only a
    # sum that overflows (or a true NaN/infinity) takes the exact walk.
    return total - total == 0.0 or not has_non_finite(value)


def _plain_sum(value: Any) -> float | None:
    """The sum of every float in a plain JSON-like value, or None when it holds anything else."""
    kind = type(value)
    if kind is dict or kind is ReadOnlyDict:
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
        elif kind is dict or kind is list or kind is tuple or kind is ReadOnlyDict:
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


_EXACT = frozenset({str, int, float, bool, type(None)})


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes, so that one instance can be shared by every report that carries it.

    The ledger's assumption entries are made once per distinct set of inputs (``solvers.ledger``'s cache)
    and handed to every report as these: a report is ~110 of them, and copying
    each one per report was a tenth of a report's time. Reading is a dict's; ``json`` writes one as an
    object; ``==`` compares by content with any dict; ``copy()`` and ``dict(entry)`` give an ordinary,
    editable dict; ``pickle``, ``copy.copy`` and ``copy.deepcopy`` give a ReadOnlyDict back. Every change
    in place raises ``TypeError``. Hold only immutable values in one (a list value would stay editable).
    Example: ``ReadOnlyDict({"key": "k", "value": 1.0})["value"] = 2.0`` raises TypeError.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a report's assumption entries are shared and read-only; edit a copy: dict(entry)")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        return (ReadOnlyDict, (dict(self),))

    def __copy__(self) -> ReadOnlyDict:
        return self


def read_only_entries(entries: Any) -> tuple[tuple[dict[str, Any], ...], tuple[int, ...]]:
    """Assumption entries as ``ReadOnlyDict``s to share, and the indices of those whose value is a list or a
    dict (``fresh_entries`` gives each of those its own copy every time)."""
    shared: list[dict[str, Any]] = []
    containers: list[int] = []
    for entry in entries:
        if type(entry.get("value")) in (list, dict):  # the cache keeps a copy of its own
            containers.append(len(shared))
            shared.append(ReadOnlyDict({**entry, "value": _json_copy(entry["value"])}))
        else:
            shared.append(entry if type(entry) is ReadOnlyDict else ReadOnlyDict(entry))
    return tuple(shared), tuple(containers)


def fresh_entries(shared: tuple[dict[str, Any], ...], containers: tuple[int, ...]) -> list[dict[str, Any]]:
    """A new list of the shared entries; an entry with a list or dict value is rebuilt around a copy of it,
    so that no caller can change what the next one gets."""
    out = list(shared)
    for i in containers:
        entry = out[i]
        out[i] = ReadOnlyDict({**entry, "value": _json_copy(entry["value"])})
    return out


def _json_copy(value: Any) -> Any:
    """A copy of every dict and list in a JSON-like value (the leaves are immutable and shared)."""
    if type(value) is list:
        return [_json_copy(item) for item in value]
    if type(value) is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    return value


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
    # One pickler and buffer per thread, reused: making them is half the cost of keying a scenario. A dump
    # runs no code of ours but reducer_override (which raises at once), so it is never re-entered.
    state: tuple[io.BytesIO, _PlainPickler] | None = getattr(_PICKLERS, "state", None)
    if state is None:
        buffer = io.BytesIO()
        state = _PICKLERS.state = (buffer, _PlainPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL))
    buffer, pickler = state
    buffer.seek(0)
    buffer.truncate()
    pickler.clear_memo()
    try:
        pickler.dump(value)
    except (_NotPlain, pickle.PicklingError, RecursionError, TypeError):
        _PICKLERS.state = None  # a dump that stopped half-way leaves nothing behind for the next one
        return None
    return buffer.getvalue()


_PICKLERS = threading.local()
