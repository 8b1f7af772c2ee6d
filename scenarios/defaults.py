"""What a fresh installation starts with: a global price book built from the solver catalog's sourced
defaults (accelerator unit prices, electricity prices per grid region). Idempotent: when any global book
exists, nothing is published, so an operator's own books are never shadowed by a re-run of this step."""

from __future__ import annotations

from typing import Any

from scenarios.models import PRICE_ACCELERATOR, PRICE_ELECTRICITY, PriceBook

DEFAULT_BOOK_NAME = "Catalog defaults"


def default_price_entries() -> list[dict[str, Any]]:
    """One accelerator entry per catalog accelerator with a price, one electricity entry per region."""
    from solvers import catalog_document

    catalog = catalog_document()
    entries: list[dict[str, Any]] = []
    for key, acc in sorted(catalog["accelerators"].items()):
        if acc.get("unit_price_usd"):
            entries.append(
                {
                    "kind": PRICE_ACCELERATOR,
                    "key": key,
                    "value": float(acc["unit_price_usd"]),
                    "source": str(acc.get("sources", {}).get("unit_price_usd", "solver catalog"))[:500],
                }
            )
    for key, region in sorted(catalog["regions"].items()):
        entries.append(
            {
                "kind": PRICE_ELECTRICITY,
                "key": key,
                "value": float(region["electricity_usd_per_kwh"]),
                "source": str(region.get("sources", {}).get("electricity_usd_per_kwh", "solver catalog"))[
                    :500
                ],
            }
        )
    return entries


def load_defaults() -> list[str]:
    """Publish the default global price book unless a global book exists; returns lines to print."""
    from scenarios.services import price_book_publish

    existing = PriceBook.objects.filter(team__isnull=True).order_by("-version").first()
    if existing is not None:
        return [f"global price book v{existing.version} ({existing.name}) already present: nothing loaded"]
    book = price_book_publish(
        team=None,
        user=None,
        name=DEFAULT_BOOK_NAME,
        entries=default_price_entries(),
        notes="Unit and electricity prices from the solver catalog, each with its source.",
        source="solvers catalog",
        fan_out="none",  # no plans exist yet on a fresh installation
    )
    return [f"published global price book v{book.version} with {book.entries.count()} prices"]
