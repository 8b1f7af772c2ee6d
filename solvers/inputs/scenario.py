"""Scenario document (CONTRACT.md v1) -> ``Resolved``: validated specs, a layout batch, the ledger's fields and
the assumptions ledger, computed once per call and kept nowhere.

Parsing is strict: an unknown key is an error (with "did you mean" when a known key is close), every number
must be finite, of the right type and inside the limits of the field table (``solvers.inputs.fields``), and
every catalog key must exist. All errors found are collected into one ``ScenarioError``, each naming its path.

Resolution merges presets and fills defaults in this order, highest first: explicit field > preset the
scenario names (model.preset, cluster.node, cluster.accelerator, cluster.scale_up / scale_out, site.region) >
default (the field table's, or the convention its parser names). Every value the numbers rest on is written
to the assumptions ledger ``[{key, value, unit, source}]``: "scenario" when the user gave it, the preset's
citation when a preset did, the default's source otherwise.

The resolved ``document`` is itself a complete, valid scenario document (presets expanded, every default
explicit), so re-solving it gives the same report, and ``canonical_hash(document)`` identifies the input
(``Resolved.input_hash``). A ``Resolved`` is immutable: reuse is the caller's choice (hold it, re-price it
with ``with_prices``), as with a fitted estimator; nothing is cached between calls.
"""

from __future__ import annotations

import copy
import dataclasses
import marshal
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from solvers import engine
from solvers.canonical import canonical_hash
from solvers.errors import ScenarioError, SolverInternalError
from solvers.inputs import fields
from solvers.inputs.cluster import parse_cluster
from solvers.inputs.economics import parse_economics
from solvers.inputs.fields import PARTS, SCHEMA_VERSION
from solvers.inputs.layout import layout_batch_of, layout_of
from solvers.inputs.model import parse_model
from solvers.inputs.reader import SCENARIO, Assumption, Reader
from solvers.inputs.site import parse_site
from solvers.inputs.training import parse_training, parse_training_alone
from solvers.layout import Layout
from solvers.ledger import Reliability, reliability
from solvers.ledger_assumptions import ledger_rows, step_assumptions
from solvers.plain import all_plain_finite
from solvers.specs import ClusterSpec, LayoutBatch, ModelSpec, TrainingSpec

TOP_KEYS: tuple[str, ...] = fields.TABLE.keys("")
_VALUE = itemgetter(1)  # an Assumption's value


@dataclass(frozen=True)
class LedgerFields(Mapping[str, Any]):
    """Every ``solvers.ledger.LedgerInputs`` field but the step's (step_s, gpu_busy_fraction,
    tokens_per_step). Reads like a mapping, so ``LedgerInputs(*step, **fields)`` takes it as it is."""

    gpus: int
    gpus_per_node: int
    accelerator_tdp_w: float
    accelerator_unit_price_usd: float
    accelerator_embodied_kgco2e: float
    storage_write_gb_s: float
    storage_per_writer_gb_s: float
    host_w_per_node: float
    idle_fraction: float
    gpu_mttf_h: float
    nic_mttf_h: float
    psu_mttf_h: float
    nics_per_node: int
    psus_per_node: int
    other_mttf_h: tuple[float, ...]
    restart_s: float
    mtbf_convention: str
    params: float
    optimizer: str
    precision: str
    total_tokens: float | None
    checkpoint_interval_h: float | None
    checkpoint_writers: int | None
    interval_method: str
    goodput_ledger: str
    grid_gco2_per_kwh: float
    pue: float
    wue_l_per_kwh: float
    electricity_usd_per_kwh: float
    job_days: float | None
    amortization_years: float
    infra_multiplier: float
    maintenance_per_year: float
    cloud_usd_per_gpu_hour: float | None
    embodied_lifetime_years: float

    def __iter__(self) -> Iterator[str]:
        return iter(_LEDGER_NAMES)

    def __len__(self) -> int:
        return len(_LEDGER_NAMES)

    def replaced(self, changes: Mapping[str, Any]) -> LedgerFields:
        """A copy with ``changes`` (field name -> value): ``dataclasses.replace`` without re-running the
        constructor over all 35 fields, a third of its time (it re-prices hundreds of plans at once)."""
        unknown = set(changes) - _LEDGER_SET
        if unknown:
            raise TypeError(f"unknown ledger field(s): {', '.join(sorted(unknown))}")
        new = copy.copy(self)
        for name, value in changes.items():
            object.__setattr__(new, name, value)
        return new

    def __getitem__(self, name: str) -> Any:
        if name not in _LEDGER_SET:
            raise KeyError(name)
        return getattr(self, name)


_LEDGER_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(LedgerFields))
_LEDGER_SET = frozenset(_LEDGER_NAMES)

