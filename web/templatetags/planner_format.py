"""How the dashboard prints figures: a few significant digits and the unit, never a float's 16 digits.

The stored report keeps full precision (the API and the CSV downloads carry it); a page shows what a reader
can take in and what the model can stand behind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from django import template

register = template.Library()

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BYTES = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """``{{ mapping|get_item:key }}``: a mapping's value at a key that is a variable (None when absent)."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None


@register.filter
def sig(value: Any, digits: int = 3) -> str:
    """A number to ``digits`` significant digits with thousands separators; an em dash when not a number."""
    number = _number(value)
    if number is None:
        return "—"
    if number == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(number)))
    decimals = max(0, int(digits) - 1 - magnitude)
    rounded = round(number, decimals)
    return f"{rounded:,.{decimals}f}"


@register.filter
def si(value: Any, digits: int = 3) -> str:
    """A large number with an SI prefix (12.3 M); small ones as ``sig``."""
    number = _number(value)
    if number is None:
        return "—"
    for scale, prefix in _SI:
        if abs(number) >= scale:
            return f"{sig(number / scale, digits)} {prefix}"
    return sig(number, digits)


@register.filter
def usd(value: Any) -> str:
    """US dollars: $1.23 M, $45,600, $0.123."""
    number = _number(value)
    if number is None:
        return "—"
    sign = "−" if number < 0 else ""
    return f"{sign}${si(abs(number))}"


@register.filter
def pct(value: Any, digits: int = 3) -> str:
    """A fraction as a percentage (0.4123 -> 41.2%)."""
    number = _number(value)
    return "—" if number is None else f"{sig(100 * number, digits)}%"


@register.filter
def signed_pct(value: Any) -> str:
    """A percentage already in percent, with its sign (+4.1%, −0.3%)."""
    number = _number(value)
    if number is None:
        return "—"
    text = sig(abs(number), 2)
    return f"{'+' if number > 0 else '−' if number < 0 else '±'}{text}%"


@register.filter
def binary_bytes(value: Any) -> str:
    """Bytes with a binary prefix (80.0 GiB)."""
    number = _number(value)
    if number is None:
        return "—"
    for scale, unit in _BYTES:
        if abs(number) >= scale:
            return f"{sig(number / scale)} {unit}"
    return f"{sig(number)} B"


def with_unit(suffix: str) -> Callable[[Any], str]:
    """A printer of a number with its unit (``with_unit("days")(22.07)`` -> ``22.1 days``; — when absent)."""

    def printed(value: Any) -> str:
        text = sig(value)
        return text if text == "—" else f"{text} {suffix}"

    return printed


@register.filter
def tonnes_co2e(kg: Any) -> str:
    """kgCO2e printed as tonnes (16,492 kg -> ``16.5 tCO2e``)."""
    number = _number(kg)
    return "—" if number is None else f"{si(number / 1000)} tCO2e"
