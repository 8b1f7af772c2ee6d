"""Shared fixtures: personas and real Celery worker processes bound to the test database.

Workers are real ``celery worker`` subprocesses consuming a queue of their own through the real broker, so a
test sees exactly what production does: messages through Redis, rows through Postgres. They use the test
database (pytest-django's ``test_<name>``), so tests that use them need committed data (``transactional_db``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import profiles  # noqa: F401  (loads the Hypothesis profile before any test module)

ROOT = Path(__file__).resolve().parent.parent
TEST_QUEUE = f"planner-test-{os.getpid()}"
WORKER_START_TIMEOUT_S = 60.0

# --- test kinds and parallel runs -------------------------------------------------------------------
# Every test has exactly one kind (a pytest marker), so each suite is one `-m` expression (`./dev test-<kind>`):
#   unit         no server at all: no database, no broker (`./dev test-unit` proves it by pointing both URLs
#                at closed ports; the solver's tests run without Django there)
#   integration  real PostgreSQL, Redis and Celery worker processes
#   quickstart   the README's `./dev up` on fresh servers        fault    kill -9, broker and database outages
#   browser      the dashboard in Chromium                        slow     long property suites (schemathesis)
# quickstart, fault, browser and slow are marked where they are defined; unit and integration are derived
# here from what a test uses, so a new test cannot be left without a kind or filed under the wrong one.
DECLARED_KINDS = ("quickstart", "fault", "browser", "slow")
SERVER_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "django_db_setup",
        "live_server",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs before `-m` deselects (conftest hooks run before pytest's own), and after tests/browser's hook
    (the deeper conftest is registered later, so it is called first)."""
    for item in items:
        if any(item.get_closest_marker(kind) for kind in (*DECLARED_KINDS, "unit", "integration")):
            continue  # a test that says its kind keeps it
        uses_servers = item.get_closest_marker("django_db") is not None or bool(
            SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))
        )
        item.add_marker(pytest.mark.integration if uses_servers else pytest.mark.unit)


def redis_url_for_worker(url: str, worker: str) -> str:
    """The Redis database of one pytest-xdist worker: the configured index plus the worker's number (gw0 keeps
    it), wrapping round within the configured index and Redis's 16 databases, so that no worker takes a
    database below the configured one (``./dev test`` configures 1, ``planner.embedded.TEST_REDIS_DATABASE``:
    database 0 is the service's). Each worker also gets its own PostgreSQL test database (pytest-django
    appends ``_gw<N>``) and its own Celery queue (TEST_QUEUE), so parallel workers share no state: not the
    heartbeat set /healthz reads, not the throttling counters in the cache."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0) % REDIS_DATABASES
    index = base + int(worker.removeprefix("gw")) % (REDIS_DATABASES - base)
    return urlunsplit(parts._replace(path=f"/{index}"))


REDIS_DATABASES = 16  # a Redis server's default number of databases


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, move this worker to its own Redis database before anything connects. Settings were
    read already (pytest-django sets Django up before any conftest), but every Redis client is created
    lazily: the cache, the heartbeat client, the Celery app's broker connection."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not config.pluginmanager.hasplugin("django"):
        return
    from django.conf import settings

    url = redis_url_for_worker(settings.REDIS_URL, worker)
    settings.REDIS_URL = url
    settings.CELERY_BROKER_URL = url
    settings.CACHES["default"]["LOCATION"] = url
    os.environ["REDIS_URL"] = url
    from planner.celery import app

    app.conf.update(broker_url=url)


def _django_enabled(request: pytest.FixtureRequest) -> bool:
    """False when the solver's tests run without Django (`-p no:django`, see `./dev test-unit`)."""
    return request.config.pluginmanager.hasplugin("django")


@pytest.fixture(scope="session", autouse=True)
def _celery_test_queue(request: pytest.FixtureRequest) -> Iterator[None]:
    """Publish test tasks to a queue only the test's own workers consume."""
    if not _django_enabled(request):
        yield
        return
    from planner.celery import app

    previous = app.conf.task_default_queue
    app.conf.task_default_queue = TEST_QUEUE
    yield
    app.conf.task_default_queue = previous


