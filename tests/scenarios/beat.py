"""A real ``celery beat`` process for tests, on the shipped schedules (the sweeper every 30 s, as created by
``scenarios/migrations/0003_beat_schedules``), bound to the test database and queue."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT, TEST_QUEUE, database_url_for_tests
from tests.processes import stop_group


def ensure_shipped_schedules() -> None:
    """Transactional tests flush every table between tests, data migrations' rows included: put the shipped
    schedules back exactly as the migration creates them."""
    from django.apps import apps

    importlib.import_module("scenarios.migrations.0003_beat_schedules").create_schedules(apps, None)


@contextlib.contextmanager
def running_beat(tmp_path: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    from django.conf import settings

    ensure_shipped_schedules()
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "REDIS_URL": settings.REDIS_URL,
        "PLANNER_QUEUE": TEST_QUEUE,
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    log_path = tmp_path / "beat.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "planner", "beat", "-l", "INFO", "--pidfile="],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        stop_group(proc, timeout_s=15)
