"""``./dev up`` in a terminal that is closed: web, worker and beat stop with it, none is left behind.

Closing the terminal hangs it up: the kernel sends SIGHUP to the foreground process group, which holds
``./dev up``'s shell and the supervisord it started in the background. The servers are the test session's
(its test database, this run's Redis database, a queue of its own), so no embedded server starts.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.processes import alive, dev_up_environment, free_port

UP_TIMEOUT_S = 150.0
# supervisord stops its processes within stopwaitsecs (20 s) and a kill; a loaded machine is slower
STOP_TIMEOUT_S = 90.0

# runs `./dev up` under a terminal, as the quickstart suite does
pytestmark = pytest.mark.quickstart


def _children(pid: int) -> list[int]:
    with contextlib.suppress(FileNotFoundError):
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


@pytest.mark.django_db(transaction=True)
def test_closing_the_terminal_of_dev_up_stops_its_processes(tmp_path: Path) -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="hup-"))  # short: supervisord's control socket lives here
    env = dev_up_environment(
        var_dir=var_dir, static_dir=tmp_path / "static", queue="planner-hup", port=free_port()
    )
    pid, master = pty.fork()
    if pid == 0:  # the child: ./dev up with the pty as its controlling terminal
        os.chdir(ROOT)
        os.execve("./dev", ["./dev", "up"], env)
    output = b""
    supervisord = 0
    processes: list[int] = []
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while b"Planner is up" not in output:
            assert time.monotonic() < deadline, output.decode(errors="replace")[-4000:]
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    output += os.read(master, 65536)
                except OSError:
                    pytest.fail("./dev up ended:\n" + output.decode(errors="replace")[-4000:])
        supervisord = int((var_dir / "supervisor" / "supervisord.pid").read_text())
        processes = _children(supervisord)
        assert len(processes) == 3, processes
        os.close(master)  # the terminal is closed
        master = -1
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline and any(alive(p) for p in [supervisord, *processes]):
            time.sleep(0.5)
        left = [p for p in [supervisord, *processes] if alive(p)]
        assert not left, f"processes {left} of ./dev up outlived its terminal (supervisord {supervisord})"
    finally:
        if master >= 0:
            os.close(master)
        if supervisord and alive(supervisord):
            os.kill(supervisord, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while alive(supervisord) and time.monotonic() < deadline:
                time.sleep(0.5)
        for p in processes:  # each is the leader of its process group (a worker's pool, gunicorn's workers)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p, signal.SIGKILL)
        if supervisord and alive(supervisord):
            os.kill(supervisord, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        shutil.rmtree(var_dir, ignore_errors=True)
