"""The field table is the one place that knows a field; a resolved scenario is immutable and re-priced
without being parsed again; nothing of a document is kept between calls (``solvers.inputs``)."""

from __future__ import annotations

import copy
import dataclasses
import marshal
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ledger_defaults, prices, solve_resolved
from solvers.errors import ScenarioError
from solvers.inputs import fields, resolve, scenario, scenario_json_schema, validate_part
from solvers.inputs.table import Assumption, Field, FieldTable
from tests.profiles import examples

NEW = Field(
    "site.heat_reuse_fraction",
    "number",
    "fraction",
    0,
    1,
    default=0.0,
    source="convention: no waste heat is reused",
)


@pytest.fixture
def one_more_row(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = list(fields.FIELDS)
    rows.insert(rows.index(fields.TABLE["site.electricity_usd_per_kwh"]) + 1, NEW)
    monkeypatch.setattr(fields, "TABLE", FieldTable(rows))


def _entry(resolved: scenario.Resolved, key: str) -> dict[str, Any]:
    return next(a for a in resolved.assumptions if a["key"] == key)


def _errors(document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as info:
        resolve(document)
    return [(e.path, e.message) for e in info.value.errors]


def test_a_field_is_one_row_and_reaches_parser_schema_limits_and_assumptions(one_more_row: None) -> None:
    given = resolve({"site": {"region": "quebec", "heat_reuse_fraction": 0.25}})
    assert given.document["site"]["heat_reuse_fraction"] == 0.25
    entry = {"key": NEW.path, "value": 0.25, "unit": "fraction", "source": "scenario"}
    assert _entry(given, NEW.path) == entry
    defaulted = resolve({})
    assert _entry(defaulted, NEW.path) == {**entry, "value": 0.0, "source": NEW.source}
    assert validate_part("site", {"heat_reuse_fraction": 1})["heat_reuse_fraction"] == 1.0
    assert _errors({"site": {"heat_reuse_fraction": 1.5}}) == [(NEW.path, "must be <= 1, got 1.5")]
    assert _errors({"site": {"heat_reuse_fractoin": 0.5}}) == [
        ("site.heat_reuse_fractoin", "unknown field (did you mean 'heat_reuse_fraction'?)")
    ]
    site = scenario_json_schema()["properties"]["site"]["anyOf"][0]
    assert site["properties"]["heat_reuse_fraction"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "unit: fraction",
    }
    assert fields.field_limits()[NEW.path] == {
        "minimum": 0,
        "maximum": 1,
        "exclusive_minimum": False,
        "integer": False,
        "unit": "fraction",
    }
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    assert validator.is_valid({"site": {"heat_reuse_fraction": 0.5}})
    assert not validator.is_valid({"site": {"heat_reuse_fraction": 2}})


def test_without_the_row_the_field_is_unknown_everywhere() -> None:
    assert NEW.path not in fields.field_limits()
    assert _errors({"site": {"heat_reuse_fraction": 0.5}})[0][1].startswith("unknown field")
    assert "heat_reuse_fraction" not in scenario_json_schema()["properties"]["site"]["anyOf"][0]["properties"]


def test_limits_price_limits_and_ledger_defaults_are_the_tables() -> None:
    assert fields.field_limits() == fields.FIELD_LIMITS
    for kind in prices.PRICE_KINDS:
        row = fields.TABLE[prices.PRICE_FIELDS[kind]]
        assert row.price
        low, high = prices.price_limits(kind)
        assert low == row.minimum
        per_node = fields.TABLE["cluster.gpus_per_node"].maximum if kind == prices.PRICE_NODE else 1
        assert high == row.maximum * per_node
    assert set(prices.PRICE_FIELDS.values()) == set(fields.TABLE.price_paths())
    for path, default in ledger_defaults.DEFAULTS.items():
        if path in fields.TABLE:
            row = fields.TABLE[path]
            assert (default.value, default.unit, default.source) == (row.default, row.unit, row.source)


DOC: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "accelerator": {"preset": "h100-sxm"}, "gpus": 512},
    "site": {"region": "quebec"},
    "training": {"global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
    "economics": {"job_days": 30},
}
NEW_PRICES = {
    "cluster.accelerator.unit_price_usd": 21_500.0,
    "site.electricity_usd_per_kwh": 0.081,
    "economics.cloud_usd_per_gpu_hour": 2.4,
}


def _priced(document: dict[str, Any], values: dict[str, float | None]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for path, value in values.items():
        part, _, name = path.rpartition(".")
        target = out
        for key in part.split("."):
            target = target.setdefault(key, {})
        target[name] = value
    return out


@pytest.mark.parametrize(
    "values",
    [
        NEW_PRICES,
        {"site.electricity_usd_per_kwh": 0.2},
        {"economics.cloud_usd_per_gpu_hour": None, "cluster.accelerator.unit_price_usd": 0.0},
    ],
)
def test_with_prices_equals_resolving_the_priced_document(values: dict[str, float | None]) -> None:
    held = resolve(copy.deepcopy(DOC))
    repriced = held.with_prices(values)
    fresh = resolve(_priced(DOC, values))
    assert repriced.document == fresh.document and repriced.input_hash == fresh.input_hash
    assert repriced.ledger_fields == fresh.ledger_fields and repriced.cluster == fresh.cluster
    assert repriced.assumptions == fresh.assumptions
    assert solve_resolved(repriced) == solve_resolved(fresh)
    assert held == resolve(copy.deepcopy(DOC))  # the held scenario is unchanged


def test_with_prices_parses_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    held = resolve(copy.deepcopy(DOC))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a part was parsed again")

    for name in ("parse_model", "parse_cluster", "parse_site", "parse_training", "parse_economics"):
        monkeypatch.setattr(scenario, name, refuse)
    repriced = held.with_prices(NEW_PRICES)
    assert repriced.ledger_fields["electricity_usd_per_kwh"] == 0.081
    assert repriced.model is held.model and repriced.training is held.training
    assert repriced.layout is held.layout  # ``layouts`` (the arrays) are made from it on each read
    assert held.with_prices({}) is held


def test_with_prices_checks_paths_and_limits_like_the_parser() -> None:
    held = resolve(copy.deepcopy(DOC))
    with pytest.raises(ScenarioError) as info:
        held.with_prices(
            {
                "site.pue": 1.1,
                "site.electricity_usd_per_kwh": 11,
                "cluster.accelerator.unit_price_usd": None,
            }
        )
    assert [(e.path, e.message) for e in info.value.errors] == [
        ("site.pue", "not a price field"),
        ("site.electricity_usd_per_kwh", "must be <= 10, got 11"),
        ("cluster.accelerator.unit_price_usd", "must be a number, got null"),
    ]


def test_a_resolved_scenario_holds_no_dict_or_list() -> None:
    held = resolve(copy.deepcopy(DOC))

    def walk(value: Any, path: str) -> None:
        assert not isinstance(value, dict | list | set), path
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name), f"{path}.{f.name}")
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")

    walk(held, "resolved")
    with pytest.raises(dataclasses.FrozenInstanceError):
        held.cluster.gpus = 8  # type: ignore[misc]
    with pytest.raises(AttributeError):
        held.cluster.accelerator.peak_tflops._items = ()  # type: ignore[attr-defined]
    assert all(not getattr(held.layouts, f.name).flags.writeable for f in dataclasses.fields(held.layouts))


