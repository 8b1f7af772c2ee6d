"""Reading a scenario document: field-path errors, did-you-mean, limits from the field table, the ledger.

A ``Reader`` collects every error found (each naming its field path) and the assumptions ledger
``[{key, value, unit, source}]`` while the part parsers read a document; nothing is kept between documents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from solvers import catalog
from solvers.errors import FieldError
from solvers.inputs import fields
from solvers.inputs.fields import Field
from solvers.inputs.table import Assumption
from solvers.plain import to_plain

SCENARIO = "scenario"  # source of a value the user gave

_PLAIN_TYPES = frozenset({int, float, str, bool, type(None)})
_STR = frozenset({str})


def _held(value: Any) -> Any:
    """``value`` as an assumption holds it: exact python scalars, a tuple for a list."""
    if value.__class__ in _PLAIN_TYPES:
        return value
    plain = to_plain(value)
    return tuple(plain) if type(plain) is list else plain


class Reader:
    """Collects field errors, assumptions and warnings while a document is read."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.assumptions: list[Assumption] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path=path, message=message))

    def failed_under(self, path: str) -> bool:
        """True when an error names ``path`` or a field inside it."""
        return bool(self.errors) and any(e.path.startswith(path) for e in self.errors)

    def note(self, key: str, value: Any, unit: str, source: str) -> None:
        self.assumptions.append(Assumption(key, _held(value), unit, source))

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
        """``value`` as a dict whose keys are all in ``allowed``; None (and an error) otherwise."""
        # A dict of str keys, all known (every document's usual case): two C passes over its keys.
        if type(value) is dict and (
            not value or (set(map(type, value)) == _STR and set(value).issubset(allowed))
        ):
            return dict(value)
        if not isinstance(value, Mapping):
            self.error(path, f"must be an object, got {type_name(value)}")
            return None
        ok = True
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                hint = catalog.did_you_mean(str(key), allowed)
                self.error(join(path, str(key)), f"unknown field{hint}")
                ok = False
        return dict(value) if ok else {k: v for k, v in value.items() if k in allowed}

    def section(self, value: Any, path: str) -> dict[str, Any] | None:
        """The object at ``path`` (null or absent: empty), its keys checked against the field table."""
        return self.mapping(value if value is not None else {}, path, fields.TABLE.keys(path))

    def number(
        self,
        value: Any,
        path: str,
        *,
        minimum: float,
        maximum: float,
        integer: bool = False,
        exclusive_min: bool = False,
    ) -> float | int | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "an integer" if integer else "a number"
            self.error(path, f"must be {kind}, got {type_name(value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.error(path, "must be finite")
            return None
        if value > maximum:  # before any float() of a huge int, which would overflow
            self.error(path, f"must be <= {fmt(maximum)}, got {fmt(value)}")
            return None
        if integer:
            if isinstance(value, float) and not value.is_integer():
                self.error(path, f"must be an integer, got {value!r}")
                return None
            value = int(value)
        too_low = value <= minimum if exclusive_min else value < minimum
        if too_low:
            rel = ">" if exclusive_min else ">="
            self.error(path, f"must be {rel} {fmt(minimum)}, got {fmt(value)}")
            return None
        return value if integer else float(value)

    def field_number(self, value: Any, row: Field, path: str | None = None) -> float | int | None:
        """``value`` read against the limits of the table's ``row``."""
        # An exact int or finite float inside the limits (every valid document's case) is read here; anything
        # else takes ``number``, which names what is wrong. The result is the same either way.
        kind = type(value)
        if (
            (kind is float or kind is int)
            and value - value == 0
            and value <= row.maximum
            and (value > row.minimum if row.exclusive_min else value >= row.minimum)
        ):
            if not row.integer:
                return float(value)
            if kind is int:
                return value
            if value.is_integer():
                return int(value)
        return self.number(
            value,
            row.path if path is None else path,
            minimum=row.minimum,
            maximum=row.maximum,
            integer=row.integer,
            exclusive_min=row.exclusive_min,
        )

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be one of {', '.join(choices)}; got {type_name(value)}")
            return None
        if value not in choices:
            hint = catalog.did_you_mean(value, choices)
            self.error(path, f"must be one of {', '.join(choices)}; got '{value}'{hint}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.error(path, f"must be true or false, got {type_name(value)}")
            return None
        return value

    def text(self, value: Any, path: str, max_len: int = 200) -> str | None:
        if not isinstance(value, str) or len(value) > max_len:
            self.error(path, f"must be a string of at most {max_len} characters")
            return None
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): no report could be written out
                self.error(
                    path, "must be text that UTF-8 can hold (it holds a lone surrogate, such as \\ud800)"
                )
                return None
        return value

    def key(self, value: Any, path: str, table: Mapping[str, Any], kind: str) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be a {kind} catalog key (string), got {type_name(value)}")
            return None
        if value not in table:
            hint = catalog.did_you_mean(value, table)
            self.error(path, f"unknown {kind} '{value}'{hint}")
            return None
        return str.__str__(value)  # an exact str even for a str subclass (an enum member)


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def fmt(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 10**18:
        return f"~1e{len(str(abs(value))) - 1}"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


def read_numbers(r: Reader, given: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Read each numeric field of the object at ``path`` present in ``given`` against the table's limits;
    absent ones are left out of the result, a null one is None when the table allows it."""
    out: dict[str, Any] = {}
    if not given:
        return out
    for row in fields.TABLE.numbers(path):
        name = row.name
        if name not in given:
            continue
        value = given[name]
        if value is None and row.nullable:
            out[name] = None
            continue
        parsed = r.field_number(value, row)  # the row's path is ``path.name``
        if parsed is not None:
            out[name] = parsed
    return out


def read_choices(r: Reader, given: Mapping[str, Any], path: str, out: dict[str, Any]) -> None:
    """Read each enum, then each true/false field of the object at ``path`` present in ``given`` into ``out``."""
    if not given:
        return
    present = [row for row in fields.TABLE.children(path) if row.name in given]
    for row in present:
        if row.kind == "choice":
            value = r.choice(given[row.name], row.path, row.choices)
            if value is not None:
                out[row.name] = value
    for row in present:
        if row.kind == "bool":
            flag = r.boolean(given[row.name], row.path)
            if flag is not None:
                out[row.name] = flag


def resolve_value(
    r: Reader,
    path: str,
    name: str,
    given: Mapping[str, Any],
    *,
    preset: Mapping[str, Any] | None,
    preset_source: Callable[[str], str] | None,
    default: Any,
    default_source: str,
    unit: str,
) -> Any:
    """Pick explicit > preset > default for ``name`` and record the choice in the assumptions ledger."""
    if name in given:
        value, source = given[name], SCENARIO
    elif preset is not None and name in preset and preset_source is not None:
        value, source = preset[name], preset_source(name)
    else:
        value, source = default, default_source
    r.assumptions.append(Assumption(f"{path}.{name}" if path else name, _held(value), unit, source))
    return value


def table_default(
    r: Reader,
    path: str,
    name: str,
    given: Mapping[str, Any],
    *,
    preset: Mapping[str, Any] | None = None,
    preset_source: Callable[[str], str] | None = None,
    unit: str | None = None,
) -> Any:
    """``resolve_value`` with the table's default, source and unit for ``path.name``."""
    row = fields.TABLE.by_path[f"{path}.{name}" if path else name]
    return row_default(r, row, given, preset=preset, preset_source=preset_source, unit=unit)


def row_default(
    r: Reader,
    row: Field,
    given: Mapping[str, Any],
    *,
    preset: Mapping[str, Any] | None = None,
    preset_source: Callable[[str], str] | None = None,
    unit: str | None = None,
) -> Any:
    """``table_default`` for the table's ``row`` (written out: it runs about fifty times per document). A
    field left to its static default notes the row's own ``default_note``, which is the same every time."""
    name = row.name
    if name in given:
        value, source = given[name], SCENARIO
    elif preset is not None and name in preset and preset_source is not None:
        value, source = preset[name], preset_source(name)
    elif row.default_note is not None and (unit is None or unit == row.unit):
        r.assumptions.append(row.default_note)
        return row.default
    else:
        value, source = row.default, row.source
    r.assumptions.append(Assumption(row.path, _held(value), row.unit if unit is None else unit, source))
    return value


def row_defaults(r: Reader, path: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """``row_default`` for every field of the object at ``path``, by name, in document order. When the
    scenario gives none of them and each has a static default, their entries (made with the table) are noted
    in one step: what the field-by-field path writes (``tests/solvers/test_inputs.py``)."""
    if not given:
        held = fields.TABLE.static_defaults(path)
        if held is not None:
            notes, values = held
            r.assumptions.extend(notes)
            return dict(values)
    return {row.name: row_default(r, row, given) for row in fields.TABLE.children(path)}


def preset_notes(
    path: str, presets: Mapping[str, Mapping[str, Any]], source: Callable[[str, str], str]
) -> dict[str, dict[str, Assumption]]:
    """For each preset key, the assumption entry of each field at ``path`` that the preset gives, as
    ``resolve_value`` would write it when the scenario leaves the field out: (path.name, the preset's value,
    the table's unit, ``source(key, name)``). The parsers build these tables from the catalog and the field
    table when they are imported (constants, never changed) and append an entry instead of making it again
    for every document; ``tests/solvers/test_inputs.py`` holds that they are what the general path writes."""
    rows = [row for row in fields.TABLE.children(path) if row.kind in ("number", "integer", "bool")]
    return {
        key: {
            row.name: Assumption(row.path, _held(entry[row.name]), row.unit, source(key, row.name))
            for row in rows
            if row.name in entry
        }
        for key, entry in presets.items()
    }


def read_section(r: Reader, raw: Any, path: str) -> dict[str, Any] | None:
    """An object whose every field is a number with a default in the table (storage, power, economics):
    the explicit resolved values, each choice written to the assumptions ledger; None on an error."""
    given = r.section(raw, path)
    if given is None:
        return None
    before = len(r.errors)
    nums = read_numbers(r, given, path)
    if len(r.errors) > before:
        return None
    rows = fields.TABLE.numbers(path)
    if rows == fields.TABLE.children(path):
        values = row_defaults(r, path, nums)
    else:
        values = {row.name: row_default(r, row, nums) for row in rows}
    out: dict[str, Any] = {}
    for row in rows:
        value = values[row.name]
        out[row.name] = None if value is None else (int(value) if row.integer else float(value))
    return out
