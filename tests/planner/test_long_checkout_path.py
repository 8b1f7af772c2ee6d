"""``./dev up`` from a checkout in a deep folder (a worktree, a CI workspace): the embedded servers and
supervisord start there too.

Their folders are under ``var/`` (``PLANNER_VAR_DIR``); a Unix socket's path is limited to 107 bytes, which a
checkout path of about 80 characters already exceeds for PostgreSQL's socket (``var/postgres/.s.PGSQL.<port>``)
and supervisord's control socket (``var/supervisor/supervisor.sock``). Both are started here in a folder as
deep as such a checkout's ``var/``, on ports of their own, and stopped after.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner import embedded, supervise
from tests.conftest import ROOT
from tests.processes import free_port, stop_group

pytestmark = pytest.mark.integration  # starts PostgreSQL, Redis and supervisord

# A checkout at /home/<user>/src/github.com/<org>/<repository>-worktrees/<branch> is 70 to 90 characters.
CHECKOUT_PATH_LENGTH = 85


@pytest.fixture
def deep_var_dir() -> Iterator[Path]:
    """A folder standing for ``<checkout>/var`` of a checkout path CHECKOUT_PATH_LENGTH characters long (under
    the project's ``var/``: PostgreSQL may run as another system user that must traverse it)."""
    (ROOT / "var").mkdir(exist_ok=True)
    top = Path(tempfile.mkdtemp(prefix="deep-", dir=ROOT / "var"))
    checkout = top / ("c" * max(1, CHECKOUT_PATH_LENGTH - len(str(top)) - 1))
    var_dir = checkout / "var"
    var_dir.mkdir(parents=True)
    yield var_dir
    shutil.rmtree(top, ignore_errors=True)


def test_embedded_servers_start_from_a_deep_checkout(deep_var_dir: Path) -> None:
    servers = embedded.EmbeddedServers(var_dir=deep_var_dir, pg_port=free_port(), redis_port=free_port())
    try:
        embedded.ensure_running(servers)
    finally:
        embedded.stop(servers)


def test_supervisord_starts_from_a_deep_checkout(deep_var_dir: Path) -> None:
    folder = deep_var_dir / "supervisor"  # supervise.supervisor_dir() under PLANNER_VAR_DIR
    folder.mkdir(mode=0o700)
    conf = folder / "supervisord.conf"
    conf.write_text(
        supervise.render_config({"idle": f'{sys.executable} -c "import time; time.sleep(600)"'}, folder)
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(conf)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not supervise.control_socket(folder).exists() and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        output = b"" if proc.poll() is None else (proc.stdout.read() if proc.stdout else b"")
        assert proc.poll() is None, "supervisord did not start:\n" + output.decode(errors="replace")[-2000:]
    finally:
        stop_group(proc, timeout_s=30)
