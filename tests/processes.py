"""Helpers of the tests that start servers and processes of their own: a free loopback port, whether a process
still runs, stopping a process group, a stand-in HTTP server, and the environment of a `./dev up` under test."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A loopback port no one listens on now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError):
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    return False


def stop_group(proc: subprocess.Popen[Any], *, timeout_s: float) -> None:
    """Stop a process started in a session of its own, with its group: SIGTERM, then SIGKILL after
    ``timeout_s``."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def serve_json(answer: Callable[[], tuple[int, bytes]]) -> Iterator[int]:
    """A loopback HTTP server whose every GET is answered ``answer()`` (status, JSON body); its port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = answer()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


def dev_up_environment(*, var_dir: Path, static_dir: Path, queue: str, port: int) -> dict[str, str]:
    """The environment of a `./dev up` on the test session's servers (its test database, this run's Redis
    database) with a queue, a var folder and a web port of its own, so that nothing else's work is taken."""
    from django.conf import settings

    from tests.conftest import database_url_for_tests

    return {
        **{
            k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "MIGRATE_DATABASE_URL"}
        },
        "DATABASE_URL": database_url_for_tests(),
        "REDIS_URL": settings.REDIS_URL,
        "PLANNER_QUEUE": f"{queue}-{uuid.uuid4().hex[:8]}",
        "PLANNER_VAR_DIR": str(var_dir),
        "STATIC_ROOT": str(static_dir),
        "PORT": str(port),
    }