def test_nothing_of_a_document_is_kept_between_calls() -> None:
    """No cache, memo or pickled key in the input path: every call reads its document afresh."""
    package = Path(scenario.__file__).parent
    for source in sorted(package.glob("*.py")):
        text = source.read_text(encoding="utf-8")
        for pattern in (r"functools\.(lru_)?cache", r"__dict__", r"\bpickle\b", r"_CACHE\b"):
            assert not re.search(pattern, text), f"{source.name}: {pattern}"


def test_ledger_fields_replaced_equals_dataclasses_replace() -> None:
    fields_ = resolve(copy.deepcopy(DOC)).ledger_fields
    changes: dict[str, Any] = {"pue": 1.25, "cloud_usd_per_gpu_hour": None}
    replaced = fields_.replaced(changes)
    assert replaced == dataclasses.replace(fields_, **changes) and replaced != fields_
    assert fields_["pue"] != 1.25  # the original is untouched
    with pytest.raises(TypeError, match="unknown ledger field"):
        fields_.replaced({"pu": 1.0})


def test_resolved_document_keeps_a_given_tuple_as_a_list() -> None:
    """The held document reads back as a JSON reader of the report sees it: a tuple a caller put in the
    document comes back a list (the parsers build every list of the resolved document), floats bit for bit."""
    document = copy.deepcopy(DOC)
    document["cluster"]["reliability"] = {"other_mttf_h": (1e6, 0.1 + 0.2)}
    held = resolve(document)
    others = marshal.loads(held.document_bytes)["cluster"]["reliability"]["other_mttf_h"]
    assert others == [1e6, 0.1 + 0.2] and type(others) is list
    stack: list[Any] = [held.document]
    while stack:
        item = stack.pop()
        assert type(item) is not tuple
        stack.extend(item.values() if type(item) is dict else item if type(item) is list else ())


