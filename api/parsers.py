"""A strict JSON parser: bodies are finite, shallow, bounded JSON of valid Unicode without NUL characters.

Python's ``json`` accepts ``NaN``/``Infinity`` literals, turns ``1e999`` into infinity and decodes an
unpaired ``\\ud800`` escape into a lone surrogate, which is not Unicode: no UTF-8 encoder (the response
renderer, PostgreSQL) accepts it. PostgreSQL's JSONB and text columns also refuse ``\\u0000``. Each would
otherwise surface later as a 500 or, worse, a stored non-finite number, so they are refused here with a 400
naming the JSON path of the offending key or value (``cluster.gpus``, ``axes[0].values[1]``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.parsers import JSONParser

from api.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_INT, MAX_STRING_CHARS

# More digits than this cannot be within ±MAX_JSON_INT; such a literal is refused without converting it
# (Python refuses to convert integers of over 4,300 digits at all, which would name only the body).
_MAX_INT_DIGITS = len(str(MAX_JSON_INT))
_INT_RANGE = "integer outside ±2^53, which JSON clients cannot represent exactly"


class _Rejected(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class _BadNumber:
    """A number literal the parser refuses, kept in the tree until the walk knows its path.

    ``json.loads``'s hooks see a literal without its place in the document; raising there could only name
    the whole body."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _constant(name: str) -> _BadNumber:
    return _BadNumber(f"{name} is not a number JSON allows; send a finite number")


def _finite_float(text: str) -> float | _BadNumber:
    value = float(text)
    if not math.isfinite(value):
        return _BadNumber(f"{text} is outside the range of a finite double")
    return value


def _bounded_int(text: str) -> int | _BadNumber:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return _BadNumber(_INT_RANGE)
    return int(text)


def _lone_surrogate(text: str) -> str | None:
    """The first lone UTF-16 surrogate (U+D800..U+DFFF) of ``text`` as a ``\\udXXX`` escape, or None.

    A pair sent as two ``\\u`` escapes is joined by the decoder into one character, so only an unpaired
    half is left as a surrogate. ASCII text (nearly every string of a scenario) skips the encode attempt."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(text[exc.start]):04x}"
    return None


def _printable(text: str) -> str:
    """``text`` with lone surrogates as ``\\udXXX`` escapes, so that an error can name it and still be
    encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _surrogate_message(escape: str) -> str:
    return (
        f"contains the unpaired UTF-16 surrogate {escape}, which is not Unicode text; send the character "
        "as UTF-8 or as a complete surrogate pair"
    )


def _check_string(value: str, path: str) -> None:
    if "\x00" in value:
        raise _Rejected(path or "body", "contains a NUL character (\\u0000)")
    if len(value) > MAX_STRING_CHARS:
        raise _Rejected(path or "body", f"longer than {MAX_STRING_CHARS} characters")
    surrogate = _lone_surrogate(value)
    if surrogate is not None:
        raise _Rejected(path or "body", _surrogate_message(surrogate))


def _check_key(key: str, path: str) -> str:
    """The path of the member named ``key`` under ``path``; raises when the name itself is refused (a
    surrogate in it is escaped in the path, which is the only way to name that key in the answer)."""
    if "\x00" in key or len(key) > MAX_STRING_CHARS:
        raise _Rejected(path or "body", f"key {key[:40]!r} is not a valid field name")
    surrogate = _lone_surrogate(key)
    if surrogate is not None:
        printable = _printable(key[:40])
        raise _Rejected(
            f"{path}.{printable}" if path else printable, f"the field name {_surrogate_message(surrogate)}"
        )
    return f"{path}.{key}" if path else key


def _check_tree(value: Any, path: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise _Rejected(path or "body", f"nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, bool):
        return
    if isinstance(value, _BadNumber):
        raise _Rejected(path or "body", value.message)
    if isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            raise _Rejected(path or "body", _INT_RANGE)
    elif isinstance(value, str):
        _check_string(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_tree(item, _check_key(key, path), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_tree(item, f"{path}[{index}]" if path else f"[{index}]", depth + 1)


def loads_strict(raw: bytes | str) -> Any:
    """Parse ``raw`` as strict JSON; raise a DRF ``ValidationError`` naming the path on any refusal."""
    if len(raw) > MAX_BODY_BYTES:
        raise serializers.ValidationError({"body": [f"larger than the limit of {MAX_BODY_BYTES} bytes"]})
    try:
        data = json.loads(raw, parse_constant=_constant, parse_float=_finite_float, parse_int=_bounded_int)
        _check_tree(data, "", 0)
    except _Rejected as exc:
        raise serializers.ValidationError({exc.path: [exc.message]}) from None
    except RecursionError:
        raise serializers.ValidationError({"body": [f"nested deeper than {MAX_JSON_DEPTH} levels"]}) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise serializers.ValidationError({"body": [f"not valid JSON: {_printable(str(exc))}"]}) from None
    return data


def _decoded(raw: bytes, encoding: str) -> str:
    """``raw`` as text in the request's charset.

    ``bytes.decode`` accepts text encodings only: ``codecs.decode`` would also run the bytes-to-bytes codecs
    that a client can name in its charset (``zlib``, ``bz2``, ``base64``, ``rot13``), which fail with errors
    of their own (a 500) or inflate a 1 MB body into gigabytes. Some text codecs fail with a bare
    ``UnicodeError`` or ``ValueError`` (``idna``, ``punycode``); every failure is the body's."""
    try:
        return raw.decode(encoding)
    except (UnicodeError, LookupError, ValueError, TypeError) as exc:
        message = _printable(str(exc))[:300]
        raise serializers.ValidationError({"body": [f"not valid {encoding} text: {message}"]}) from None


class StrictJSONParser(JSONParser):
    """JSON bodies with finite numbers, bounded size and depth, valid Unicode and no NUL characters."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        raw = stream.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise serializers.ValidationError({"body": [f"larger than the limit of {MAX_BODY_BYTES} bytes"]})
        return loads_strict(_decoded(raw, encoding))
