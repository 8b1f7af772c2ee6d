"""Tailing the change feed loses nothing when transactions commit out of id order.

An event's id is taken when its row is written; a transaction that took a lower id can commit after one
that took a higher id. A client reading forward from the newest event it saw must still get the late one."""

from __future__ import annotations

import threading
import time
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


def test_an_event_committed_after_a_newer_one_is_not_skipped_by_a_tailing_client() -> None:
    world = build_world()
    _record(world.alpha.pk, "seen first")
    time.sleep(1.1)
    (start,) = _tail(world, None)
    slow_written, slow_may_commit = threading.Event(), threading.Event()

    def slow() -> None:
        try:
            with transaction.atomic():
                _record(world.alpha.pk, "slow")  # takes the lower id, commits last
                slow_written.set()
                assert slow_may_commit.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=slow)
    thread.start()
    assert slow_written.wait(30)
    _record(world.alpha.pk, "fast")  # a higher id, committed at once
    time.sleep(1.1)
    # While the slow transaction is open, the tail holds back the fast event rather than skip the slow one.
    assert _tail(world, start["id"]) == []
    slow_may_commit.set()
    thread.join(30)
    time.sleep(1.1)
    tail = _tail(world, start["id"])
    assert [row["payload"]["name"] for row in tail] == ["slow", "fast"]
    assert list(Event.objects.order_by("id").values_list("payload__name", flat=True)) == [
        "seen first",
        "slow",
        "fast",
    ]
