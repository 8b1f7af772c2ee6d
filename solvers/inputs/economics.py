"""The ``economics`` part: job length, amortisation, infrastructure, maintenance, cloud price, service life.

Every field is a number with a default in the field table (``solvers.inputs.fields``).
"""

from __future__ import annotations

from typing import Any

from solvers.inputs.reader import Reader, read_section

PATH = "economics"


def parse_economics(r: Reader, raw: Any, path: str = PATH) -> dict[str, Any] | None:
    return read_section(r, raw, path)
