"""Tailing the change feed loses nothing when transactions commit out of id order.

An event's id is taken when its row is written; a transaction that took a lower id can commit after one
that took a higher id. A client reading forward from the newest event it saw must still get the late one."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction

from scenarios import events
from scenarios.models import EVENT_RUN_FAILED, Event
from tests.api.conftest import World, build_world

pytestmark = pytest.mark.django_db(transaction=True)


def _record(team_id: int, name: str) -> None:
    events.record([events.event(kind=EVENT_RUN_FAILED, team_id=team_id, payload={"name": name})])


def _tail(world: World, after: str | None) -> list[dict[str, Any]]:
    query = f"?after={after}" if after else ""
    response = world.alice.client.get(f"/api/v1/events/{query}")
    assert response.status_code == 200, response.content[:300]
    rows: list[dict[str, Any]] = response.json()["results"]
    return rows


@contextlib.contextmanager
def _slow_event(team_id: int) -> Iterator[threading.Event]:
    """An event "slow" written in a transaction left open (it takes the lower id) until the body sets the
    yielded flag, then committed; the body writes a newer event meanwhile."""
    written, may_commit = threading.Event(), threading.Event()

    def slow() -> None:
        try:
            with transaction.atomic():
                _record(team_id, "slow")
                written.set()
                assert may_commit.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=slow)
    thread.start()
    try:
        assert written.wait(30)
        yield may_commit
    finally:
        may_commit.set()
        thread.join(30)


def test_an_event_committed_after_a_newer_one_is_not_skipped_by_a_tailing_client() -> None:
    world = build_world()
    _record(world.alpha.pk, "seen first")
    time.sleep(1.1)
    (start,) = _tail(world, None)
    with _slow_event(world.alpha.pk) as may_commit:
        _record(world.alpha.pk, "fast")  # a higher id, committed at once
        time.sleep(1.1)
        # While the slow transaction is open, the tail holds back the fast event rather than skip the slow one.
        assert _tail(world, start["id"]) == []
        may_commit.set()
    time.sleep(1.1)
    tail = _tail(world, start["id"])
    assert [row["payload"]["name"] for row in tail] == ["slow", "fast"]
    assert list(Event.objects.order_by("id").values_list("payload__name", flat=True)) == [
        "seen first",
        "slow",
        "fast",
    ]


def test_tailing_from_the_settled_header_skips_nothing() -> None:
    """Read the newest-first feed, then ``?after=`` the event its ``Events-Settled-Through`` header names. The
    newest event listed may not be settled (an open transaction holds a lower id): a tail from it would never
    show the event that commits later; a tail from the header's misses nothing."""
    world = build_world()
    _record(world.alpha.pk, "old")
    time.sleep(1.1)
    with _slow_event(world.alpha.pk):
        _record(world.alpha.pk, "fast")
        page = world.alice.client.get("/api/v1/events/")
        start = page["Events-Settled-Through"]
    newest = page.json()["results"][0]
    assert newest["payload"]["name"] == "fast" and start != newest["id"]  # the newest listed is not settled
    time.sleep(1.1)
    assert {row["payload"]["name"] for row in _tail(world, start)} >= {"slow", "fast"}
