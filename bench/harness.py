"""What the service benchmarks share: a scratch database, a private Celery queue, and real worker processes
whose readiness is read from their heartbeats (the same signal /healthz uses)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER_START_TIMEOUT_S = 60.0


def prepare_environment(*, database: str, queue_prefix: str) -> None:
    """Point Django at a fresh scratch database (unless BENCH_DATABASE_URL names one) and a private queue."""
    if not os.environ.get("BENCH_DATABASE_URL"):
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{database}"')
        os.environ["BENCH_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{database}"
    os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    os.environ["PLANNER_QUEUE"] = f"{queue_prefix}-{uuid.uuid4().hex[:8]}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    sys.path.insert(0, str(ROOT))


def start_workers(
    count: int, log_dir: Path, *, name_prefix: str, log_level: str = "WARNING"
) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` single-process ``celery worker``s on the private queue; wait for their heartbeats."""
    from planner import heartbeat

    procs: list[subprocess.Popen[bytes]] = []
    names: list[str] = []
    for i in range(count):
        name = f"{name_prefix}{i}-{uuid.uuid4().hex[:6]}@localhost"
        names.append(name)
        log = open(log_dir / f"{name_prefix}-worker{i}.log", "wb")  # noqa: SIM115 - open for the worker's lifetime
        cmd = [
            sys.executable, "-m", "celery", "-A", "planner", "worker", "-l", log_level, "-c", "1",
            "-P", "prefork", "-n", name, "-Q", os.environ["PLANNER_QUEUE"],
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
        procs.append(
            subprocess.Popen(
                cmd,
                cwd=ROOT,
                env={**os.environ, "HEARTBEAT_PERIOD_S": "1"},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S
    while not all(f"worker:{n}" in heartbeat.alive("worker:") for n in names):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            stop_workers(procs)
            raise SystemExit(f"workers did not start; see {log_dir}")
        time.sleep(0.2)
    return procs


def stop_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
