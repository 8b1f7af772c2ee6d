"""Price books from the database, as the ``PriceSheet`` that ``solvers.prices`` resolves prices with.

The resolution rules themselves (explicit price > team book > global book > catalog, the keys looked up,
the provenance map) live in ``solvers.prices``, the one resolver that plans, sweeps, searches and the
command line share; this module only loads the books in effect and re-exports the resolver's names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db.models import Q

from scenarios.models import PriceBook, PriceEntry
from solvers.prices import (
    BOOK_ORIGINS,
    DEFAULT_ACCELERATOR_KEY,
    ORIGIN_CATALOG,
    ORIGIN_DEFAULT,
    ORIGIN_GLOBAL_BOOK,
    ORIGIN_SCENARIO,
    ORIGIN_TEAM_BOOK,
    PATH_ACCELERATOR_PRICE,
    PATH_CLOUD_PRICE,
    PATH_ELECTRICITY_PRICE,
    BookRef,
    PriceSheet,
    PriceUsed,
    Quote,
    apply_prices,
    label_price_sources,
    price_values,
)

__all__ = [
    "BOOK_ORIGINS",
    "DEFAULT_ACCELERATOR_KEY",
    "ORIGIN_CATALOG",
    "ORIGIN_DEFAULT",
    "ORIGIN_GLOBAL_BOOK",
    "ORIGIN_SCENARIO",
    "ORIGIN_TEAM_BOOK",
    "PATH_ACCELERATOR_PRICE",
    "PATH_CLOUD_PRICE",
    "PATH_ELECTRICITY_PRICE",
    "BookRef",
    "PriceSheet",
    "PriceUsed",
    "Quote",
    "apply_prices",
    "book_quotes",
    "compose_sheet",
    "label_price_sources",
    "latest_book",
    "newest_books",
    "price_values",
    "sheet_for_team",
    "sheets_for_teams",
]


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
    return _quotes(book, PriceEntry.objects.filter(price_book=book).order_by("kind", "key"), origin)


def _quotes(book: PriceBook, entries: Iterable[PriceEntry], origin: str) -> dict[tuple[str, str], Quote]:
    quotes: dict[tuple[str, str], Quote] = {}
    for entry in entries:
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
            price_book_name=book.name,
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


def newest_books(*, team_ids: Iterable[int]) -> dict[int | None, PriceBook]:
    """The newest book of each of these teams and the newest global book (key None), in one query."""
    books = (
        PriceBook.objects.filter(Q(team__isnull=True) | Q(team_id__in=list(team_ids)))
        .order_by("team_id", "-version")
        .distinct("team_id")
    )
    return {book.team_id: book for book in books}


def sheets_for_teams(
    *, books: Mapping[int | None, PriceBook], team_ids: Iterable[int]
) -> dict[int, PriceSheet]:
    """The sheet of each team from ``newest_books``' answer, loading every entry in one query."""
    by_book: dict[int, list[PriceEntry]] = {book.pk: [] for book in books.values()}
    for entry in PriceEntry.objects.filter(price_book_id__in=list(by_book)).order_by("kind", "key"):
        by_book[entry.price_book_id].append(entry)
    global_book = books.get(None)
    global_quotes = (
        {} if global_book is None else _quotes(global_book, by_book[global_book.pk], ORIGIN_GLOBAL_BOOK)
    )
    sheets: dict[int, PriceSheet] = {}
    for team_id in team_ids:
        team_book = books.get(team_id)
        quotes = dict(global_quotes)
        if team_book is not None:
            quotes.update(_quotes(team_book, by_book[team_book.pk], ORIGIN_TEAM_BOOK))
        sheets[team_id] = PriceSheet(
            global_book=_book_ref(global_book), team_book=_book_ref(team_book), quotes=quotes
        )
    return sheets
