"""Webhook delivery at its edges: an endpoint disabled while its deliveries are claimed, an answer holding a NUL,
thresholds that are not numbers, events older than an endpoint, one claim run twice at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import transaction

from integrations import dispatch
from integrations.models import Delivery
from tests.integrations.conftest import Received, Receiver, emit, endpoint
from tests.scenarios.factories import make_team

pytestmark = pytest.mark.usefixtures("webhook_settings")


@pytest.mark.django_db
def test_a_disabled_endpoint_receives_no_more_requests_from_deliveries_already_claimed(
    receiver: Receiver,
) -> None:
    """failure_limit=2 and four events claimed in one pass: the endpoint is disabled by the second failure,
    yet the third and fourth claimed deliveries are still POSTed to it (and push its count past the limit)."""
    team = make_team()
    ep, secret = endpoint(team, receiver.url, failure_limit=2)
    receiver.secrets = [secret]
    for i in range(4):
        emit(team, payload={"n": i})
    receiver.mode = "error"
    dispatch.run_once()
    ep.refresh_from_db()
    assert not ep.enabled
    assert len(receiver.requests) == 2, "a disabled endpoint was still sent requests"
    assert ep.consecutive_failures == 2


@pytest.mark.django_db
def test_a_2xx_answer_whose_body_holds_a_nul_byte_is_recorded_as_delivered(receiver: Receiver) -> None:
    """The response excerpt is stored as text: a NUL byte in the receiver's answer (a binary or UTF-16 body)
    makes recording the attempt raise, so the delivery stays claimed, is sent again when its lease ends,
    and is never marked delivered (a duplicate every lease for 24 hours, none of them in the attempt log)."""
    team = make_team()
    ep, secret = endpoint(team, receiver.url)
    receiver.secrets = [secret]
    event = emit(team)

    def answer(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        receiver.verify(body, headers)
        with receiver.lock:
            receiver.accepted[headers["webhook-id"]] += 1
        return 200, '{"ok": true}'.encode("utf-16-le")  # NUL bytes between the characters

    receiver.handle = answer  # type: ignore[method-assign]
    try:
        outcomes = dispatch.run_once()
    except Exception as exc:
        pytest.fail(f"recording the attempt raised {type(exc).__name__}: {exc}")
    assert [o.delivered for o in outcomes] == [True]
    delivery = Delivery.objects.get(endpoint=ep)
    assert delivery.status == "delivered" and delivery.attempts == 1
    assert receiver.accepted[event.public_id] == 1


@pytest.mark.django_db(transaction=True)
def test_a_new_endpoint_does_not_receive_events_recorded_before_it_was_created(receiver: Receiver) -> None:
    """A new endpoint starts at the feed's newest event (services.endpoint_create: "receives the events
    recorded from now on"). Its transaction horizon is the oldest open transaction's id, and the fan-out's
    'late event' pass takes every unlinked event of the last hour written after that horizon: while any
    transaction is open (a long solve, an idle session), the events committed before the endpoint existed
    are delivered to it too."""
    team = make_team()
    opened, release, done = threading.Event(), threading.Event(), threading.Event()

    def long_transaction() -> None:
        from django.db import connection

        try:
            with transaction.atomic():
                make_team()  # any write: the transaction now holds an id and keeps the horizon back
                opened.set()
                release.wait(10)
                transaction.set_rollback(True)
        finally:
            connection.close()
            done.set()

    thread = threading.Thread(target=long_transaction)
    thread.start()
    try:
        assert opened.wait(10)
        before = emit(team, payload={"recorded": "before the endpoint"})
        _ep, secret = endpoint(team, receiver.url)
        receiver.secrets = [secret]
        after = emit(team, payload={"recorded": "after the endpoint"})
        dispatch.run_once()
        dispatch.run_once()
    finally:
        release.set()
        assert done.wait(10)
        thread.join()
    got = [r.headers["webhook-id"] for r in receiver.requests]
    assert before.public_id not in got, "an event recorded before the endpoint existed was delivered to it"
    assert got == [after.public_id]


@pytest.mark.django_db
def test_thresholds_saved_in_the_admin_are_checked_and_cannot_stop_other_teams_webhooks(
    admin_client: Any, receiver: Receiver
) -> None:
    """The admin's endpoint form checks ``thresholds`` and ``event_kinds`` as the API does
    (``integrations.services.endpoint_fields_clean``), and a threshold stored unchecked before that (not a
    number) is skipped by ``dispatch.matches``: it used to raise inside ``fan_out``'s one loop over every
    endpoint, and no later endpoint, of any team, got a delivery."""
    team, other = make_team(), make_team()
    typo, _ = endpoint(team, receiver.url + "?typo")
    _bystander, secret = endpoint(other, receiver.url + "?bystander")
    receiver.secrets = [secret]
    form = {
        "url": typo.url,
        "description": "",
        "event_kinds": "[]",
        "thresholds": '{"total_usd": "2%"}',
        "plan_id": "",
        "batch_size": "1",
        "enabled": "on",
        "failure_limit": "10",
        "_save": "Save",
    }
    admin_client.post(f"/admin/integrations/endpoint/{typo.pk}/change/", form)
    deltas = {"total_usd": {"previous": 1.0, "current": 1.1, "change_fraction": 0.1}}
    emit(team, "result.stored", payload={"result": 1, "figures": {}, "deltas": deltas})
    theirs = emit(other, "run.failed", payload={"run": 1})
    try:
        dispatch.run_once()
    except Exception as exc:
        pytest.fail(f"one endpoint's thresholds stopped the fan-out of every endpoint: {exc!r}")
    assert [r.headers["webhook-id"] for r in receiver.requests if "bystander" in r.path] == [theirs.public_id]


@pytest.mark.django_db(transaction=True)
def test_one_claim_sent_by_two_deliver_tasks_at_once_is_sent_once(receiver: Receiver) -> None:
    """A deliver task's message can run twice at the same time (Redis restores an unacknowledged message
    when the consumer's connection drops while the task is still running; acks_late). ``attempt`` only
    re-takes the claim's lease (``_take``: same token, lease extended), so both runs pass it and POST the
    same delivery concurrently, although the module promises that one delivery is never sent twice at once."""
    team = make_team()
    _ep, secret = endpoint(team, receiver.url)
    receiver.secrets = [secret]
    emit(team)
    dispatch.fan_out()
    [(pk, token)] = dispatch.claim_due()

    def slow_ok(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        import time

        with receiver.lock:
            receiver.requests.append(Received(path, headers, body, True, 204))
        time.sleep(0.3)  # within the sender's time-out (0.5 s)
        return 204, b""

    receiver.handle = slow_ok  # type: ignore[method-assign]
    barrier = threading.Barrier(2)
    outcomes: list[dispatch.Outcome] = []

    def run() -> None:
        from django.db import connection

        try:
            barrier.wait()
            outcomes.append(dispatch.attempt(pk, token))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.sent for o in outcomes) == [False, True], outcomes
    assert len(receiver.requests) == 1, "one claimed delivery was POSTed twice at the same time"
