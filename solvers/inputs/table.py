"""The types of the field table: one ``Field`` row per document field, and ``FieldTable``, the rows indexed
for the parsers. The rows themselves are in ``solvers.inputs.fields``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()  # a field whose default its parser computes (or that has none)

NUMERIC = frozenset({"number", "integer"})


class Assumption(NamedTuple):
    """One entry of the assumptions ledger: a value a report rests on, its unit and where it came from.
    A list value (``cluster.reliability.other_mttf_h``) is held as a tuple."""

    key: str
    value: str | int | float | bool | tuple[float, ...] | None
    unit: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        """The entry as a report carries it (a list value as a list)."""
        value = self.value
        return {
            "key": self.key,
            "value": list(value) if type(value) is tuple else value,
            "unit": self.unit,
            "source": self.source,
        }


@dataclass(frozen=True)
class Field:
    """One field of the scenario document.

    ``kind``: "number", "integer", "bool", "choice" (one of ``choices``), "key" (a key of the catalog table
    ``catalog``), "text" (at most ``max_len`` characters), "list" (of numbers within the limits, at most
    ``max_items``), "object" (a section; ``or_key``: a catalog key string is accepted in its place,
    ``or_const``: that string is), "const" (``default`` and nothing else).
    ``nullable``: null is accepted and means "not given" (the default applies).
    ``price``: a price book may fill it (``solvers.prices``; ``Resolved.with_prices``).
    """

    path: str
    kind: str
    unit: str = ""
    minimum: float = 0
    maximum: float = 0
    exclusive_min: bool = False
    nullable: bool = False
    default: Any = NO_DEFAULT
    source: str = ""
    choices: tuple[str, ...] = ()
    catalog: str = ""
    max_len: int = 0
    max_items: int = 0
    or_key: str = ""
    or_const: str = ""
    price: bool = False
    # derived from the above (the parsers read them for every field of every document)
    name: str = field(init=False, repr=False, compare=False)  # the last part of the path
    parent: str = field(init=False, repr=False, compare=False)  # the object that holds it
    integer: bool = field(init=False, repr=False, compare=False)
    has_default: bool = field(init=False, repr=False, compare=False)
    # The assumption entry of the static default (None without one): every document that leaves the field
    # out notes this same immutable row, so the reader appends it instead of building it again.
    default_note: Assumption | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parent, _, name = self.path.rpartition(".")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "integer", self.kind == "integer")
        object.__setattr__(self, "has_default", self.default is not NO_DEFAULT)
        default = self.default
        held = tuple(default) if isinstance(default, list | tuple) else default  # as ``Reader.note`` holds it
        note = Assumption(self.path, held, self.unit, self.source) if self.has_default else None
        object.__setattr__(self, "default_note", note)


class FieldTable:
    """``FIELDS`` indexed for the parsers: the keys of each object, its numeric fields, each row by path.

    Built once from the rows and never changed (``solvers.inputs.fields.TABLE`` is the one in force).
    """

    def __init__(self, rows: Iterable[Field]) -> None:
        self.rows: tuple[Field, ...] = tuple(rows)
        self.by_path: dict[str, Field] = {row.path: row for row in self.rows}  # read, never written
        children: dict[str, list[Field]] = {}
        for row in self.rows:
            children.setdefault(row.parent, []).append(row)
        self._children = {path: tuple(rows_) for path, rows_ in children.items()}
        self._keys = {path: tuple(r.name for r in rows_) for path, rows_ in children.items()}
        self._numbers = {
            path: tuple(r for r in rows_ if r.kind in NUMERIC) for path, rows_ in children.items()
        }
        # The objects whose every field has a static default: their entries and values when all are left out.
        self._defaults: dict[str, tuple[tuple[Assumption, ...], tuple[tuple[str, Any], ...]]] = {}
        for path, rows_ in self._children.items():
            notes = tuple(r.default_note for r in rows_ if r.default_note is not None)
            if len(notes) == len(rows_):
                self._defaults[path] = (notes, tuple((r.name, r.default) for r in rows_))

    def __getitem__(self, path: str) -> Field:
        return self.by_path[path]

    def __contains__(self, path: object) -> bool:
        return path in self.by_path

    def keys(self, path: str) -> tuple[str, ...]:
        """The keys an object at ``path`` may hold, in document order ("" is the document itself)."""
        return self._keys.get(path, ())

    def children(self, path: str) -> tuple[Field, ...]:
        """The rows of the fields directly inside the object at ``path``, in document order."""
        return self._children.get(path, ())

    def numbers(self, path: str) -> tuple[Field, ...]:
        """The numeric fields directly inside the object at ``path``."""
        return self._numbers.get(path, ())

    def static_defaults(self, path: str) -> tuple[tuple[Assumption, ...], tuple[tuple[str, Any], ...]] | None:
        """For an object at ``path`` whose every field has a static default: the fields' default entries
        (``Field.default_note``) and (name, default) pairs, in document order; None for any other object."""
        return self._defaults.get(path)

    def limits(self) -> dict[str, dict[str, Any]]:
        """Every numeric field's bounds by document path (a list's items under ``path[]``)."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            if row.kind in NUMERIC:
                out[row.path] = _limit(row)
        for row in self.rows:
            if row.kind == "list":
                out[f"{row.path}[]"] = {**_limit(row), "max_items": row.max_items}
        return out

    def defaults(self) -> dict[str, tuple[Any, str, str]]:
        """(value, unit, source) of every field with a static default."""
        return {row.path: (row.default, row.unit, row.source) for row in self.rows if row.has_default}

    def price_paths(self) -> tuple[str, ...]:
        """The fields a price book may fill."""
        return tuple(row.path for row in self.rows if row.price)


def _limit(row: Field) -> dict[str, Any]:
    return {
        "minimum": row.minimum,
        "maximum": row.maximum,
        "exclusive_minimum": row.exclusive_min,
        "integer": row.integer,
        "unit": row.unit,
    }
