"""The production image (Dockerfile) runs production settings unless told otherwise.

docker-compose.yml sets PLANNER_ENV=production itself, but the image is also what a team runs on an added
worker host "with the same .env" (README, team deployment), and .env does not carry PLANNER_ENV (compose sets
it; .env.example has it commented out). Started with only the URLs it needs, the image must not come up in
development mode: DEBUG on (tracebacks and settings on every error page, gunicorn bound to 0.0.0.0) and,
without SECRET_KEY, the development key everyone knows (sessions and signed values forgeable).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def image_env() -> dict[str, str]:
    """The ENV lines of the Dockerfile's final stage."""
    env: dict[str, str] = {}
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            for name, value in re.findall(r"([A-Z_][A-Z0-9_]*)=(\S+)", line[4:]):
                env[name] = value
    return env


def test_the_image_with_only_its_urls_is_not_a_debug_server(tmp_path: Path) -> None:
    env = {
        **image_env(),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
        "STATIC_ROOT": str(tmp_path / "static"),
        "DATABASE_URL": "postgres://planner_app:pw@127.0.0.1:1/planner",
        "REDIS_URL": "redis://:pw@127.0.0.1:1/0",
    }
    probe = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        assert "SECRET_KEY" in done.stderr, done.stderr  # refusing to start without a secret is right
        return
    debug, key = done.stdout.split(maxsplit=1)
    assert debug == "False", f"the production image runs with DEBUG on and SECRET_KEY={key.strip()!r}"
