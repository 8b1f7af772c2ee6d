"""The foundation: settings, health, real worker through the real broker, layer rules."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.test import Client

from planner.models import TaskProbe
from tests.conftest import ROOT, WorkerProcess, wait_for


def test_solvers_import_without_django() -> None:
    code = (
        "import sys, solvers\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django','rest_framework','celery','kombu','redis','psycopg','planner','scenarios','api'})\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    res = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.django_db(transaction=True)
def test_worker_executes_task_through_real_broker(celery_worker: WorkerProcess) -> None:
    from planner.tasks import probe

    token = uuid.uuid4().hex
    probe.delay(token)
    assert wait_for(lambda: TaskProbe.objects.filter(token=token).exists(), timeout_s=30), celery_worker.log()
    row = TaskProbe.objects.get(token=token)
    assert row.worker == celery_worker.name


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_each_part(celery_worker: WorkerProcess) -> None:
    from planner import health, heartbeat

    heartbeat.write("beat:test-host")
    health._cached = None
    res = Client().get("/healthz")
    body = res.json()
    assert res.status_code == 200, body
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "ok"
    assert body["checks"]["workers"]["alive"] >= 1


@pytest.mark.django_db(transaction=True)
def test_healthz_names_the_part_that_is_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dead broker is a 503 naming the broker (and the heartbeats it hides), never a 500."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from planner import health, heartbeat

    heartbeat.client.cache_clear()
    # No retries: redis-py's default (3 with exponential backoff) only adds ~4 s before the same error.
    dead = redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=0.2, socket_timeout=0.2, retry=Retry(NoBackoff(), 0)
    )
    monkeypatch.setattr(heartbeat, "client", lambda: dead)
    health._cached = None
    res = Client().get("/healthz")
    assert res.status_code == 503
    body = res.json()
    assert "broker" in body["down"]
    assert body["checks"]["database"]["status"] == "ok"
    health._cached = None


def test_production_settings_fail_fast_without_secret() -> None:
    env = {
        "PLANNER_ENV": "production",
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": "postgres://x@127.0.0.1:1/x",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "DJANGO_SETTINGS_MODULE": "planner.settings",
    }
    res = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0
    assert "SECRET_KEY is not set" in res.stderr


def test_production_settings_pass_check_deploy() -> None:
    env = {
        "PLANNER_ENV": "production",
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "x" * 20 + uuid.uuid4().hex + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "planner.example.com",
        "DATABASE_URL": "postgres://x@127.0.0.1:1/x",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    res = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
