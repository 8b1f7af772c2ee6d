"""Commands the README gives to be run as written work as written (the `...` placeholders filled in)."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_readme_check_deploy_command_passes_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"`(PLANNER_ENV=production [^`]*check --deploy[^`]*)`", readme)
    assert match is not None, "the README no longer gives the check --deploy command"
    command = (
        match.group(1)
        .replace("SECRET_KEY=...", f"SECRET_KEY={secrets.token_urlsafe(50)}")
        .replace("ALLOWED_HOSTS=...", "ALLOWED_HOSTS=planner.example.com")
    )
    assert "..." not in command, command
    # A shell as a reader has it: the project's interpreter first on PATH, none of the project's variables.
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
