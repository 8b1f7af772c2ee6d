"""``./dev``'s environment: what it takes from the embedded servers when the caller set some URLs itself.

The test runs ``./dev``'s own shell function with a stand-in Python; it starts no server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

DEV = ROOT / "dev"


def _embedded_env_function() -> str:
    """The ``embedded_env`` shell function of ``./dev``, as written."""
    match = re.search(r"^embedded_env\(\) \{\n.*?^\}\n", DEV.read_text(), re.S | re.M)
    assert match is not None, "./dev has no embedded_env function"
    return match.group(0)


def _run_embedded_env(tmp_path: Path, caller_env: dict[str, str], *args: str) -> dict[str, str]:
    """Run ``./dev``'s ``embedded_env ARGS`` with the caller's variables and return the environment it leaves.

    ``$PY`` is a stand-in for ``.venv/bin/python`` whose ``-m planner.embedded start`` starts nothing; its
    ``-m planner.embedded env`` is the real one (it only writes the passwords, under a private var dir)."""
    stub = tmp_path / "python"
    stub.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2 $3" = "-m planner.embedded start" ]; then exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    stub.chmod(0o755)
    script = (
        "set -euo pipefail\n"
        + f"PY={stub}\n"
        + _embedded_env_function()
        + f"embedded_env {' '.join(args)}\nenv\n"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "PLANNER_VAR_DIR": str(tmp_path / "var"),
        **caller_env,
    }
    done = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def test_dev_exports_no_embedded_app_role_along_with_the_callers_database(tmp_path: Path) -> None:
    """``./dev test`` (``embedded_env --owner``) with the caller's DATABASE_URL and no REDIS_URL takes only Redis
    from the embedded servers. ``DATABASE_APP_ROLE=planner_app`` belongs to the embedded PostgreSQL as much as
    its MIGRATE_DATABASE_URL does (which ./dev already drops in that case), and the test session's own plugin
    drops it (planner/pytest_embedded.py: ``env.pop("DATABASE_APP_ROLE")``); ./dev exports it, so `migrate` on
    the caller's database grants rights to a role of that name there."""
    caller_database = "postgres://someone:pw@db.example:5432/theirs"
    env = _run_embedded_env(tmp_path, {"DATABASE_URL": caller_database}, "--owner")
    assert env["DATABASE_URL"] == caller_database
    assert env.get("REDIS_URL", "").startswith("redis://"), "sanity: Redis comes from the embedded servers"
    assert "DATABASE_APP_ROLE" not in env, (
        f"./dev exported the embedded server's DATABASE_APP_ROLE={env.get('DATABASE_APP_ROLE')!r} "
        "with the caller's DATABASE_URL"
    )
