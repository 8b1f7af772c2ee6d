"""Catalog presets: accelerators, nodes, fabrics, models and grid regions, each value with its source.

Every entry is a plain dict with a ``sources`` mapping (field -> citation). The one default calibration
(accelerator compute efficiency, fabric achievable factor) lives in ``solvers.catalog.calibration`` and is
merged into the entries returned by ``accelerator_entry``, ``fabric_entry`` and ``catalog_document``.
"""

from __future__ import annotations

import copy
import difflib
import functools
from collections.abc import Iterable
from typing import Any

from solvers.catalog.accelerators import ACCELERATORS
from solvers.catalog.fabrics import FABRICS
from solvers.catalog.models import MODELS
from solvers.catalog.nodes import NODES
from solvers.catalog.regions import REGIONS

__all__ = [
    "ACCELERATORS",
    "FABRICS",
    "MODELS",
    "NODES",
    "REGIONS",
    "accelerator_entry",
    "catalog_document",
    "did_you_mean",
    "fabric_entry",
]


def _calibration() -> tuple[dict[str, tuple[float, str]], dict[str, tuple[float, str]]]:
    from solvers.catalog import calibration

    return calibration.COMPUTE_EFFICIENCY, calibration.FABRIC_ACHIEVABLE


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a choice is close to ``word``, else an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


@functools.cache
def accelerator_entry(key: str) -> dict[str, Any]:
    """The catalog accelerator ``key`` with its calibrated ``compute_efficiency`` and that value's source.

    The returned dict is shared (cached): read it, never change it.
    """
    entry = copy.deepcopy(ACCELERATORS[key])
    efficiency, source = _calibration()[0][key]
    entry["compute_efficiency"] = float(efficiency)
    entry["sources"]["compute_efficiency"] = source
    return entry


@functools.cache
def fabric_entry(key: str) -> dict[str, Any]:
    """The catalog fabric ``key`` with its achievable factor and the achieved ``bandwidth_gb_s``.

    The returned dict is shared (cached): read it, never change it.

    bandwidth_gb_s = nominal_gb_s x achievable_factor; e.g. NDR 50 GB/s x 0.8 = 40 GB/s achieved.
    """
    entry = copy.deepcopy(FABRICS[key])
    factor, source = _calibration()[1][key]
    entry["achievable_factor"] = float(factor)
    entry["bandwidth_gb_s"] = entry["nominal_gb_s"] * float(factor)
    entry["sources"]["achievable_factor"] = source
    return entry


def catalog_document() -> dict[str, dict[str, Any]]:
    """Every preset as JSON-ready dicts: ``{"accelerators", "nodes", "fabrics", "models", "regions"}``."""
    return {
        "accelerators": {key: copy.deepcopy(accelerator_entry(key)) for key in ACCELERATORS},
        "nodes": copy.deepcopy(NODES),
        "fabrics": {key: copy.deepcopy(fabric_entry(key)) for key in FABRICS},
        "models": copy.deepcopy(MODELS),
        "regions": copy.deepcopy(REGIONS),
    }
