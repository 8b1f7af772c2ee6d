"""The plain-JSON checks on the path of every report: exact types, no NaN or infinity, read-only entries."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import numpy as np
import pytest

from solvers.plain import (
    ReadOnlyDict,
    all_plain_finite,
    fresh_entries,
    has_non_finite,
    plain_key,
    read_only_entries,
)

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
        ({"a": ReadOnlyDict({"v": 2.0})}, True),
        ({"a": ReadOnlyDict({"v": NAN})}, False),
        ([object()], False),
    ],
)
def test_all_plain_finite(value: Any, plain_finite: bool) -> None:
    assert all_plain_finite(value) is plain_finite


def test_read_only_entries_are_shared_and_refuse_changes() -> None:
    entry = ReadOnlyDict({"key": "k", "value": 1.0, "unit": "", "source": "s"})
    for change in (
        lambda: entry.__setitem__("value", 2.0),
        lambda: entry.__delitem__("key"),
        lambda: entry.update(value=2.0),
        lambda: entry.pop("key"),
        lambda: entry.popitem(),
        lambda: entry.setdefault("new", 1),
        lambda: entry.clear(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert entry == {"key": "k", "value": 1.0, "unit": "", "source": "s"}
    assert json.loads(json.dumps(entry)) == entry
    assert type(pickle.loads(pickle.dumps(entry))) is ReadOnlyDict
    assert copy.copy(entry) is entry and type(copy.deepcopy(entry)) is ReadOnlyDict
    editable = entry.copy()
    editable["value"] = 2.0
    assert type(editable) is dict and entry["value"] == 1.0
    assert plain_key(entry) is None  # not an exact dict: never a cache key


def test_list_valued_entries_are_fresh_for_every_caller() -> None:
    shared, containers = read_only_entries([{"key": "a", "value": 1.0}, {"key": "b", "value": [1.0, 2.0]}])
    assert containers == (1,)
    first, second = fresh_entries(shared, containers), fresh_entries(shared, containers)
    assert first[0] is second[0] is shared[0]
    first[1]["value"].append(3.0)
    assert second[1]["value"] == [1.0, 2.0] and shared[1]["value"] == [1.0, 2.0]


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
