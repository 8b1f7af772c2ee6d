"""The embedded servers' passwords: processes that generate or read them at the same time agree on one.

``ensure_secrets`` creates each password file with O_EXCL and only then writes the password into it. The
test session's plugin (``planner.pytest_embedded``) and ``python -m planner.embedded env`` read the passwords
without the start lock, so a bare ``pytest`` started beside ``./dev up`` (or a second ``pytest``) on a fresh
checkout can read a file its creator has not written yet: an empty password, which no server accepts.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

from planner import embedded


def test_two_processes_generating_the_passwords_at_once_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = embedded.EmbeddedServers(var_dir=tmp_path / "var", pg_port=1, redis_port=1)
    generate = secrets.token_urlsafe
    first_in = threading.Event()
    second_done = threading.Event()
    first_thread: list[threading.Thread] = []

    def slow_for_the_first(nbytes: int | None = None) -> str:
        # The first generator is slow to produce its password (scheduling, a loaded machine), once.
        if threading.current_thread() is first_thread[0] and not first_in.is_set():
            first_in.set()
            second_done.wait(5)
        return generate(nbytes)

    monkeypatch.setattr(embedded.secrets, "token_urlsafe", slow_for_the_first)
    results: dict[str, dict[str, str]] = {}

    def run(name: str) -> None:
        results[name] = embedded.ensure_secrets(servers)

    first = threading.Thread(target=run, args=("first",))
    first_thread.append(first)
    first.start()
    assert first_in.wait(10)
    second = threading.Thread(target=run, args=("second",))
    second.start()
    second.join(15)
    second_done.set()
    first.join(15)
    assert not first.is_alive() and not second.is_alive()
    assert results["second"][embedded.SUPERUSER], (
        "a process reading the passwords while another generates them took an empty superuser password"
    )
    assert results["first"] == results["second"]