# The ledger field each price of the document fills (``Resolved.with_prices``).
_PRICE_LEDGER: dict[str, str] = {
    "cluster.accelerator.unit_price_usd": "accelerator_unit_price_usd",
    "site.electricity_usd_per_kwh": "electricity_usd_per_kwh",
    "economics.cloud_usd_per_gpu_hour": "cloud_usd_per_gpu_hour",
}


@dataclass(frozen=True)
class Resolved:
    """A fully resolved scenario: what the engine and the ledger need, and how each value was chosen.

    Immutable throughout: specs are frozen dataclasses, the layout arrays are read-only, the document is kept
    as ``marshal`` bytes (of this process's own making; a third of the time of decoding its JSON text, and
    every float comes back with the same bits) and the assumptions as ``Assumption`` rows. ``document``,
    ``assumptions`` and ``report_assumptions`` give the caller a fresh dict and list every time they are
    read. ``with_prices`` gives the same scenario at other prices without parsing anything again.
    """

    document_bytes: bytes  # complete explicit scenario document (presets expanded, defaults filled), marshal
    model: ModelSpec
    cluster: ClusterSpec
    training: TrainingSpec
    layout_auto: bool
    ledger_fields: LedgerFields
    notes: tuple[Assumption, ...]
    # The step's and the ledger's assumption entries: they depend on the scenario only (accelerator peaks,
    # precision, ledger fields), so they are written here once and every report copies them.
    solve_notes: tuple[Assumption, ...]
    # The ledger's failures and checkpoints (``solvers.ledger.reliability``): they read no step figure and no
    # price, so they are made here once (frozen) and every report and re-pricing of the scenario uses them.
    reliability: Reliability
    # The given layout (None with ``layout_auto``), its engine row as (name, value) pairs of python scalars
    # (``solvers.engine.evaluate_one``: the step reads no price), or the first layout rule it breaks. The
    # step of a given layout depends on the scenario only, so it is evaluated here once; ``solve_resolved``
    # raises the rule as a ``ScenarioError``, as ``solve`` does. Both None with a layout: ``resolve(...,
    # step=False)`` left the step to ``solve_resolved``.
    layout: Layout | None
    step: tuple[tuple[str, float | int | bool], ...] | None
    layout_rule: str | None
    warnings: tuple[str, ...]
    document_hash: str  # canonical_hash of the document in ``document_bytes``
    # Prices set by ``with_prices`` over ``document_bytes``: (document path, value), in the order first set.
    prices: tuple[tuple[str, float | None], ...] = ()

    @property
    def document(self) -> dict[str, Any]:
        """The resolved document (prices included), a new copy on each read."""
        document: dict[str, Any] = marshal.loads(self.document_bytes)
        for path, value in self.prices:
            part, _, name = path.rpartition(".")
            target = document
            for key in part.split("."):
                target = target[key]
            target[name] = value
        return document

    @property
    def layouts(self) -> LayoutBatch:
        """The layout as read-only arrays (one row; none with ``layout_auto``: the search enumerates the
        candidates), made on each read: a report of one given layout reads ``layout`` and never needs them."""
        return layout_batch_of(self.layout)

    @property
    def input_hash(self) -> str:
        """``canonical_hash(document)``: what identifies the input (labels left out)."""
        return canonical_hash(self.document) if self.prices else self.document_hash

    @property
    def assumptions(self) -> list[dict[str, Any]]:
        """The assumptions ledger as report entries, a new list on each read."""
        return [note.as_dict() for note in self.notes]

    @property
    def report_assumptions(self) -> list[dict[str, Any]]:
        """The report's ``assumptions``: the scenario's, the step's and the ledger's entries, in that order,
        as new dicts in a new list on each read (one dict display per entry: a report has about a hundred)."""
        return [
            {
                "key": key,
                "value": list(value) if type(value) is tuple else value,
                "unit": unit,
                "source": source,
            }
            for notes in (self.notes, self.solve_notes)
            for key, value, unit, source in notes
        ]

    def with_prices(self, prices: Mapping[str, float | None]) -> Resolved:
        """This scenario with other prices, without parsing its document again.

        ``prices`` maps a price field's path (``cluster.accelerator.unit_price_usd``,
        ``site.electricity_usd_per_kwh``, ``economics.cloud_usd_per_gpu_hour``: the table's ``price`` rows)
        to its new value, checked against the table's limits; a path left out keeps its price. The result is
        what ``resolve`` gives for the document with those prices written in: the same document, specs,
        ledger fields and input hash, and the price's assumption entry with source "scenario". The document
        and its hash are only made again when read, so re-pricing many held plans costs little per plan.
        Raises ``ScenarioError`` naming the field for an unknown path or a value out of its limits.
        Example: ``resolved.with_prices({"site.electricity_usd_per_kwh": 0.08})``.
        """
        r = Reader()
        values: dict[str, float | None] = {}
        for path, value in prices.items():
            if path not in _PRICE_LEDGER or path not in fields.TABLE or not fields.TABLE[path].price:
                r.error(str(path), "not a price field")
                continue
            row = fields.TABLE[path]
            if value is None and row.nullable:
                values[path] = None
                continue
            parsed = r.field_number(value, row)
            if parsed is not None:
                values[path] = float(parsed)
        if r.errors:
            raise ScenarioError(r.errors)
        if not values:
            return self
        cluster = self.cluster
        unit_price = values.get("cluster.accelerator.unit_price_usd")
        if unit_price is not None:  # never null: the row is not nullable
            accelerator = dataclasses.replace(cluster.accelerator, unit_price_usd=unit_price)
            cluster = dataclasses.replace(cluster, accelerator=accelerator)
        notes = list(self.notes)
        for i in _price_notes(notes, values):
            notes[i] = notes[i]._replace(value=values[notes[i].key], source=SCENARIO)
        changes: dict[str, Any] = {_PRICE_LEDGER[path]: value for path, value in values.items()}
        merged = dict(self.prices)
        merged.update(values)
        ledger_fields = self.ledger_fields.replaced(changes)
        return dataclasses.replace(
            self,
            cluster=cluster,
            ledger_fields=ledger_fields,
            notes=tuple(notes),
            solve_notes=_solve_notes(
                cluster,
                self.training,
                ledger_fields,
                mla=self.model.mla is not None,
                mtp=self.model.mtp_layers > 0,
                head_dim=self.model.head_dim is not None,
            ),
            prices=tuple(merged.items()),
        )


