"""The price-file format shared by ``manage.py import_prices`` and price feeds: CSV ``kind,key,value[,unit,
source,effective_date,remove]`` or JSON, with the format detected from the declared one, the source and the
content."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from scenarios.models import (
    PRICE_FEED_FORMAT_AUTO,
    PRICE_FEED_FORMAT_CSV,
    PRICE_FEED_FORMAT_JSON,
)

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def has_scheme(source: str) -> bool:
    return bool(_SCHEME.match(source))


# --- The import format (shared with ``manage.py import_prices``) ----------------------------------------

CSV_REQUIRED = ("kind", "key", "value")
# A CSV cell is text: these spellings of ``remove`` become booleans; any other is left for the service to
# refuse with the row's path.
CSV_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class PriceFileError(ValueError):
    """The text is not a price file of its format (its shape, not its prices: those the publish checks)."""


def _csv_entry(row: Mapping[str | Any, str | Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {k: v for k, v in row.items() if k and v not in (None, "")}
    remove = entry.get("remove")
    if isinstance(remove, str) and remove.strip().lower() in CSV_BOOLEANS:
        entry["remove"] = CSV_BOOLEANS[remove.strip().lower()]
    return entry


class PriceFile(NamedTuple):
    """A price file as read: its entries, its book-level fields (name, notes, source, mode) and, for a CSV,
    the line of the file each entry ends on (blank lines are skipped and a quoted cell may span lines, so an
    entry's index alone does not find it in the file)."""

    entries: list[Any]
    meta: dict[str, Any]
    lines: tuple[int, ...] | None = None


def price_file_parse(text: str, fmt: str) -> PriceFile:
    """The entries and book-level fields of a price file in ``fmt`` ("csv" or "json").

    CSV: a header row naming ``kind,key,value`` and optionally ``unit,source,effective_date,remove``; one entry
    per row. JSON: a list of entries, or ``{"name", "notes", "source", "mode", "entries": [...]}``. Entries are
    returned as read; ``price_book_publish`` checks them. Raises ``PriceFileError`` for another shape."""
    if fmt == PRICE_FEED_FORMAT_CSV:
        try:
            reader = csv.DictReader(text.splitlines())
            missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise PriceFileError(f"the CSV header must name the columns {', '.join(missing)}")
            entries = []
            lines = []
            for row in reader:
                if None in row:  # more cells than the header names: 25,000 unquoted reads as 25 and 000
                    raise PriceFileError(
                        f"line {reader.line_num} has more cells than the header names ({', '.join(reader.fieldnames or [])}); "
                        'quote a value that holds a comma ("25,000") or write it without one (25000)'
                    )
                entries.append(_csv_entry(row))
                lines.append(reader.line_num)
            return PriceFile(entries, {}, tuple(lines))
        except csv.Error as exc:
            raise PriceFileError(f"not valid CSV ({exc})") from None
    if fmt == PRICE_FEED_FORMAT_JSON:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PriceFileError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise PriceFileError("not valid JSON (nested too deeply)") from None
        except ValueError:  # an integer of more than 4,300 digits (Python's limit on converting one)
            raise PriceFileError("not valid JSON (a number too long to read)") from None
        if isinstance(data, list):
            return PriceFile(data, {})
        if isinstance(data, dict) and isinstance(data.get("entries"), list):
            meta = {k: data[k] for k in ("name", "notes", "source", "mode") if isinstance(data.get(k), str)}
            return PriceFile(data["entries"], meta)
        raise PriceFileError("expected a list of entries or an object with an 'entries' list")
    raise PriceFileError(f"unknown format {fmt!r}; csv or json")


_ENTRY_PATH = re.compile(r"^entries\[(\d+)\](?:\.(.+))?$")


def entry_error_lines(
    errors: Mapping[str, list[str]], lines: tuple[int, ...] | None, *, rows: bool
) -> list[str]:
    """A publish's refusal (``{"entries[2].value": [...]}``) as one line per message, naming where each entry
    is in the file: with ``rows``, ``row 3: value: ...`` (entries counted from 1), else the service's path
    ``entries[2].value: ...``; for a CSV, either with the entry's line in the file (``row 3 (line 5): value:
    ...``, ``entries[2].value (line 5): ...``). Book-level errors (``__all__``) read ``book: ...``."""
    out: list[str] = []
    for field, messages in errors.items():
        match = _ENTRY_PATH.match(field)
        if match:
            index = int(match[1])
            line = f" (line {lines[index]})" if lines is not None and index < len(lines) else ""
            field_name = f": {match[2]}" if match[2] else ""
            where = f"row {index + 1}{line}{field_name}" if rows else field + line
        else:
            where = "book" if field == "__all__" else field
        out.extend(f"{where}: {message}" for message in messages)
    return out


def detect_format(declared: str, *, source: str, content_type: str = "", text: str = "") -> str:
    """The format of a feed's content: the declared one, else (``auto``) the extension of the source's path,
    else the answer's content type, else the content itself (JSON starts with ``[`` or ``{``)."""
    if declared != PRICE_FEED_FORMAT_AUTO:
        return declared
    path = urlsplit(source).path if has_scheme(source) else source
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in (".csv", ".json"):
        return suffix[1:]
    media = content_type.split(";")[0].strip().lower()
    if media in ("text/csv", "application/csv"):
        return PRICE_FEED_FORMAT_CSV
    if media == "application/json" or media.endswith("+json"):
        return PRICE_FEED_FORMAT_JSON
    return PRICE_FEED_FORMAT_JSON if text.lstrip()[:1] in ("[", "{") else PRICE_FEED_FORMAT_CSV
