"""A JSON Schema of the report document (CONTRACT.md v1 and its additive v1.1 fields).

The sections of v1 are described by their required keys (``solvers.report_types`` is the typed contract,
field by field); the v1.1 fields, ``ranges`` and ``ranges_method``, are described in full. A v1 reader that
does not know them ignores them (``additionalProperties`` is open at the top level). The schema is the plain
subset that JSON Schema 2020-12 and OpenAPI 3.0 share, so the API serves it as the response of
``POST /solve/``; ``python -m solvers schema --report`` prints it.
"""

from __future__ import annotations

from typing import Any

from solvers.report_types import RangesMethod, Report, StepResidual

__all__ = ["report_json_schema"]

_SECTIONS = ("layout", "step", "traffic", "memory", "reliability", "schedule", "energy", "carbon", "tco")


def _range() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "p10 <= p50 <= p90 of the figure under the report's uncertainty; the point value stays "
        "in its section and need not equal p50.",
        "properties": {q: {"type": "number"} for q in ("p10", "p50", "p90")},
        "required": ["p10", "p50", "p90"],
        "additionalProperties": False,
    }


def _ranges_method() -> dict[str, Any]:
    residual = {
        "type": "object",
        "properties": {
            "step_class": {
                "type": "string",
                "enum": ["dense/small", "dense/large", "moe/small", "moe/large"],
            },
            "mean": {"type": "number"},
            "sigma": {"type": "number", "minimum": 0},
            "held_out": {"type": "boolean"},
        },
        "required": sorted(StepResidual.__annotations__),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "description": "How the ranges were made: docs/CONVENTIONS.md 'Ranges'.",
        "properties": {
            "method": {"type": "string", "enum": ["monte_carlo"]},
            "samples": {"type": "integer", "minimum": 1000},
            "seed": {"type": "integer"},
            "quantiles": {"type": "string"},
            "step_residual": residual,
            "inputs": {"type": "array", "items": {"type": "string"}},
        },
        "required": sorted(RangesMethod.__annotations__),
        "additionalProperties": False,
    }


def report_json_schema() -> dict[str, Any]:
    """The report document's JSON Schema (a new dict on each call).

    Example: ``report_json_schema()["properties"]["ranges"]["additionalProperties"]["required"]`` is
    ``["p10", "p50", "p90"]``.
    """
    required = sorted(Report.__required_keys__)
    properties: dict[str, Any] = {
        "schema_version": {"type": "integer", "enum": [1]},
        "solver_version": {"type": "string"},
        "input_hash": {"type": "string"},
        **{name: {"type": "object"} for name in _SECTIONS},
        "assumptions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string"},
                    "unit": {"type": "string"},
                    "source": {"type": "string"},
                },
                "required": ["key", "value", "unit", "source"],
            },
        },
        "warnings": {"type": "array", "items": {"type": "string"}},
        "scenario": {"type": "object"},
        "search": {
            "type": "object",
            "description": "layout: auto only: how the layout was chosen (candidates, evaluated, feasible, "
            "rejected by reason). v1.1, additive: within_validated (whether layouts outside the envelope of "
            "validated runs were left out) and support {within_validated, reasons, nearest_validated, "
            "distance, class, features}, how close the chosen layout is to the validated runs.",
            "properties": {
                "within_validated": {"type": "boolean"},
                "support": {
                    "type": "object",
                    "properties": {
                        "within_validated": {"type": "boolean"},
                        "reasons": {"type": "array", "items": {"type": "string"}},
                        "nearest_validated": {"type": ["string", "null"]},
                        "distance": {"type": ["number", "null"]},
                    },
                    "required": ["within_validated", "reasons", "nearest_validated"],
                },
            },
        },
        "ranges": {
            "type": "object",
            "description": "v1.1, additive: p10/p50/p90 of the headline figures keyed by the figure's dotted "
            "path in the report (step.step_s, step.mfu, schedule.wall_clock_days, energy.facility_kwh, "
            "carbon.operational_kgco2e, carbon.embodied_kgco2e, carbon.water_l, tco.total_usd, ...).",
            "additionalProperties": _range(),
        },
        "ranges_method": _ranges_method(),
    }
    return {
        "title": "Planner report document",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }
