"""`./dev up`'s processes run under supervisord: one that dies is restarted, the others keep running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from planner import supervise
from planner.models import TaskProbe
from tests.conftest import ROOT, TEST_QUEUE, database_url_for_tests, wait_for


def test_config_restarts_every_procfile_process() -> None:
    processes = supervise.read_procfile()
    assert set(processes) == {"web", "worker", "beat"}
    conf = supervise.render_config(processes, Path("/run/x"))
    for name, command in processes.items():
        section = conf.split(f"[program:{name}]\n", 1)[1].split("\n\n", 1)[0]
        assert f"command=/bin/sh -c 'exec {command}'" in section
        assert "autorestart=true" in section
        assert "killasgroup=true" in section


@pytest.fixture
def supervised_worker() -> Iterator[tuple[list[str], Path]]:
    """supervisord running only the Procfile's worker, on the test database and the test queue."""
    folder = Path(tempfile.mkdtemp(prefix="sup-"))  # short: the control socket's path has a length limit
    env = {
        **os.environ,
        "PLANNER_VAR_DIR": str(folder),
        "DATABASE_URL": database_url_for_tests(),
        "REDIS_URL": settings.REDIS_URL,
        "PLANNER_QUEUE": TEST_QUEUE,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONUNBUFFERED": "1",
    }
    log = folder / "out.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "planner.supervise", "--only", "worker"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ctl = [sys.executable, "-m", "planner.supervise", "ctl"]
    try:
        yield ctl, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def _worker_pid(ctl: list[str], env: dict[str, str]) -> int:
    res = subprocess.run([*ctl, "pid", "worker"], cwd=ROOT, env=env, capture_output=True, text=True)
    try:
        return int(res.stdout.strip())
    except ValueError:
        return 0


def _probe(log: Path) -> None:
    from planner.tasks import probe

    token = uuid.uuid4().hex
    probe.delay(token)
    assert wait_for(lambda: TaskProbe.objects.filter(token=token).exists(), timeout_s=60), log.read_text()[
        -4000:
    ]


@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_is_restarted(supervised_worker: tuple[list[str], Path]) -> None:
    ctl, log = supervised_worker
    env = {**os.environ, "PLANNER_VAR_DIR": str(log.parent)}
    assert wait_for(lambda: _worker_pid(ctl, env) > 0, timeout_s=60), log.read_text()[-4000:]
    _probe(log)
    first = _worker_pid(ctl, env)
    os.kill(first, signal.SIGKILL)
    assert wait_for(lambda: _worker_pid(ctl, env) not in (0, first), timeout_s=60), log.read_text()[-4000:]
    second = _worker_pid(ctl, env)
    _probe(log)  # the restarted worker consumes the queue

    def status() -> str:
        return subprocess.run([*ctl, "status"], cwd=ROOT, env=env, capture_output=True, text=True).stdout

    # supervisord calls a process STARTING until it has lived startsecs; on a loaded machine the probe can
    # finish first, so the state is waited for, not read once.
    assert wait_for(lambda: "RUNNING" in status() and str(second) in status(), timeout_s=30), status()
