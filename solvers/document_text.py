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


# A scenario document is a few kilobytes; anything this large is a mistake (or an attack on the parser).
MAX_DOCUMENT_CHARS = 1_000_000
# Values of a YAML document once its aliases are written out: a few hundred for a scenario, a few thousand for
# a large sweep. Aliases are kept as shared references when read, so a few hundred bytes of nested aliases
# ("billion laughs") would expand to gigabytes in whatever walks or re-encodes the document.
MAX_YAML_VALUES = 100_000


def _expanded_values(root: yaml.Node) -> int:
    """How many values the document of ``root`` holds with every alias written out, counted once per distinct
    node (in time linear in the text, however large the expansion)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            sizes[id(node)] = 1
            continue
        if children_done:
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with JSON-style exponents read as floats; raises ``InputError`` for a document
    whose aliases write out to more than ``MAX_YAML_VALUES`` values."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        values = _expanded_values(node)
        if values > MAX_YAML_VALUES:
            raise InputError(
                f"the YAML document holds {values:,} values once its aliases (*name) are written out "
                f"(limit {MAX_YAML_VALUES:,})"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_text(text: str) -> Any:
    """A scenario from JSON or YAML text (JSON is tried first; YAML 1.1 via ``yaml.safe_load``)."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InputError(f"document too large: {len(text):,} characters (limit {MAX_DOCUMENT_CHARS:,})")
    try:
        return json.loads(text)
    except ValueError:
        pass
    except RecursionError:
        raise InputError("the document is nested too deeply") from None
    try:
        return load_yaml(text)
    except RecursionError:
        raise InputError("the document is nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits, a date such as 2024-13-45
        problem = "a number has more than 4,300 digits" if "integer string conversion" in str(exc) else exc
        raise InputError(f"a value cannot be read: {problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"not valid JSON or YAML{where}: {problem}") from None