def _price_notes(notes: list[Assumption], values: Mapping[str, Any]) -> list[int]:
    """The positions of the notes of the prices in ``values`` (resolve notes each price once)."""
    keys = set(values)
    return [i for i, note in enumerate(notes) if note.key in keys]


def _solve_notes(
    cluster: ClusterSpec,
    training: TrainingSpec,
    ledger: LedgerFields,
    *,
    mla: bool,
    mtp: bool,
    head_dim: bool,
) -> tuple[Assumption, ...]:
    """The step's and the ledger's assumption entries of a scenario, as rows (``Assumption``)."""
    entries = step_assumptions(
        cluster.accelerator.peak_tflops, training.precision, mla=mla, mtp=mtp, head_dim=head_dim
    )
    # each entry is {"key", "value", "unit", "source"} in that order: its values are the row's fields
    step_rows: list[dict[str, Any]] = entries  # type: ignore[assignment]  # the TypedDicts, as plain dicts
    rows: list[Iterable[Any]] = list(map(dict.values, step_rows))
    rows.extend(ledger_rows(ledger))
    notes = tuple(map(Assumption._make, rows))
    if not all_plain_finite(list(map(_VALUE, notes))):
        raise SolverInternalError("an assumption of the step or the ledger is not a plain finite value")
    return notes


def resolve(document: Any, *, step: bool = True) -> Resolved:
    """Validate a scenario document and resolve it; raises ``ScenarioError`` listing every broken rule.

    ``step=False`` leaves a given layout's engine step for ``solve_resolved`` to run (``Resolved.step`` and
    ``layout_rule`` both None): for a caller that only validates a document or reads its resolved form, one
    engine step less. The report is the same either way.

    Layout rules that need the engine (batch divisibility, ep, heads, experts) are checked by
    ``solvers.engine.check_layouts`` when the scenario is solved (or by ``solvers.validate_scenario``, for a
    caller that stores a document to solve later); this function checks types, limits,
    catalog keys, the GPU count split (tp*cp*pp divides gpus) and the batch's multiple of the sequence length.
    """
    return resolve_with_document(document, step=step)[0]


