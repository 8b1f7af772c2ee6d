"""Price resolution: which price a scenario document is solved with, and where it came from.

The one resolver of prices, shared by stored plans, sweeps, searches and the command line, so that no two
paths can price the same document differently. A price book reaches it as a plain ``PriceSheet`` (the
service loads it from the database; a sweep freezes it with its job); this module never reads one.

Order, highest first, for each price a document uses:
  1. an explicit price in the scenario document (``cluster.accelerator.unit_price_usd``,
     ``site.electricity_usd_per_kwh``, ``economics.cloud_usd_per_gpu_hour``): origin ``scenario``;
  2. the team's newest price book, then the newest global book: origin ``team_book`` or ``global_book``.
     Any key of the team's book that applies (below) beats every key of the global book, however specific:
     a team's accelerator price beats a global node price, a team's generic cloud price a global
     ``<provider>:<accelerator>`` one. Within one book the more specific key wins;
  3. the solver catalog (the accelerator's or region's own price) or the solver default: origin ``catalog``
     or ``default``. The document is left as it is, so the solver applies exactly that value.

Keys looked up in a book:
  accelerator unit price   kind "node" with the cluster's ``node`` preset (USD per node, divided by that
                           node's ``gpus_per_node`` in the catalog, whatever the cluster states) when the
                           cluster's accelerator is that node's own, else kind "accelerator" with the
                           accelerator's catalog key
  electricity              kind "electricity" with "site:<site scenario name>", else the site's region key
  cloud                    kind "cloud" with "<provider>:<accelerator key>", else the accelerator key

Prices are applied to a document whose swept or edited fields are already set: a sweep over
``cluster.node`` or ``site.region`` prices every point for its own accelerator and region.

``apply_prices`` returns the priced document and a provenance map {document path: PriceUsed as a dict};
``label_price_sources`` rewrites the report's assumption entries of book prices so that each names the
book (scope, name, version, id) and the entry's own source.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.ledger_defaults import DEFAULTS

PRICE_ACCELERATOR = "accelerator"
PRICE_NODE = "node"
PRICE_CLOUD = "cloud"
PRICE_ELECTRICITY = "electricity"
PRICE_KIND_CHOICES: tuple[tuple[str, str], ...] = (
    (PRICE_ACCELERATOR, "accelerator unit price (USD per accelerator)"),
    (PRICE_NODE, "node unit price (USD per node)"),
    (PRICE_CLOUD, "cloud price (USD per GPU-hour)"),
    (PRICE_ELECTRICITY, "electricity price (USD per kWh)"),
)
PRICE_KINDS: tuple[str, ...] = tuple(kind for kind, _ in PRICE_KIND_CHOICES)
PRICE_UNITS: dict[str, str] = {
    PRICE_ACCELERATOR: "usd",
    PRICE_NODE: "usd",
    PRICE_CLOUD: "usd_per_gpu_hour",
    PRICE_ELECTRICITY: "usd_per_kwh",
}

ORIGIN_SCENARIO = "scenario"
ORIGIN_TEAM_BOOK = "team_book"
ORIGIN_GLOBAL_BOOK = "global_book"
ORIGIN_CATALOG = "catalog"
ORIGIN_DEFAULT = "default"
BOOK_ORIGINS = (ORIGIN_TEAM_BOOK, ORIGIN_GLOBAL_BOOK)

PATH_ACCELERATOR_PRICE = "cluster.accelerator.unit_price_usd"
PATH_ELECTRICITY_PRICE = "site.electricity_usd_per_kwh"
PATH_CLOUD_PRICE = "economics.cloud_usd_per_gpu_hour"

# The document field each kind of price fills; its limits are the solver's own (the field table's row, which
# marks it as a price: ``solvers.inputs.fields``).
PRICE_FIELDS: dict[str, str] = {
    PRICE_ACCELERATOR: PATH_ACCELERATOR_PRICE,
    PRICE_NODE: PATH_ACCELERATOR_PRICE,
    PRICE_CLOUD: PATH_CLOUD_PRICE,
    PRICE_ELECTRICITY: PATH_ELECTRICITY_PRICE,
}

# A cloud provider's name: the ``<provider>`` of a cloud key ``aws:h100-sxm`` and a plan's cloud provider,
# which must be spelled alike for the key to be found.
PROVIDER_SLUG = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")


def provider_problem(provider: str) -> str | None:
    """Why ``provider`` cannot name a cloud provider, or None (the empty name means "no provider")."""
    if provider == "" or PROVIDER_SLUG.fullmatch(provider):
        return None
    return f"provider {provider!r} must be a lowercase slug (a-z, 0-9, '-', '_'), as in 'aws:h100-sxm'"


# The solver's own conventions when the document names neither a node nor an accelerator (solvers.inputs).
DEFAULT_ACCELERATOR_KEY = "h100-sxm"


def price_limits(kind: str) -> tuple[float, float]:
    """The inclusive range a price of ``kind`` may take: the solver's limits of the field it fills.

    A node price is divided by the node's accelerators before it reaches the field, so its upper bound is
    the per-accelerator bound times the largest node the solver accepts.
    Example: electricity -> (0, 10.0) USD/kWh, the limits of ``site.electricity_usd_per_kwh`` in the table."""
    row = fields.TABLE[PRICE_FIELDS[kind]]
    low, high = float(row.minimum), float(row.maximum)
    if kind == PRICE_NODE:
        high *= float(fields.TABLE["cluster.gpus_per_node"].maximum)
    return low, high


@dataclass(frozen=True)
class BookRef:
    id: int
    version: int
    team_id: int | None
    name: str


@dataclass(frozen=True)
class Quote:
    kind: str
    key: str
    value: float
    unit: str
    origin: str
    price_book_id: int
    price_book_version: int
    source: str
    effective_date: str | None
    price_book_name: str = ""


@dataclass(frozen=True)
class PriceSheet:
    """The prices in effect for one team: its newest book over the newest global book."""

    global_book: BookRef | None = None
    team_book: BookRef | None = None
    quotes: Mapping[tuple[str, str], Quote] = field(default_factory=dict)

    def lookup(self, *, kind: str, keys: Iterable[str | None]) -> Quote | None:
        """The quote for the first of ``keys`` (most specific first) that the team's book lists, else the
        first that the global book lists: the team's book is the team's own deal, so any of its keys that
        applies beats a more specific key of the global book (a team's H100 price beats a global DGX H100
        node price for the team's plans on DGX H100s)."""
        return self.lookup_pairs([(kind, key) for key in keys])

    def lookup_pairs(self, pairs: Iterable[tuple[str, str | None]]) -> Quote | None:
        """``lookup`` over (kind, key) pairs, most specific first (a node's price, then its accelerator's)."""
        found = [
            quote
            for kind, key in pairs
            if key is not None and (quote := self.quotes.get((kind, key))) is not None
        ]
        for quote in found:
            if quote.origin == ORIGIN_TEAM_BOOK:
                return quote
        return found[0] if found else None

    @property
    def newest_book_id(self) -> int | None:
        """The book most recently published among those in effect (the event a re-run answers)."""
        ids = [book.id for book in (self.global_book, self.team_book) if book is not None]
        return max(ids) if ids else None

    def to_json(self) -> dict[str, Any]:
        """A plain-JSON form (a sweep freezes the sheet its points are priced with)."""
        return {
            "global_book": None if self.global_book is None else vars(self.global_book),
            "team_book": None if self.team_book is None else vars(self.team_book),
            "quotes": [vars(quote) for _, quote in sorted(self.quotes.items())],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> PriceSheet:
        """The inverse of ``to_json``; None or an empty mapping is the empty sheet (catalog prices)."""
        if not data:
            return cls()
        books = {
            name: None if data.get(name) is None else BookRef(**data[name])
            for name in ("global_book", "team_book")
        }
        quotes = {(q["kind"], q["key"]): Quote(**q) for q in data.get("quotes") or ()}
        return cls(global_book=books["global_book"], team_book=books["team_book"], quotes=quotes)


@dataclass(frozen=True)
class PriceUsed:
    value: float | None
    unit: str
    origin: str
    key: str | None = None
    price_book_id: int | None = None
    price_book_version: int | None = None
    source: str = ""
    effective_date: str | None = None
    price_book_name: str = ""


def _number(value: Any) -> float | None:
    """An explicit price as a float, or None when it is not a finite number: the document is then left as
    it is and the solver's validation reports the field path and the rule."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _from_quote(quote: Quote, *, value: float | None = None, note: str = "") -> PriceUsed:
    source = quote.source if not note else f"{quote.source} ({note})" if quote.source else note
    return PriceUsed(
        value=quote.value if value is None else value,
        unit=quote.unit,
        origin=quote.origin,
        key=f"{quote.kind}:{quote.key}",
        price_book_id=quote.price_book_id,
        price_book_version=quote.price_book_version,
        source=source,
        effective_date=quote.effective_date,
        price_book_name=quote.price_book_name,
    )


def accelerator_key(cluster: Mapping[str, Any]) -> str | None:
    """The catalog key of the cluster's accelerator as the solver will resolve it (None: not a key)."""
    raw = cluster.get("accelerator")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, Mapping):
        preset = raw.get("preset")
        return preset if isinstance(preset, str) else None
    if raw is not None:
        return None  # not a key nor an object: the solver's validation names the field
    node_key = cluster.get("node")
    if isinstance(node_key, str) and node_key in catalog.NODES:
        return str(catalog.NODES[node_key]["accelerator"])
    return DEFAULT_ACCELERATOR_KEY


def _price_accelerator(document: dict[str, Any], sheet: PriceSheet) -> tuple[PriceUsed, str | None]:
    cluster = document.get("cluster")
    if not isinstance(cluster, dict):
        return PriceUsed(value=None, unit=PRICE_UNITS[PRICE_ACCELERATOR], origin=ORIGIN_DEFAULT), None
    raw = cluster.get("accelerator")
    accel_key = accelerator_key(cluster)
    if isinstance(raw, Mapping) and raw.get("unit_price_usd") is not None:
        return (
            PriceUsed(
                value=_number(raw["unit_price_usd"]),
                unit=PRICE_UNITS[PRICE_ACCELERATOR],
                origin=ORIGIN_SCENARIO,
            ),
            accel_key,
        )
    used: PriceUsed | None = None
    node_key = cluster.get("node") if isinstance(cluster.get("node"), str) else None
    # A node's price is the price of its own accelerators: a cluster that names the node but another
    # accelerator (a sweep over cluster.accelerator on a node-priced plan) is priced by that accelerator.
    # The quote is the catalog node's price, so its accelerators' price is that over the catalog node's count
    # (the count the book checked it with, ``scenarios.price_books.price_value_problem``), whatever count per
    # node the cluster states: a plan that uses 4 GPUs of each DGX H100 pays the same per GPU as the quote.
    node = catalog.NODES.get(node_key or "", {})
    node_gpus: int = node.get("gpus_per_node") or 0
    own_node = node.get("accelerator") == accel_key and node_gpus >= 1
    quote = sheet.lookup_pairs([(PRICE_NODE, node_key if own_node else None), (PRICE_ACCELERATOR, accel_key)])
    if quote is not None and quote.kind == PRICE_NODE:
        used = _from_quote(
            quote,
            value=quote.value / node_gpus,
            note=f"node price {quote.value:g} USD / {node_gpus} accelerators per node",
        )
        used = replace(used, unit=PRICE_UNITS[PRICE_ACCELERATOR])
    elif quote is not None:
        used = _from_quote(quote)
    if used is None:
        entry = catalog.ACCELERATORS.get(accel_key or "")
        if entry is not None:
            return (
                PriceUsed(
                    value=float(entry["unit_price_usd"]),
                    unit=PRICE_UNITS[PRICE_ACCELERATOR],
                    origin=ORIGIN_CATALOG,
                    key=f"{PRICE_ACCELERATOR}:{accel_key}",
                    source=str(entry.get("sources", {}).get("unit_price_usd", "")),
                ),
                accel_key,
            )
        return PriceUsed(value=None, unit=PRICE_UNITS[PRICE_ACCELERATOR], origin=ORIGIN_DEFAULT), accel_key
    priced = dict(raw) if isinstance(raw, Mapping) else {"preset": accel_key}
    priced["unit_price_usd"] = used.value
    cluster["accelerator"] = priced
    return used, accel_key


def _price_electricity(document: dict[str, Any], sheet: PriceSheet, *, site_name: str | None) -> PriceUsed:
    unit = PRICE_UNITS[PRICE_ELECTRICITY]
    site = document.get("site")
    if site is None:
        site = document["site"] = {}
    if not isinstance(site, dict):
        return PriceUsed(value=None, unit=unit, origin=ORIGIN_DEFAULT)
    if site.get("electricity_usd_per_kwh") is not None:
        return PriceUsed(value=_number(site["electricity_usd_per_kwh"]), unit=unit, origin=ORIGIN_SCENARIO)
    region = site["region"] if "region" in site else DEFAULTS["site.region"].value
    region_key = region if isinstance(region, str) else None
    quote = sheet.lookup(
        kind=PRICE_ELECTRICITY, keys=[f"site:{site_name}" if site_name else None, region_key]
    )
    if quote is not None:
        site["electricity_usd_per_kwh"] = quote.value
        return _from_quote(quote)
    if region_key is not None and region_key in catalog.REGIONS:
        entry = catalog.REGIONS[region_key]
        return PriceUsed(
            value=float(entry["electricity_usd_per_kwh"]),
            unit=unit,
            origin=ORIGIN_CATALOG,
            key=f"{PRICE_ELECTRICITY}:{region_key}",
            source=str(entry.get("sources", {}).get("electricity_usd_per_kwh", "")),
        )
    default = DEFAULTS["site.electricity_usd_per_kwh"]
    value = default.value if isinstance(default.value, int | float) else None
    return PriceUsed(
        value=None if value is None else float(value), unit=unit, origin=ORIGIN_DEFAULT, source=default.source
    )


def _price_cloud(
    document: dict[str, Any], sheet: PriceSheet, *, accelerator: str | None, cloud_provider: str
) -> PriceUsed:
    unit = PRICE_UNITS[PRICE_CLOUD]
    economics = document.get("economics")
    if economics is None:
        economics = document["economics"] = {}
    if not isinstance(economics, dict):
        return PriceUsed(value=None, unit=unit, origin=ORIGIN_DEFAULT)
    if economics.get("cloud_usd_per_gpu_hour") is not None:
        return PriceUsed(
            value=_number(economics["cloud_usd_per_gpu_hour"]), unit=unit, origin=ORIGIN_SCENARIO
        )
    keys: list[str | None] = []
    if accelerator is not None:
        if cloud_provider:
            keys.append(f"{cloud_provider}:{accelerator}")
        keys.append(accelerator)
    quote = sheet.lookup(kind=PRICE_CLOUD, keys=keys)
    if quote is None:
        return PriceUsed(
            value=None, unit=unit, origin=ORIGIN_DEFAULT, source="no cloud price: cloud_usd omitted"
        )
    economics["cloud_usd_per_gpu_hour"] = quote.value
    return _from_quote(quote)


def apply_prices(
    *, document: Mapping[str, Any], sheet: PriceSheet, site_name: str | None = None, cloud_provider: str = ""
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Return a priced copy of ``document`` and the provenance of each price: {path: PriceUsed as dict}.

    Example: a cluster ``{"accelerator": "h100-sxm"}`` with a global book listing accelerator h100-sxm at
    22,000 USD becomes ``{"accelerator": {"preset": "h100-sxm", "unit_price_usd": 22000.0}}`` and the map
    holds ``{"cluster.accelerator.unit_price_usd": {"value": 22000.0, "origin": "global_book", ...}}``.
    With the empty sheet the document comes back unchanged (catalog prices, applied by the solver).
    """
    # Only the parts prices are written into are copied (the document's other objects are shared, never
    # mutated): pricing 10,000 plans must not deep-copy 10,000 documents.
    priced = dict(document)
    for part in ("cluster", "site", "economics"):
        if isinstance(priced.get(part), Mapping):
            priced[part] = dict(priced[part])
    accel_used, accel_key = _price_accelerator(priced, sheet)
    provenance = {
        PATH_ACCELERATOR_PRICE: accel_used,
        PATH_ELECTRICITY_PRICE: _price_electricity(priced, sheet, site_name=site_name),
        PATH_CLOUD_PRICE: _price_cloud(priced, sheet, accelerator=accel_key, cloud_provider=cloud_provider),
    }
    return priced, {path: dict(vars(used)) for path, used in provenance.items()}


@dataclass(frozen=True)
class Pricing:
    """What prices one plan's documents: the sheet in effect, the site's scenario name (for ``site:`` keys)
    and the cloud provider (for ``<provider>:<accelerator>`` keys). Plain data: a sweep freezes it with its
    job and prices every point with it after the point's fields are set."""

    sheet: PriceSheet = field(default_factory=PriceSheet)
    site_name: str | None = None
    cloud_provider: str = ""

    def apply(self, document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        return apply_prices(
            document=document, sheet=self.sheet, site_name=self.site_name, cloud_provider=self.cloud_provider
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "sheet": self.sheet.to_json(),
            "site_name": self.site_name,
            "cloud_provider": self.cloud_provider,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Pricing:
        if not data:
            return cls()
        return cls(
            sheet=PriceSheet.from_json(data.get("sheet")),
            site_name=data.get("site_name"),
            cloud_provider=str(data.get("cloud_provider") or ""),
        )


def price_values(provenance: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """The numbers alone: two provenance maps with equal values solve to the same report."""
    return {path: used.get("value") for path, used in sorted(provenance.items())}


def book_source(used: Mapping[str, Any]) -> str | None:
    """The assumption source of a price that came from a book, or None for any other origin.

    Example: ``team price book 'Q3 cloud' v4 (id 17), entry accelerator:h100-sxm: vendor quote 2026-07``."""
    origin = used.get("origin")
    if origin not in BOOK_ORIGINS:
        return None
    scope = "team" if origin == ORIGIN_TEAM_BOOK else "global"
    name = used.get("price_book_name") or ""
    label = f"{scope} price book" + (f" '{name}'" if name else "")
    text = (
        f"{label} v{used.get('price_book_version')} (id {used.get('price_book_id')}), entry {used.get('key')}"
    )
    source = used.get("source") or ""
    return f"{text}: {source}" if source else text


def label_price_sources(
    assumptions: Sequence[Mapping[str, Any]], provenance: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The assumption entries with each book price's source naming its book (numbers untouched).

    The solver sees a book price as a value written into the document and would call it ``scenario``; the
    entry of that path instead says which book, version and entry the value came from."""
    sources = {path: book_source(used) for path, used in provenance.items()}
    out: list[dict[str, Any]] = []
    for entry in assumptions:
        source = sources.get(str(entry.get("key")))
        out.append({**entry, "source": source} if source is not None else dict(entry))
    return out
