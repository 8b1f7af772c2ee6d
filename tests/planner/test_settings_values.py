"""A bad environment value stops the service at start with a message naming the variable (never a traceback
that names something else, nor a setting that fails every request later); production refuses DEBUG."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = {"DATABASE_URL": "postgres://u@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0"}
SETUP = (
    "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'planner.settings'); django.setup()\n"
)


def _run(env: dict[str, str], code: str = "") -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "PLANNER_ENV"}}
    return subprocess.run(
        [sys.executable, "-c", SETUP + code],
        cwd=ROOT,
        env={**full, **BASE, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    "name,value",
    [
        ("LOG_LEVEL", "verbose"),
        ("DATABASE_URL", "localhost:5432"),
        ("DATABASE_URL", "postgres://u@h:abc/x"),
        ("REDIS_URL", "localhost:6379"),
        ("THROTTLE_SOLVE", "lots"),
        ("THROTTLE_TOKEN_FAILURES", "10 per minute"),
    ],
)
def test_bad_value_refused_at_start_naming_the_variable(name: str, value: str) -> None:
    res = _run({name: value})
    assert res.returncode != 0, f"{name}={value!r} accepted at start"
    assert f"{name}=" in res.stderr.strip().splitlines()[-1], res.stderr[-400:]


@pytest.mark.unit
def test_healthz_answers_503_not_500_for_a_broker_url_redis_cannot_read() -> None:
    """A URL of the right scheme that redis-py cannot read (a port that is no number) is a broker that is down."""
    res = _run(
        {"REDIS_URL": "redis://127.0.0.1:abc/0"},
        "from django.test import Client\nprint(Client(raise_request_exception=False).get('/healthz').status_code)",
    )
    assert res.returncode == 0, res.stderr[-400:]
    assert res.stdout.strip().splitlines()[-1] == "503", res.stdout


@pytest.mark.unit
def test_production_refuses_debug() -> None:
    res = _run(
        {"PLANNER_ENV": "production", "SECRET_KEY": "x" * 60, "DEBUG": "1"},
        "from django.conf import settings; print(settings.DEBUG)",
    )
    assert res.returncode != 0 and "DEBUG" in res.stderr, res.stdout
