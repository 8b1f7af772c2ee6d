"""The API's OpenAPI 3.0 document: the solver's JSON Schemas are translated to what OpenAPI 3.0 can say
(``./dev check`` validates the whole document with ``spectacular --validate``)."""

from __future__ import annotations

from api.schema import openapi_schema
from solvers.report_schema import report_json_schema


def test_a_nullable_type_list_becomes_nullable() -> None:
    schema = {"type": "object", "properties": {"d": {"type": ["number", "null"]}, "type": {"type": "string"}}}
    assert openapi_schema(schema) == {
        "type": "object",
        "properties": {"d": {"type": "number", "nullable": True}, "type": {"type": "string"}},
    }


def test_the_report_schema_has_no_type_list_left() -> None:
    def walk(node: object) -> None:
        if isinstance(node, dict):
            assert not isinstance(node.get("type"), list), node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(openapi_schema(report_json_schema()))
