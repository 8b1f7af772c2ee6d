"""The ``site`` part: grid carbon intensity, PUE, water and electricity price.

A value the user gives > the region's (``site.region``, ``solvers.catalog.regions``) > the table's default.
"""

from __future__ import annotations

from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.inputs.reader import SCENARIO, Reader, join, read_numbers, row_default, table_default

PATH = "site"


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
        assert region is not None
        return f"region '{region_key}': {region['sources'][name]}"

    doc: dict[str, Any] = {}
    for row in fields.TABLE.numbers(path):
        doc[row.name] = float(
            row_default(r, row, nums, preset=region, preset_source=region_source if region else None)
        )
    return doc
