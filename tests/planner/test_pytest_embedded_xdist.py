"""A bare ``pytest -n N`` (pytest-xdist) without DATABASE_URL/REDIS_URL starts the embedded servers, as a bare
``pytest`` does (README, "Where the servers come from").

The plugin (``planner.pytest_embedded``) exports the URLs in the controller and starts the servers once the
tests are collected; under xdist the controller collects nothing and the workers inherit the URLs, so the
servers must still be started by someone. The run below uses a private pair (own folder, own ports), stopped
after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from planner import embedded
from tests.conftest import ROOT
from tests.processes import free_port

pytestmark = pytest.mark.quickstart  # a fresh pytest session on fresh embedded servers, as on a new machine


def test_a_bare_parallel_pytest_starts_the_embedded_servers(tmp_path: Path) -> None:
    # Outside pytest's owner-only temporary root: PostgreSQL may run as another system user (as root).
    (ROOT / "var").mkdir(exist_ok=True)
    var_dir = Path(tempfile.mkdtemp(prefix="xdist-", dir=ROOT / "var"))
    servers = embedded.EmbeddedServers(var_dir=var_dir, pg_port=free_port(), redis_port=free_port())
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "MIGRATE_DATABASE_URL", "DATABASE_APP_ROLE"}
        and not key.startswith("PYTEST_")
    }
    env.update(
        PLANNER_VAR_DIR=str(var_dir),
        PLANNER_PG_PORT=str(servers.pg_port),
        PLANNER_REDIS_PORT=str(servers.redis_port),
        STATIC_ROOT=str(tmp_path / "static"),
    )
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-n",
                "2",
                "-p",
                "no:cacheprovider",
                "-W",
                "ignore",
                "tests/planner/test_load_defaults.py",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    finally:
        embedded.stop(servers)
        shutil.rmtree(var_dir, ignore_errors=True)
