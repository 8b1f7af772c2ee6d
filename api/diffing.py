"""What changed between two results of one plan: inputs, prices and outputs, field by field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from api.compare import deltas


def flatten(document: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a JSON document by dotted path; lists are leaves (compared whole)."""
    if isinstance(document, Mapping):
        out: dict[str, Any] = {}
        for key, value in document.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: document}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def changes(before: Any, after: Any) -> list[dict[str, Any]]:
    """Every path whose value differs, with numeric deltas where both sides are numbers."""
    a, b = flatten(before or {}), flatten(after or {})
    out = []
    for path in sorted(a.keys() | b.keys()):
        old, new = a.get(path), b.get(path)
        if old == new:
            continue
        delta, pct = deltas(_number(new), _number(old))
        out.append({"path": path, "before": old, "after": new, "delta": delta, "delta_pct": pct})
    return out
