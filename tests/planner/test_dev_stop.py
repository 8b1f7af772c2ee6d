"""``./dev stop``: ``./dev up``'s processes are stopped first, then the embedded PostgreSQL and Redis.

A process of ``./dev up`` takes a while to stop: a worker finishes its task in its warm shutdown (up to
supervisord's ``stopwaitsecs``) and acknowledges it, beat and gunicorn close their connections. The servers
must outlive that. The test runs supervisord with one stand-in process that, asked to stop, takes two seconds
and then writes to the embedded Redis (as a worker acknowledging its task would), and a private embedded Redis
(own folder, own port); PostgreSQL is not started (its port is a free one, its folder empty).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner import embedded, supervise
from tests.conftest import ROOT
from tests.processes import free_port

# Starts a Redis server and supervisord: not a unit test.
pytestmark = pytest.mark.integration

STAND_IN = """
import signal, sys, time
import redis

url, out = sys.argv[1], sys.argv[2]


def stop(*_):
    time.sleep(2)  # finishing the task in hand
    try:
        redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2).set("stand-in:finished", "1")
        outcome = "ok"
    except Exception as exc:
        outcome = f"failed: {type(exc).__name__}: {exc}"
    with open(out, "w") as fh:
        fh.write(outcome)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
with open(out + ".started", "w") as fh:
    fh.write("1")
while True:
    time.sleep(0.2)
"""


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="stop-"))  # short: the control socket's path has a length limit
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_dev_stop_stops_the_servers_only_after_the_processes(folder: Path) -> None:
    servers = embedded.EmbeddedServers(var_dir=folder, pg_port=free_port(), redis_port=free_port())
    embedded.ensure_secrets(servers)
    embedded._start_redis(servers)  # only Redis: PostgreSQL's folder stays empty, so `stop` skips it
    script = folder / "stand_in.py"
    script.write_text(STAND_IN)
    outcome = folder / "outcome"
    conf_dir = folder / "supervisor"
    conf_dir.mkdir(mode=0o700)
    conf = conf_dir / "supervisord.conf"
    conf.write_text(
        supervise.render_config(
            {"worker": f"{sys.executable} {script} {servers.redis_url} {outcome}"}, conf_dir
        )
    )
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}},
        "PLANNER_VAR_DIR": str(folder),
        "PLANNER_PG_PORT": str(servers.pg_port),
        "PLANNER_REDIS_PORT": str(servers.redis_port),
    }
    supervisord = subprocess.Popen(
        [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(conf)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not Path(f"{outcome}.started").exists():
            assert supervisord.poll() is None and time.monotonic() < deadline, "the stand-in did not start"
            time.sleep(0.1)
        time.sleep(0.5)
        done = subprocess.run(
            ["./dev", "stop"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        supervisord.wait(40)
        assert outcome.read_text() == "ok", (
            "./dev stop stopped the embedded Redis while a supervised process was still stopping: "
            f"{outcome.read_text()}"
        )
    finally:
        if supervisord.poll() is None:
            os.killpg(supervisord.pid, signal.SIGKILL)
            supervisord.wait(10)
        embedded.stop(servers)