def test_every_static_default_notes_what_the_reader_would_write() -> None:
    """A field left to its static default notes the row's ``default_note``: the entry the reader would build
    from the row (held value, unit, source), so that taking the shortcut changes no report."""
    from solvers.inputs.reader import _held

    rows = [row for row in fields.TABLE.rows if row.has_default]
    assert rows
    for row in rows:
        note = row.default_note
        assert note is not None, row.path
        assert tuple(note) == (row.path, _held(row.default), row.unit, row.source), row.path
        assert type(note.value) is type(_held(row.default)), row.path
    assert all(row.default_note is None for row in fields.TABLE.rows if not row.has_default)


def test_ledger_fields_are_the_ledger_inputs_but_the_step() -> None:
    """``LedgerFields`` (what the parser resolves) and ``LedgerInputs`` (what the ledger reads) list the same
    fields with the same types, but the three step figures: a field added to one and not the other fails
    here, not in a report."""
    import dataclasses
    import typing

    from solvers.inputs.scenario import LedgerFields
    from solvers.ledger_inputs import LedgerInputs

    step = ("step_s", "gpu_busy_fraction", "tokens_per_step")
    assert LedgerInputs._fields[:3] == step
    assert sorted(f.name for f in dataclasses.fields(LedgerFields)) == sorted(LedgerInputs._fields[3:])
    inputs_types = typing.get_type_hints(LedgerInputs)
    fields_types = typing.get_type_hints(LedgerFields)
    for name in LedgerInputs._fields[3:]:
        assert fields_types[name] == inputs_types[name], name


def test_the_document_resolve_with_document_gives_is_the_resolved_document_and_nothing_holds_it() -> None:
    """``solve`` hands this document to the report as its ``scenario``: it equals the held one, and changing
    it (as a caller may change a report) changes nothing the ``Resolved`` holds."""
    held, document = scenario.resolve_with_document(copy.deepcopy(DOC))
    assert document == held.document
    document["cluster"]["reliability"]["other_mttf_h"].append(1.0)
    document["training"]["layout"]["tp"] = 1
    document["model"]["layers"] = 1
    assert held.document == resolve(copy.deepcopy(DOC)).document