def resolve_with_document(document: Any, *, step: bool = True) -> tuple[Resolved, dict[str, Any]]:
    """``resolve(document, step=step)`` and the resolved document it made, a new dict that nothing else holds
    (``solve`` gives it to the report as its ``scenario``, instead of reading a copy back from the
    ``Resolved``)."""
    r = Reader()
    top = r.mapping(document, "", TOP_KEYS)
    if top is None:
        raise ScenarioError(r.errors)
    version = top.get("schema_version", SCHEMA_VERSION)
    if "schema_version" in top and (type(version) is not int or version != SCHEMA_VERSION):  # not True
        r.error("schema_version", f"must be {SCHEMA_VERSION}, got {top['schema_version']!r}")
    for text_field in ("name", "description"):
        if text_field in top:
            r.text(top[text_field], text_field, max_len=fields.TABLE[text_field].max_len)
    model, model_doc, preset_seq = parse_model(r, top.get("model"))
    cluster = parse_cluster(r, top.get("cluster"))
    site = parse_site(r, top.get("site"))
    economics = parse_economics(r, top.get("economics"))
    training = parse_training(
        r,
        top.get("training"),
        "training",
        model=model,
        cluster=cluster.spec if cluster else None,
        preset_seq=preset_seq,
    )
    if r.errors or model is None or cluster is None or site is None or economics is None or training is None:
        raise ScenarioError(r.errors)
    # Checked here once, so that no report has to walk these again.
    if not all_plain_finite(list(map(_VALUE, r.assumptions))):
        raise SolverInternalError("an assumption of the resolved scenario is not a plain finite value")
    train_spec, train_doc, layouts, auto, train_ledger = training
    document_out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": model_doc,
        "cluster": cluster.doc,
        "site": site,
        "training": train_doc,
        "economics": economics,
    }
    for text_field in ("name", "description"):
        if text_field in top:
            document_out[text_field] = top[text_field]
    ledger_fields = LedgerFields(
        **cluster.ledger,
        params=model.params,
        **train_ledger,
        grid_gco2_per_kwh=site["grid_gco2_per_kwh"],
        pue=site["pue"],
        wue_l_per_kwh=site["wue_l_per_kwh"],
        electricity_usd_per_kwh=site["electricity_usd_per_kwh"],
        job_days=economics["job_days"],
        amortization_years=economics["amortization_years"],
        infra_multiplier=economics["infra_multiplier"],
        maintenance_per_year=economics["maintenance_per_year"],
        cloud_usd_per_gpu_hour=economics["cloud_usd_per_gpu_hour"],
        embodied_lifetime_years=economics["embodied_lifetime_years"],
    )
    layout = held_step = rule = None
    if not auto:
        layout = layout_of(layouts[0])
    if layout is not None and step:
        held_step, rule = evaluate_step(model, cluster.spec, train_spec, layout)
    resolved = Resolved(
        # Every dict and list of ``document_out`` is one the parsers built (a list a caller gave, such as
        # ``other_mttf_h``, is copied into a new list, a tuple too; ``tests/solvers/test_inputs.py``), and every
        # leaf is an exact str, int, float, bool or None: ``marshal`` refuses anything else.
        document_bytes=marshal.dumps(document_out),
        model=model,
        cluster=cluster.spec,
        training=train_spec,
        layout_auto=auto,
        ledger_fields=ledger_fields,
        notes=tuple(r.assumptions),
        solve_notes=_solve_notes(
            cluster.spec,
            train_spec,
            ledger_fields,
            mla=model.mla is not None,
            mtp=model.mtp_layers > 0,
            head_dim=model.head_dim is not None,
        ),
        reliability=reliability(ledger_fields),
        layout=layout,
        step=held_step,
        layout_rule=rule,
        warnings=tuple(r.warnings),
        document_hash=canonical_hash(document_out),
    )
    return resolved, document_out


def evaluate_step(
    model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layout: Layout
) -> tuple[tuple[tuple[str, float | int | bool], ...] | None, str | None]:
    """A given layout's engine row as (name, value) pairs, or None and the first layout rule it breaks
    (``solvers.engine.evaluate_one``): what ``Resolved.step`` and ``Resolved.layout_rule`` hold."""
    row, rule = engine.evaluate_one(model=model, cluster=cluster, training=training, layout=layout)
    if row is not None:
        return tuple(row.items()), None
    return None, rule or "training.layout: invalid layout"


def validate_part(part: str, data: Any) -> dict[str, Any]:
    """Validate one part of a scenario on its own ("model", "cluster", "site", "training", "economics").

    Returns the part's resolved document (presets expanded, defaults filled); raises ``ScenarioError`` with
    paths prefixed by the part name (``cluster.gpus: ...``). ``training`` alone is checked for its own
    fields, types, limits and enums; the rules that need the model and cluster (GPU split, batch
    divisibility, precision supported by the accelerator) wait until a plan joins the parts.
    """
    if part not in PARTS:
        raise ScenarioError.single("", f"unknown part '{part}'; expected one of {', '.join(PARTS)}")
    r = Reader()
    out: dict[str, Any] | None
    if part == "model":
        _spec, out, _seq = parse_model(r, data)
    elif part == "cluster":
        parts = parse_cluster(r, data)
        out = parts.doc if parts else None
    elif part == "site":
        out = parse_site(r, data)
    elif part == "economics":
        out = parse_economics(r, data)
    else:
        out = parse_training_alone(r, data)
    if r.errors or out is None:
        raise ScenarioError(r.errors)
    return out
