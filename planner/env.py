"""The one place the project reads its environment: typed readers that fail with the variable's name.

Settings (``planner/settings.py``) read every tunable through these helpers, and so does the little code that
must run before settings exist (``planner.embedded``, ``./dev``'s helpers). An empty value counts as unset,
so ``FOO=`` in an env file means "use the default" rather than an empty string.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    value = env_str(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    value = env_str(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an integer") from None


def env_float(name: str, default: float) -> float:
    value = env_str(name)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


_RATE = re.compile(r"^\s*\d+\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")


def env_rate(name: str, default: str) -> str:
    """A request rate as DRF's throttles read it ("600/min"): refused at start, naming the variable, rather
    than failing every throttled request."""
    value = env_str(name, default) or default
    if not _RATE.match(value):
        raise ImproperlyConfigured(
            f"{name}={value!r}: expected a rate such as 600/min (per s, min, hour or day)"
        )
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r}: expected one of {', '.join(choices)}")
    return value
