"""A strict JSON parser: bodies are finite, shallow, bounded JSON without NUL characters.

Python's ``json`` accepts ``NaN``/``Infinity`` literals and turns ``1e999`` into infinity; PostgreSQL's
JSONB and text columns refuse ``\\u0000``. Each would otherwise surface later as a 500 or, worse, a stored
non-finite number, so they are refused here with a 400 naming the field path.
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.parsers import JSONParser

from api.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_INT, MAX_STRING_CHARS


class _Rejected(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _reject_constant(name: str) -> Any:
    raise _Rejected("body", f"{name} is not a number JSON allows; send a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected("body", f"{text} is outside the range of a finite double")
    return value


def _check_tree(value: Any, path: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise _Rejected(path or "body", f"nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            raise _Rejected(
                path or "body", "integer outside ±2^53, which JSON clients cannot represent exactly"
            )
    elif isinstance(value, str):
        if "\x00" in value:
            raise _Rejected(path or "body", "contains a NUL character (\\u0000)")
        if len(value) > MAX_STRING_CHARS:
            raise _Rejected(path or "body", f"longer than {MAX_STRING_CHARS} characters")
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if "\x00" in key or len(key) > MAX_STRING_CHARS:
                raise _Rejected(path or "body", f"key {key[:40]!r} is not a valid field name")
            _check_tree(item, child, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_tree(item, f"{path}[{index}]" if path else f"[{index}]", depth + 1)


def loads_strict(raw: bytes | str) -> Any:
    """Parse ``raw`` as strict JSON; raise a DRF ``ValidationError`` naming the path on any refusal."""
    if len(raw) > MAX_BODY_BYTES:
        raise serializers.ValidationError({"body": [f"larger than the limit of {MAX_BODY_BYTES} bytes"]})
    try:
        data = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
        _check_tree(data, "", 0)
    except _Rejected as exc:
        raise serializers.ValidationError({exc.path: [exc.message]}) from None
    except RecursionError:
        raise serializers.ValidationError({"body": [f"nested deeper than {MAX_JSON_DEPTH} levels"]}) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise serializers.ValidationError({"body": [f"not valid JSON: {exc}"]}) from None
    return data


class StrictJSONParser(JSONParser):
    """JSON bodies with finite numbers, bounded size and depth, and no NUL characters."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise serializers.ValidationError({"body": [f"larger than the limit of {MAX_BODY_BYTES} bytes"]})
        try:
            text = codecs.decode(raw, encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise serializers.ValidationError({"body": [f"not valid {encoding} text: {exc}"]}) from None
        return loads_strict(text)
