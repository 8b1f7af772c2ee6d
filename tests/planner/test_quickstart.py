"""The README's first command, end to end: `./dev up` on its own fresh servers reaches a green /healthz."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.processes import alive, free_port

UP_TIMEOUT_S = 180.0

# Fresh servers, a migration and three processes (about a minute): `./dev test-quickstart`, run by CI.
pytestmark = pytest.mark.quickstart


@pytest.fixture
def var_dir() -> Iterator[Path]:
    """The servers' folder, outside pytest's own temporary root: pytest keeps that root owner-only (0700) and
    resets it whenever another pytest session starts, while the embedded PostgreSQL runs as another system
    user that must traverse every folder above its data."""
    (ROOT / "var").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="quickstart-", dir=ROOT / "var"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_dev_up_brings_web_worker_and_beat_to_healthy(tmp_path: Path, var_dir: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    port = free_port()
    env.update(
        PLANNER_VAR_DIR=str(var_dir),
        PLANNER_PG_PORT=str(free_port()),
        PLANNER_REDIS_PORT=str(free_port()),
        PORT=str(port),
        STATIC_ROOT=str(tmp_path / "static"),
    )
    log_path = tmp_path / "up.log"
    pids: list[str] = []
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["./dev", "up"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while b"Planner is up" not in log_path.read_bytes():
            assert proc.poll() is None, log_path.read_text(errors="replace")[-4000:]
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-4000:]
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as res:
            body = json.load(res)
        assert res.status == 200
        assert {part: state["status"] for part, state in body["checks"].items()} == {
            "database": "ok",
            "broker": "ok",
            "workers": "ok",
            "beat": "ok",
        }
        # Every process runs under supervisord; none may outlive `./dev up` (each has its own process group).
        pids = subprocess.run(
            [sys.executable, "-m", "planner.supervise", "ctl", "pid", "all"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.split()
        assert len(pids) == 3 and all(pid.isdigit() and int(pid) > 0 for pid in pids), pids
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(45)  # supervisord stops web, worker and beat within 20 s + a kill
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run([sys.executable, "-m", "planner.embedded", "stop"], cwd=ROOT, env=env, check=False)
    survivors = [int(pid) for pid in pids if alive(int(pid))]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes {survivors} outlived ./dev up"
