"""Scenario document -> ``Resolved``, once per call; nothing is kept between calls.

``fields`` is the one table of the document's fields (path, type, unit, limits, default and its source);
``reader`` reads a document against it (field-path errors, did-you-mean); ``model``, ``cluster``, ``site``,
``training`` (with ``layout``) and ``economics`` parse one part each; ``scenario`` joins them into an
immutable ``Resolved``; ``json_schema`` describes the document from the table.
"""

from __future__ import annotations

from solvers.inputs.fields import (
    FIELD_LIMITS,
    FIELDS,
    PARTS,
    SCHEMA_VERSION,
    TABLE,
    Field,
    FieldTable,
    field_limits,
)
from solvers.inputs.json_schema import scenario_json_schema
from solvers.inputs.layout import layout_batch, layout_from_batch
from solvers.inputs.model import transformer_params
from solvers.inputs.reader import Assumption
from solvers.inputs.scenario import LedgerFields, Resolved, resolve, resolve_with_document, validate_part

__all__ = [
    "FIELDS",
    "FIELD_LIMITS",
    "PARTS",
    "SCHEMA_VERSION",
    "TABLE",
    "Assumption",
    "Field",
    "FieldTable",
    "LedgerFields",
    "Resolved",
    "field_limits",
    "layout_batch",
    "layout_from_batch",
    "resolve",
    "resolve_with_document",
    "scenario_json_schema",
    "transformer_params",
    "validate_part",
]
