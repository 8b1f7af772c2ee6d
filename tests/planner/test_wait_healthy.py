"""``./dev up`` says the service is up only once /healthz has stayed green for longer than a web process
reuses its answer (``planner.health.HEALTH_CACHE_S``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from planner import wait_healthy
from planner.health import HEALTH_CACHE_S
from tests.processes import serve_json

GREEN = b'{"status": "ok", "down": [], "checks": {"workers": {"status": "ok"}}}'
DOWN = b'{"status": "degraded", "down": ["workers"], "checks": {"workers": {"status": "down"}}}'


@pytest.fixture
def server() -> Iterator[tuple[str, list[int], list[float]]]:
    """A loopback /healthz answering the queued statuses in turn (then 200), logging when each was asked."""
    statuses: list[int] = []
    asked: list[float] = []

    def answer() -> tuple[int, bytes]:
        asked.append(time.monotonic())
        status = statuses.pop(0) if statuses else 200
        return status, GREEN if status == 200 else DOWN

    with serve_json(answer) as port:
        yield f"http://127.0.0.1:{port}", statuses, asked


def test_one_green_answer_between_red_ones_is_not_up(
    server: tuple[str, list[int], list[float]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, statuses, asked = server
    monkeypatch.setattr(wait_healthy, "POLL_S", 0.05)
    # Another web process may still hold the 503 it computed just before the 200 (the flake this prevents).
    statuses.extend([503, 200, 503])
    assert wait_healthy.main(url) == 0
    assert "Planner is up" in capsys.readouterr().out
    # Up only after answers stayed green for longer than the cache, counted from the first green after the red.
    first_green_after_red = asked[3]
    assert asked[-1] - first_green_after_red > HEALTH_CACHE_S
    assert not statuses


def test_stays_green_from_the_start_is_up_after_the_cache_window(
    server: tuple[str, list[int], list[float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _, asked = server
    monkeypatch.setattr(wait_healthy, "POLL_S", 0.05)
    assert wait_healthy.main(url) == 0
    assert HEALTH_CACHE_S < asked[-1] - asked[0] < HEALTH_CACHE_S + 1.0
