"""Price resolution: which price a plan's scenario document is solved with, and where it came from.

Order, highest first, for each price a document uses:
  1. an explicit price in the scenario document (``cluster.accelerator.unit_price_usd``,
     ``site.electricity_usd_per_kwh``, ``economics.cloud_usd_per_gpu_hour``): origin ``scenario``;
  2. the team's newest price book, then the newest global book, key by key: origin ``team_book`` or
     ``global_book`` (the team book overrides the global one only for the keys it lists);
  3. the solver catalog (the accelerator's or region's own price) or the solver default: origin ``catalog``
     or ``default``. The document is left as it is, so the solver applies exactly that value.

Keys looked up in a book:
  accelerator unit price   kind "node" with the cluster's ``node`` preset (USD per node, divided by
                           ``gpus_per_node``), else kind "accelerator" with the accelerator's catalog key
  electricity              kind "electricity" with "site:<site scenario name>", else the site's region key
  cloud                    kind "cloud" with "<plan.cloud_provider>:<accelerator key>", else the accelerator key

``apply_prices`` returns the priced document and a provenance map {document path: PriceUsed}; the result's
input snapshot stores that map, so a number seen last month can be traced to the book version it used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from scenarios.models import (
    PRICE_ACCELERATOR,
    PRICE_CLOUD,
    PRICE_ELECTRICITY,
    PRICE_NODE,
    PRICE_UNITS,
    PriceBook,
    PriceEntry,
)

ORIGIN_SCENARIO = "scenario"
ORIGIN_TEAM_BOOK = "team_book"
ORIGIN_GLOBAL_BOOK = "global_book"
ORIGIN_CATALOG = "catalog"
ORIGIN_DEFAULT = "default"

PATH_ACCELERATOR_PRICE = "cluster.accelerator.unit_price_usd"
PATH_ELECTRICITY_PRICE = "site.electricity_usd_per_kwh"
PATH_CLOUD_PRICE = "economics.cloud_usd_per_gpu_hour"

# The solver's own conventions when the document names neither a node nor an accelerator (solvers.schema).
DEFAULT_ACCELERATOR_KEY = "h100-sxm"


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


@dataclass(frozen=True)
class PriceSheet:
    """The prices in effect for one team: its newest book over the newest global book."""

    global_book: BookRef | None = None
    team_book: BookRef | None = None
    quotes: Mapping[tuple[str, str], Quote] = field(default_factory=dict)

    def lookup(self, *, kind: str, keys: Iterable[str | None]) -> Quote | None:
        for key in keys:
            if key is None:
                continue
            quote = self.quotes.get((kind, key))
            if quote is not None:
                return quote
        return None

    @property
    def newest_book_id(self) -> int | None:
        """The book most recently published among those in effect (the event a re-run answers)."""
        ids = [book.id for book in (self.global_book, self.team_book) if book is not None]
        return max(ids) if ids else None


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


def _number(value: Any) -> float | None:
    """An explicit price as a float, or None when it is not a finite number: the document is then left as
    it is and the solver's validation reports the field path and the rule."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _book_ref(book: PriceBook | None) -> BookRef | None:
    if book is None:
        return None
    return BookRef(id=book.pk, version=book.version, team_id=book.team_id, name=book.name)


def latest_book(*, team_id: int | None) -> PriceBook | None:
    """The newest published book of a team (or the newest global book for ``team_id=None``)."""
    books = (
        PriceBook.objects.filter(team__isnull=True)
        if team_id is None
        else PriceBook.objects.filter(team_id=team_id)
    )
    return books.order_by("-version").first()


def book_quotes(*, book: PriceBook | None, origin: str) -> dict[tuple[str, str], Quote]:
    if book is None:
        return {}
    quotes: dict[tuple[str, str], Quote] = {}
    for entry in PriceEntry.objects.filter(price_book=book).order_by("kind", "key"):
        quotes[(entry.kind, entry.key)] = Quote(
            kind=entry.kind,
            key=entry.key,
            value=float(entry.value),
            unit=entry.unit,
            origin=origin,
            price_book_id=book.pk,
            price_book_version=book.version,
            source=entry.source,
            effective_date=entry.effective_date.isoformat() if entry.effective_date else None,
        )
    return quotes


def compose_sheet(
    *,
    global_book: PriceBook | None,
    team_book: PriceBook | None,
    global_quotes: Mapping[tuple[str, str], Quote] | None = None,
) -> PriceSheet:
    """Overlay a team book on a global book. ``global_quotes`` lets callers that build many team sheets
    load the global entries once."""
    quotes = (
        dict(global_quotes)
        if global_quotes is not None
        else book_quotes(book=global_book, origin=ORIGIN_GLOBAL_BOOK)
    )
    quotes.update(book_quotes(book=team_book, origin=ORIGIN_TEAM_BOOK))
    return PriceSheet(global_book=_book_ref(global_book), team_book=_book_ref(team_book), quotes=quotes)


def sheet_for_team(*, team_id: int) -> PriceSheet:
    return compose_sheet(global_book=latest_book(team_id=None), team_book=latest_book(team_id=team_id))


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
    )


def _accelerator_key(cluster: Mapping[str, Any]) -> str | None:
    from solvers import catalog

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
    from solvers import catalog

    cluster = document.get("cluster")
    if not isinstance(cluster, dict):
        return PriceUsed(value=None, unit=PRICE_UNITS[PRICE_ACCELERATOR], origin=ORIGIN_DEFAULT), None
    raw = cluster.get("accelerator")
    accel_key = _accelerator_key(cluster)
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
    node_quote = sheet.lookup(kind=PRICE_NODE, keys=[node_key])
    if node_quote is not None:
        gpus_per_node = cluster.get("gpus_per_node")
        if not isinstance(gpus_per_node, int) or gpus_per_node < 1:
            gpus_per_node = int(catalog.NODES.get(node_key or "", {}).get("gpus_per_node", 0)) or None
        if gpus_per_node:
            used = _from_quote(
                node_quote,
                value=node_quote.value / gpus_per_node,
                note=f"node price {node_quote.value:g} USD / {gpus_per_node} accelerators per node",
            )
            used = replace(used, unit=PRICE_UNITS[PRICE_ACCELERATOR])
    if used is None:
        accel_quote = sheet.lookup(kind=PRICE_ACCELERATOR, keys=[accel_key])
        if accel_quote is not None:
            used = _from_quote(accel_quote)
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
    from solvers import catalog
    from solvers.ledger_defaults import DEFAULTS

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
    document: dict[str, Any], sheet: PriceSheet, *, accelerator_key: str | None, cloud_provider: str
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
    if accelerator_key is not None:
        if cloud_provider:
            keys.append(f"{cloud_provider}:{accelerator_key}")
        keys.append(accelerator_key)
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
        PATH_CLOUD_PRICE: _price_cloud(
            priced, sheet, accelerator_key=accel_key, cloud_provider=cloud_provider
        ),
    }
    return priced, {path: dict(vars(used)) for path, used in provenance.items()}


def price_values(provenance: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """The numbers alone: two provenance maps with equal values solve to the same report."""
    return {path: used.get("value") for path, used in sorted(provenance.items())}
