"""JSON Schema (draft 2020-12) of the scenario document, generated from the field table.

For API documentation and client-side forms. Each row of ``solvers.inputs.fields`` becomes one property:
numbers with their limits and unit, enums, catalog keys, objects closed to unknown keys, null where the
parser accepts it. Rules across fields (tp*cp*pp divides gpus, the batch divides into dp x microbatches,
heads divide hidden unless model.head_dim is given, ...) are checked by ``resolve`` and the engine.
"""

from __future__ import annotations

from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.inputs.fields import NUMERIC, SCHEMA_VERSION, Field


def _enum(values: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def _catalog_keys(name: str) -> dict[str, Any]:
    return _enum(list(getattr(catalog, name)))


def _object(path: str) -> dict[str, Any]:
    table = fields.TABLE
    properties = {key: _field(table[f"{path}.{key}" if path else key]) for key in table.keys(path)}
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _low(row: Field) -> dict[str, Any]:
    return {"exclusiveMinimum" if row.exclusive_min else "minimum": row.minimum}


def _field(row: Field) -> dict[str, Any]:
    kind = row.kind
    out: dict[str, Any]
    if kind in NUMERIC:
        out = {"type": kind, "maximum": row.maximum, **_low(row)}
        if row.unit:
            out["description"] = f"unit: {row.unit}"
    elif kind == "bool":
        out = {"type": "boolean"}
    elif kind == "choice":
        out = _enum(row.choices)
    elif kind == "key":
        out = _catalog_keys(row.catalog)
    elif kind == "text":
        out = {"type": "string", "maxLength": row.max_len}
    elif kind == "const":
        out = {"const": row.default}
    elif kind == "list":
        items = {"type": "number", **_low(row), "maximum": row.maximum}
        out = {"type": "array", "maxItems": row.max_items, "items": items}
    elif kind == "object":
        out = _object(row.path)
        if row.or_key:
            out = {"anyOf": [_catalog_keys(row.or_key), out]}
        if row.or_const:
            out = {"anyOf": [out, {"const": row.or_const}]}
    else:
        raise KeyError(f"{row.path}: no JSON Schema for a field of kind {kind!r}")
    return {"anyOf": [out, {"type": "null"}]} if row.nullable else out


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the scenario document: keys, types, enums, catalog keys and limits.

    It describes what ``resolve`` accepts field by field; rules across fields (tp*cp*pp divides gpus, the
    batch divides into dp x microbatches, heads divide hidden unless model.head_dim is given, ...) are
    checked by ``resolve`` and the engine.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Planner scenario document v{SCHEMA_VERSION}",
        **_object(""),
    }
