"""The embedded PostgreSQL's folder while its server runs: a start on another port leaves the server alone.

``PLANNER_PG_PORT`` is per shell, the data folder per checkout: a shell that exported another port (as the
"port is taken" error advises for a second checkout) and runs ``./dev`` in a checkout whose server is running
on the old port finds the new port closed. The start must not take the running server's lock file
(``postmaster.pid``) for a stale one: without it ``pg_ctl stop`` (``./dev stop``) cannot find the server, and
PostgreSQL, whose lock file has gone, shuts itself down under the processes using it.

A private server (own folder, own ports) is started for the test and stopped after it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner import embedded
from tests.conftest import ROOT
from tests.processes import alive, free_port

pytestmark = pytest.mark.integration  # starts a PostgreSQL server


@pytest.fixture
def running() -> Iterator[tuple[embedded.EmbeddedServers, int]]:
    # Outside pytest's owner-only temporary root: PostgreSQL may run as another system user (as root).
    (ROOT / "var").mkdir(exist_ok=True)
    var_dir = Path(tempfile.mkdtemp(prefix="port-", dir=ROOT / "var"))
    pair = embedded.EmbeddedServers(var_dir=var_dir, pg_port=free_port(), redis_port=free_port())
    pid = 0
    try:
        embedded.ensure_running(pair)
        pid = int((pair.pg_data / "postmaster.pid").read_text().split()[0])
        yield pair, pid
    finally:
        embedded.stop(pair)
        if pid and alive(pid):  # the server's lock file is gone: pg_ctl cannot stop it
            os.kill(pid, signal.SIGINT)  # fast shutdown
            deadline = time.monotonic() + 30
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
        shutil.rmtree(var_dir, ignore_errors=True)


def test_a_start_on_another_port_leaves_the_running_server_stoppable(
    running: tuple[embedded.EmbeddedServers, int],
) -> None:
    pair, pid = running
    moved = embedded.EmbeddedServers(var_dir=pair.var_dir, pg_port=free_port(), redis_port=pair.redis_port)
    with contextlib.suppress(RuntimeError):  # refusing to start a second server on the folder is right
        embedded.ensure_running(moved)
    assert (pair.pg_data / "postmaster.pid").exists(), (
        f"the start on port {moved.pg_port} deleted the lock file of the server running on {pair.pg_port}"
    )
    embedded.stop(pair)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pid), "`embedded stop` (./dev stop) left the server running"