def _preset_documents() -> list[dict[str, Any]]:
    """Parts naming every preset: each model, each node (its accelerator and fabrics), each accelerator and
    each fabric by name, each region; one part overriding a value each preset gives."""
    from solvers import catalog

    docs: list[dict[str, Any]] = [{"model": {"preset": key}} for key in catalog.MODELS]
    docs += [{"cluster": {"node": key}} for key in catalog.NODES]
    docs += [{"cluster": {"accelerator": key}} for key in catalog.ACCELERATORS]
    docs += [{"cluster": {"accelerator": {"preset": key, "tdp_w": 500}}} for key in catalog.ACCELERATORS]
    docs += [{"cluster": {"scale_up": key, "scale_out": {"preset": key}}} for key in catalog.FABRICS]
    docs += [{"cluster": {"scale_out": {"preset": key, "latency_us": 3}}} for key in catalog.FABRICS]
    docs += [{"site": {"region": key}} for key in catalog.REGIONS]
    docs += [{"site": {"region": key, "pue": 1.3}} for key in catalog.REGIONS]
    docs += [{"model": {"preset": key, "vocab": 1000}} for key in catalog.MODELS]
    return docs


def _part_notes(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    from solvers.inputs.reader import Reader

    r = Reader()
    part, raw = next(iter(document.items()))
    {"model": scenario.parse_model, "cluster": scenario.parse_cluster, "site": scenario.parse_site}[part](
        r, raw
    )
    assert not r.errors, r.errors
    return [(*note, type(note.value)) for note in r.assumptions]


def test_the_entries_of_presets_made_at_import_are_what_the_parsers_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parsers append a preset's entries from tables made at import; without those tables they write each
    entry as they read the field. Both give the same entries, in the same order, with the same value types."""
    from solvers.inputs import cluster, model, site

    fast = [_part_notes(doc) for doc in _preset_documents()]
    for module, table in (
        (model, "_PRESET_NOTES"),
        (cluster, "_ACCELERATOR_NOTES"),
        (cluster, "_PEAK_NOTES"),
        (cluster, "_LINK_NOTES"),
        (site, "_REGION_NOTES"),
    ):
        assert getattr(module, table), table
        monkeypatch.setattr(module, table, {})
    slow = [_part_notes(doc) for doc in _preset_documents()]
    assert fast == slow


# --- the reader's fast paths against the paths that name what is wrong -------------------------------------

_NUMERIC_ROWS = tuple(row for row in fields.TABLE.rows if row.kind in ("number", "integer"))
_EDGE_VALUES: tuple[Any, ...] = (
    True,
    False,
    0,
    1,
    8,
    8.0,
    8.5,
    -1,
    -1.0,
    0.0,
    -0.0,
    float("inf"),
    float("-inf"),
    float("nan"),
    2**70,
    -(2**70),
    10**20,
    1e20,
    2**53 + 1,
    float(2**53),
    1e-300,
    "8",
    "",
    None,
    [8],
    [],
    {"value": 8},
    {},
)


def _outcome(read: Any) -> tuple[Any, ...]:
    """What a read gives: the value with its type (and the sign of a zero), and the errors it wrote."""
    from solvers.inputs.reader import Reader

    r = Reader()
    value = read(r)
    sign = math.copysign(1.0, value) if type(value) is float else None
    return value, type(value), sign, [(e.path, e.message) for e in r.errors], list(r.assumptions)


def _number_path(row: Field, value: Any) -> tuple[Any, ...]:
    return _outcome(
        lambda r: r.number(
            value,
            row.path,
            minimum=row.minimum,
            maximum=row.maximum,
            integer=row.integer,
            exclusive_min=row.exclusive_min,
        )
    )


def _row_edges(row: Field) -> list[Any]:
    """The row's limits and the floats next to them, as ints and floats."""
    out: list[Any] = []
    for bound in (row.minimum, row.maximum):
        if math.isfinite(bound):
            out += [bound, math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf)]
            if float(bound).is_integer():
                out += [int(bound) - 1, int(bound), int(bound) + 1]
    return out


