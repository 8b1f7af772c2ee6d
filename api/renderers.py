"""CSV for procurement spreadsheets: ``Accept: text/csv`` or ``?format=csv``.

A view may define ``csv_table(data) -> (header, rows)`` to lay its own table out (compare does); otherwise
lists (paginated or not) become one row per item with nested fields flattened to dotted column names, and
errors become ``path,message`` rows. A page of a list says where the next page is in ``Link`` and how many rows
the list holds in ``X-Total-Count``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rest_framework.renderers import BaseRenderer


def flatten_row(item: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(item, Mapping):
        out: dict[str, Any] = {}
        for key, value in item.items():
            out.update(flatten_row(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix or "value": item}


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, list | tuple | dict):
        import json

        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    text = str(value)
    # A cell that a spreadsheet would run as a formula is prefixed with a quote (CSV injection).
    if text[:1] in {"=", "+", "-", "@", "\t", "\r"} and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def write_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue().encode("utf-8")


def _generic_table(data: Any) -> tuple[list[str], list[list[Any]]]:
    if isinstance(data, Mapping) and "errors" in data and "detail" in data:
        errors = data.get("errors") or [{"path": "", "message": data.get("detail", "")}]
        return ["path", "message"], [[e.get("path", ""), e.get("message", "")] for e in errors]
    items = (
        data.get("results") if isinstance(data, Mapping) and isinstance(data.get("results"), list) else data
    )
    if not isinstance(items, list):
        items = [items]
    flat = [flatten_row(item) for item in items]
    header: list[str] = []
    seen: set[str] = set()
    for row in flat:
        for key in row:
            if key not in seen:
                seen.add(key)
                header.append(key)
    return header, [[row.get(key) for key in header] for row in flat]


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        view = (renderer_context or {}).get("view")
        response = (renderer_context or {}).get("response")
        ok = response is None or response.status_code < 400
        table = getattr(view, "csv_table", None)
        header, rows = table(data) if ok and callable(table) else _generic_table(data)
        if ok and view is not None and response is not None and getattr(view, "csv_filename", None):
            response["Content-Disposition"] = f'attachment; filename="{view.csv_filename}"'
        if ok and response is not None:
            _page_headers(data, response)
        return write_csv(header, rows)


def _page_headers(data: Any, response: Any) -> None:
    """A page of a list as CSV holds its rows only: where the next and previous pages are (``Link``, RFC 8288)
    and how many rows the list holds (``X-Total-Count``, page-number lists) go in headers, so that a tool
    reading CSV does not take one page for the whole list."""
    if not (isinstance(data, Mapping) and isinstance(data.get("results"), list)):
        return
    links = [
        f'<{data[rel]}>; rel="{name}"'
        for rel, name in (("next", "next"), ("previous", "prev"))
        if data.get(rel)
    ]
    if links:
        response["Link"] = ", ".join(links)
    if isinstance(data.get("count"), int):
        response["X-Total-Count"] = str(data["count"])
