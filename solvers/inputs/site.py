"""The ``site`` part: grid carbon intensity, PUE, water and electricity price.

A value the user gives > the region's (``site.region``, ``solvers.catalog.regions``) > the table's default.
"""

from __future__ import annotations

from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.inputs.reader import (
    SCENARIO,
    Reader,
    join,
    preset_notes,
    read_numbers,
    row_default,
    table_default,
)

PATH = "site"


def _region_source(key: str, name: str) -> str:
    return f"region '{key}': {catalog.REGIONS[key]['sources'][name]}"


# The entry each region writes for each value it gives (``preset_notes``).
_REGION_NOTES = preset_notes(PATH, catalog.REGIONS, _region_source)


def parse_site(r: Reader, raw: Any, path: str = PATH) -> dict[str, Any] | None:
    given = r.section(raw, path)
    if given is None:
        return None
    before = len(r.errors)
    region_key: str | None
    if "region" in given:
        region_key = None
        if given["region"] is not None:
            region_key = r.key(given["region"], join(path, "region"), catalog.REGIONS, "region")
        r.note(join(path, "region"), region_key, "", SCENARIO)
    else:
        region_key = table_default(r, path, "region", given)
    nums = read_numbers(r, given, path)
    if len(r.errors) > before:
        return None
    region = catalog.REGIONS[region_key] if region_key else None

    def region_source(name: str) -> str:
        return _region_source(region_key or "", name)

    noted = _REGION_NOTES.get(region_key, {}) if region_key and path == PATH else {}
    doc: dict[str, Any] = {}
    for row in fields.TABLE.numbers(path):
        name = row.name
        if name not in nums and name in noted:  # the region's value: its entry is made once, at import
            r.assumptions.append(noted[name])
            doc[name] = float(region[name])  # type: ignore[index]
            continue
        doc[name] = float(
            row_default(r, row, nums, preset=region, preset_source=region_source if region else None)
        )
    return doc
