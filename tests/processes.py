"""Helpers of the tests that start servers and processes of their own: a free loopback port, and whether a
process still runs."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path


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