@pytest.fixture(scope="session", autouse=True)
def _static_root(request: pytest.FixtureRequest) -> None:
    """Settings create no folder on import; whitenoise warns about a missing STATIC_ROOT, so the session
    makes it (`./dev up` fills it with collectstatic)."""
    if not _django_enabled(request):
        return
    from django.conf import settings

    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher(request: pytest.FixtureRequest) -> Iterator[None]:
    """Hash test users' passwords with MD5 instead of PBKDF2 (a million rounds, ~0.3 s a user on a busy
    machine; the API personas alone made every API test spend ~2 s creating users). Login still checks the
    password through the same hasher API. API tokens are unaffected: they are a single SHA-256 by design
    (api/models.py), in tests as in production. Production settings are untouched."""
    if not _django_enabled(request):
        yield
        return
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


def database_url_for_tests() -> str:
    from django.db import connection

    s = connection.settings_dict
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{s['NAME']}"


@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill9(self) -> None:
        """SIGKILL the whole worker: the main process and every pool child (its process group)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout_s: float = 20.0) -> None:
        stop_all([self], timeout_s=timeout_s)


def stop_all(workers: list[WorkerProcess], timeout_s: float = 20.0) -> None:
    """Warm-shut down several workers at once (SIGTERM to each, then wait): a warm shutdown takes a second
    or so (consumer, then the prefork pool), and the workers can wait it out together."""
    running = [w for w in workers if w.process.poll() is None]
    for worker in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for worker in running:
        try:
            worker.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            worker.kill9()


def start_worker(
    tmp_path: Path,
    *,
    concurrency: int = 2,
    env: dict[str, str] | None = None,
    queue: str = TEST_QUEUE,
    wait: bool = True,
    extra_args: tuple[str, ...] = (),
    name: str | None = None,
) -> WorkerProcess:
    """Start ``celery -A planner worker`` on the test database and wait until its heartbeat appears."""
    from django.conf import settings

    name = name or f"test-{uuid.uuid4().hex[:8]}@localhost"
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "REDIS_URL": settings.REDIS_URL,
        "PLANNER_QUEUE": queue,
        "HEARTBEAT_PERIOD_S": "1",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    log_path = tmp_path / f"{name.split('@')[0]}.log"
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "planner",
        "worker",
        "-l",
        "INFO",
        "-c",
        str(concurrency),
        "-P",
        "prefork",
        "-n",
        name,
        "-Q",
        queue,
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        *extra_args,
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    worker = WorkerProcess(name=name, process=proc, log_path=log_path)
    if wait:
        wait_until_ready(worker)
    return worker


def wait_until_ready(*workers: WorkerProcess) -> None:
    """Wait until every worker's heartbeat appears (workers started with ``wait=False`` boot in parallel)."""
    from planner import heartbeat

    deadline = time.monotonic() + WORKER_START_TIMEOUT_S
    pending = list(workers)
    while pending:
        alive = set(heartbeat.alive("worker:"))
        pending = [w for w in pending if f"worker:{w.name}" not in alive]
        for worker in pending:
            if worker.process.poll() is not None or time.monotonic() > deadline:
                stop_all(list(workers))
                raise RuntimeError(f"celery worker {worker.name} did not start:\n{worker.log()[-4000:]}")
        if pending:
            time.sleep(0.1)


@pytest.fixture
def worker_factory(transactional_db: None, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start as many real workers as a test needs; all are stopped at teardown (together).

    ``worker_factory(wait=False)`` returns at once; pass the workers to ``wait_until_ready`` to let several
    boot in parallel."""
    started: list[WorkerProcess] = []

    def factory(**kwargs: object) -> WorkerProcess:
        worker = start_worker(tmp_path, **kwargs)  # type: ignore[arg-type]
        started.append(worker)
        return worker

    yield factory
    stop_all(started)


@pytest.fixture
def celery_worker(worker_factory: Callable[..., WorkerProcess]) -> WorkerProcess:
    """One real worker process (prefork, 2 children) on the test database and the test queue."""
    return worker_factory()


def wait_for(predicate: Callable[[], bool], *, timeout_s: float = 30.0, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


# --- personas ---------------------------------------------------------------------------------------
# alice: admin of team "alpha"; bob: viewer on alpha; carol: editor on alpha; mallory: member of team
# "beta" only; nobody: authenticated, in no team. Built by the scenarios models once they exist.


@pytest.fixture
def fresh_throttle_counts() -> None:
    """Deletes the throttle counters in this worker's Redis database. They are keyed by token or user id, and a
    test database made again hands out the same ids, so a test of a budget run within a minute of an earlier
    run would start over budget. Only the counters go (the same database holds the broker's queues)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(str(settings.CACHES["default"]["LOCATION"]))
    try:
        stale = list(client.scan_iter(match="*throttle_*", count=1000))
        if stale:
            client.delete(*stale)
    finally:
        client.close()
