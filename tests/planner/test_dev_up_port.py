"""``./dev up`` on a web port another server already holds (a second checkout's ``./dev up``, a gunicorn
left from an earlier run) must not announce that Planner is up: the answer on that port is not its own.

The servers are the test session's (its test database, this run's Redis database, a queue of its own), so no
embedded server starts; the port is held by a stand-in answering a green /healthz.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.processes import dev_up_environment, serve_json, stop_group

GREEN = (
    b'{"status": "ok", "down": [], "checks": {"database": {"status": "ok"}, "broker": {"status": "ok"}, '
    b'"workers": {"status": "ok", "alive": 1}, "beat": {"status": "ok", "alive": 1}}}'
)
UP_TIMEOUT_S = 150.0

# runs `./dev up`, as the quickstart suite does
pytestmark = pytest.mark.quickstart


@pytest.fixture
def other_server() -> Iterator[int]:
    """Another service's web on a loopback port: a green /healthz."""
    with serve_json(lambda: (200, GREEN)) as port:
        yield port


@pytest.mark.django_db(transaction=True)
def test_dev_up_does_not_report_up_when_its_web_port_is_taken(other_server: int, tmp_path: Path) -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="up-"))  # short: supervisord's control socket lives here
    env = dev_up_environment(
        var_dir=var_dir, static_dir=tmp_path / "static", queue="planner-up", port=other_server
    )
    log_path = tmp_path / "up.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["./dev", "up"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            text = log_path.read_text(errors="replace")
            # gunicorn gives up binding after five attempts a second apart
            if "Planner is up" in text or "Can't connect to" in text:
                break
            time.sleep(0.5)
        time.sleep(1.0)
        text = log_path.read_text(errors="replace")
        assert "Planner is up" not in text, (
            f"./dev up announced the server already on port {other_server} as its own while its own web "
            "could not bind the port:\n" + text[-3000:]
        )
    finally:
        stop_group(proc, timeout_s=45)
        shutil.rmtree(var_dir, ignore_errors=True)
