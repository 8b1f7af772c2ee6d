"""A scenario document from its text: JSON, or YAML 1.1 with JSON-style exponents read as floats.

Used by the command line (``solvers.cli``) and by the published-run comparison (``solvers.published``),
which reads its scenarios from ``examples/``; ``solvers.cli`` re-exports these names for its callers.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml


class InputError(Exception):
    """The input could not be read or parsed (before any scenario rule applies)."""


class _Loader(yaml.SafeLoader):
    """YAML 1.1 safe loader that also reads ``15.6e12`` and ``1e9`` as floats (YAML 1.2 / JSON style).

    PyYAML's YAML 1.1 resolver needs a dot and a signed exponent (``1.0e+12``) and would otherwise hand the
    scenario a string, which is a frequent surprise with token counts.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with JSON-style exponents read as floats."""
    return yaml.load(text, Loader=_Loader)


# A scenario document is a few kilobytes; anything this large is a mistake (or an attack on the parser).
MAX_DOCUMENT_CHARS = 1_000_000


def parse_text(text: str) -> Any:
    """A scenario from JSON or YAML text (JSON is tried first; YAML 1.1 via ``yaml.safe_load``)."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InputError(f"document too large: {len(text):,} characters (limit {MAX_DOCUMENT_CHARS:,})")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"not valid JSON or YAML{where}: {problem}") from None
