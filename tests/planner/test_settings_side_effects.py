"""Importing the settings reads the environment and nothing else: no server starts, no port opens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.processes import free_port


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _clean_env(tmp_path: Path, **extra: str) -> tuple[dict[str, str], list[int]]:
    """An environment without the project's URLs, pointing the embedded servers at fresh ports and a
    fresh folder, so any start would be visible."""
    ports = [free_port(), free_port()]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "MIGRATE_DATABASE_URL", "DATABASE_APP_ROLE"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="planner.settings",
        PLANNER_VAR_DIR=str(tmp_path / "var"),
        PLANNER_PG_PORT=str(ports[0]),
        PLANNER_REDIS_PORT=str(ports[1]),
        STATIC_ROOT=str(tmp_path / "static"),
        **extra,
    )
    return env, ports


# The child lists its own subprocesses after setup; a server it started (even daemonised) would also
# leave an open port or files in the var folder, which the tests check too.
PROBE = """
import os, django
try:
    django.setup()
    print("setup ok")
except Exception as exc:
    print(type(exc).__name__, exc)
print("children", open(f"/proc/self/task/{os.getpid()}/children").read().split())
"""


def test_settings_without_urls_fail_clearly_and_start_nothing(tmp_path: Path) -> None:
    env, ports = _clean_env(tmp_path)
    res = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert "ImproperlyConfigured DATABASE_URL and REDIS_URL not set" in res.stdout, res.stdout + res.stderr
    assert "./dev" in res.stdout
    assert "children []" in res.stdout
    assert not any(_port_open(port) for port in ports)
    assert not (tmp_path / "var").exists()
    assert not (tmp_path / "static").exists()


def test_settings_with_urls_connect_to_nothing_at_import(tmp_path: Path) -> None:
    db_port, redis_port = free_port(), free_port()
    env, ports = _clean_env(
        tmp_path,
        DATABASE_URL=f"postgres://planner@127.0.0.1:{db_port}/planner",
        REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
    )
    res = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert "setup ok" in res.stdout, res.stdout + res.stderr
    assert "children []" in res.stdout
    assert not any(_port_open(port) for port in [*ports, db_port, redis_port])
    assert not (tmp_path / "var").exists()
    assert not (tmp_path / "static").exists()


def test_a_session_of_solver_tests_starts_no_server(tmp_path: Path) -> None:
    """Without the URLs the test session may start the embedded servers (planner.pytest_embedded), but
    only for tests that can need them: collecting the solver's own tests starts nothing."""
    env, ports = _clean_env(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/solvers"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "tests/solvers/test_" in res.stdout
    assert not any(_port_open(port) for port in ports)
    assert not (tmp_path / "var" / "postgres").exists()