@pytest.mark.parametrize("row", _NUMERIC_ROWS, ids=[row.path for row in _NUMERIC_ROWS])
def test_the_number_fast_path_reads_what_the_error_path_reads(row: Field) -> None:
    """``Reader.field_number`` reads an exact int or finite float inside the limits itself and hands
    anything else to ``Reader.number``: for every numeric field and the edge values (bools, 8.0, 8.5, -1,
    -0.0, infinities, nan, huge ints, 2**53 + 1, strings, None, lists, objects, the limits and the floats
    beside them) both give the same value of the same type, or the same error at the same path."""
    for value in (*_EDGE_VALUES, *_row_edges(row)):
        fast = _outcome(lambda r, v=value: r.field_number(v, row))
        assert fast == _number_path(row, value) or (
            # nan is not equal to itself; the outcomes are still the same error
            isinstance(value, float) and math.isnan(value) and fast[3] == _number_path(row, value)[3]
        ), (row.path, value)
        elsewhere = _outcome(lambda r, v=value: r.field_number(v, row, "somewhere.else[3]"))
        expected = _outcome(
            lambda r, v=value: r.number(
                v,
                "somewhere.else[3]",
                minimum=row.minimum,
                maximum=row.maximum,
                integer=row.integer,
                exclusive_min=row.exclusive_min,
            )
        )
        assert elsewhere[3] == expected[3], (row.path, value)


@settings(max_examples=examples(200), deadline=None)
@given(
    row=st.sampled_from(_NUMERIC_ROWS),
    value=st.one_of(
        st.integers(),
        st.integers(min_value=-(2**80), max_value=2**80),
        st.floats(),
        st.floats(min_value=-1e6, max_value=1e6),
        st.booleans(),
        st.none(),
        st.text(max_size=3),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    ),
)
def test_the_number_fast_path_agrees_with_the_error_path_on_any_value(row: Field, value: Any) -> None:
    fast = _outcome(lambda r: r.field_number(value, row))
    slow = _number_path(row, value)
    if isinstance(value, float) and math.isnan(value):
        assert fast[3] == slow[3] and fast[0] is None
    else:
        assert fast == slow


_STATIC_OBJECTS = tuple(
    sorted({row.parent for row in fields.TABLE.rows if fields.TABLE.static_defaults(row.parent) is not None})
)


def test_some_objects_have_static_defaults() -> None:
    assert "training.efficiency.effects" in _STATIC_OBJECTS


@pytest.mark.parametrize("path", _STATIC_OBJECTS)
def test_row_defaults_of_an_empty_object_note_what_the_field_by_field_path_notes(path: str) -> None:
    """``row_defaults`` of an object the scenario leaves empty takes the entries the table made
    (``FieldTable.static_defaults``); field by field, ``row_default`` writes each entry from the row. Both
    give the same values (same types) and the same entries, in document order."""
    from solvers.inputs.reader import Reader, _held, row_default, row_defaults

    fast_reader, slow_reader = Reader(), Reader()
    fast = row_defaults(fast_reader, path, {})
    rows = fields.TABLE.children(path)
    slow = {row.name: row_default(slow_reader, row, {}) for row in rows}
    assert list(fast) == list(slow) == [row.name for row in rows]
    assert [(v, type(v)) for v in fast.values()] == [(v, type(v)) for v in slow.values()]
    assert fast_reader.assumptions == slow_reader.assumptions
    # and the entries are those a row's own default makes, with no note made ahead of time
    made = [Assumption(row.path, _held(row.default), row.unit, row.source) for row in rows]
    assert fast_reader.assumptions == made
    assert [(n.value, type(n.value)) for n in fast_reader.assumptions] == [
        (n.value, type(n.value)) for n in made
    ]
    assert not fast_reader.errors and not slow_reader.errors
    notes, values = fields.TABLE.static_defaults(path) or ((), ())
    assert tuple(notes) == tuple(made) and dict(values) == slow
