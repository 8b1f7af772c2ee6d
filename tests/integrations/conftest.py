"""A real webhook receiver: an HTTP server on 127.0.0.1 in a thread, verifying every request with the
``standardwebhooks`` package and counting accepted deliveries per ``webhook-id``.

Its behaviour can change between attempts: ``ok`` (204 after verifying), ``error`` (500), ``slow`` (answers
after ``slow_s``, longer than the dispatcher's time-out), ``down`` (the socket is closed: connection refused).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool
    status: int


@dataclass
class Receiver:
    mode: str = "ok"
    slow_s: float = 1.5
    secrets: list[str] = field(default_factory=list)  # a request is verified when one of these verifies it
    requests: list[Received] = field(default_factory=list)
    accepted: Counter[str] = field(default_factory=Counter)  # webhook-id -> accepted deliveries
    port: int = 0
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/planner"

    def verify(self, body: bytes, headers: dict[str, str]) -> Any:
        """The payload when one of the receiver's secrets verifies the request; raises otherwise."""
        last: Exception = WebhookVerificationError("no secret")
        for secret in self.secrets:
            try:
                return Webhook(secret).verify(body, headers)
            except WebhookVerificationError as exc:
                last = exc
        raise last

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        mode = self.mode  # as the request arrived
        if mode == "slow":
            # Answers after the sender's time-out: the sender has given up, so nothing is accepted.
            time.sleep(self.slow_s)
            with self.lock:
                self.requests.append(Received(path, headers, body, False, 0))
            return 504, b"too late"
        if mode == "error":
            status, reply = 500, b"receiver error " + b"x" * 3000
        else:
            try:
                self.verify(body, headers)
                status, reply = 204, b""
            except WebhookVerificationError as exc:
                status, reply = 401, str(exc).encode()
        with self.lock:
            self.requests.append(Received(path, headers, body, status == 204, status))
            if status == 204:
                self.accepted[headers.get("webhook-id", "")] += 1
        return status, reply

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply = receiver.handle(self.path, headers, body)
                try:
                    self.send_response(status)
                    self.send_header("content-length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:  # the client gave up (time-out)
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self.server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def down(self) -> None:
        self.stop()
        self.mode = "down"

    def up(self, mode: str = "ok") -> None:
        self.mode = mode
        if self.server is None:
            self.start()  # the same port

    def bodies(self) -> list[Any]:
        import json

        return [json.loads(r.body) for r in self.requests]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rx = Receiver()
    rx.start()
    yield rx
    rx.stop()


@pytest.fixture
def webhook_settings(settings: Any) -> Any:
    """The local receiver is allow-listed; short time-out and backoff so failures are quick."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.WEBHOOK_TIMEOUT_S = 0.5
    settings.WEBHOOK_BACKOFF_BASE_S = 5.0
    settings.WEBHOOK_BACKOFF_MAX_S = 3600.0
    return settings


def emit(team: Any, kind: str = "price_book.published", **kwargs: Any) -> Any:
    """Record one event as the scenarios layer does and return the stored row."""
    from scenarios import events
    from scenarios.models import Event

    payload = kwargs.pop("payload", {"note": kind})
    row = events.event(kind=kind, team_id=team.pk if team is not None else None, payload=payload, **kwargs)
    events.record([row])
    return Event.objects.get(uid=row.uid)


def endpoint(team: Any, url: str, **kwargs: Any) -> tuple[Any, str]:
    """A new endpoint of ``team`` and its signing secret (shown once)."""
    from integrations import services

    created = services.endpoint_create(team=team, user=None, url=url, **kwargs)
    return created.endpoint, created.secret
