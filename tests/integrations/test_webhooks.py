"""Signed webhooks against a real HTTP receiver on 127.0.0.1 (tests/integrations/conftest.py), driven in
process: ``dispatch.run_once(now=...)`` fans out and sends; time is passed, never slept."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from integrations import dispatch, services
from integrations.models import Delivery, DeliveryAttempt, DeliveryEvent, Endpoint
from scenarios.models import Event
from tests.integrations.conftest import Receiver, emit, endpoint
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.usefixtures("webhook_settings")


def result_stored(team: Any, **fractions: float | None) -> Event:
    deltas = {name: {"previous": 1.0, "current": 1.0, "change_fraction": f} for name, f in fractions.items()}
    return emit(team, "result.stored", payload={"result": 1, "figures": {}, "deltas": deltas})


# --- signatures -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_delivery_is_signed_as_standard_webhooks_says(receiver: Receiver) -> None:
    team = make_team()
    ep, secret = endpoint(team, receiver.url)
    assert secret.startswith("whsec_")
    receiver.secrets = [secret]
    event = emit(team, "run.failed", payload={"run": 7, "error": "boom"}, run_id=7)

    outcomes = dispatch.run_once()

    assert [o.delivered for o in outcomes] == [True]
    [request] = receiver.requests
    assert request.verified and request.status == 204
    assert request.headers["webhook-id"] == event.public_id
    payload = Webhook(secret).verify(request.body, request.headers)
    assert payload["id"] == event.public_id
    assert payload["type"] == "run.failed"
    assert payload["data"] == {"run": 7, "error": "boom"}
    assert request.headers["webhook-signature"].startswith("v1,")
    # Another secret does not verify it, nor does a changed body.
    with pytest.raises(WebhookVerificationError):
        Webhook(dispatch.new_secret()).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(request.body.replace(b"boom", b"bang"), request.headers)
    delivery = Delivery.objects.get(endpoint=ep)
    assert (delivery.status, delivery.attempts, delivery.webhook_id) == ("delivered", 1, event.public_id)
    [attempt] = delivery.attempt_log.all()
    assert attempt.status_code == 204 and attempt.succeeded and attempt.latency_ms is not None


# --- retries --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_down_slow_and_failing_receivers_get_retries_with_backoff_then_one_accepted_delivery_each(
    receiver: Receiver,
) -> None:
    team = make_team()
    ep, secret = endpoint(team, receiver.url)
    receiver.secrets = [secret]
    sent = [emit(team, payload={"n": i}) for i in range(3)]
    receiver.down()
    now = timezone.now()

    def attempt_at(when: Any) -> list[dispatch.Outcome]:
        return dispatch.run_once(now=when)

    outcomes = attempt_at(now)
    assert len(outcomes) == 3 and not any(o.delivered for o in outcomes)
    assert all("ConnectError" in o.error for o in outcomes), [o.error for o in outcomes]
    rows = list(Delivery.objects.filter(endpoint=ep))
    for row in rows:
        assert row.status == "pending" and row.attempts == 1 and row.next_attempt_at is not None
        assert now <= row.next_attempt_at <= now + timedelta(seconds=5)  # full jitter under base * 2**0
    assert attempt_at(now) == []  # nothing is due before its next attempt time

    receiver.up("slow")
    now += timedelta(seconds=6)
    outcomes = attempt_at(now)
    assert len(outcomes) == 3 and all(o.error.startswith("timed out") for o in outcomes)
    for row in Delivery.objects.filter(endpoint=ep):
        assert row.attempts == 2 and row.next_attempt_at is not None
        assert row.next_attempt_at <= now + timedelta(seconds=10)

    receiver.mode = "error"
    now += timedelta(seconds=11)
    outcomes = attempt_at(now)
    assert [o.status_code for o in outcomes] == [500, 500, 500]
    excerpt = DeliveryAttempt.objects.filter(delivery__endpoint=ep, status_code=500).first()
    assert excerpt is not None and len(excerpt.response_excerpt) == 1024  # the 1 KB excerpt

    receiver.mode = "ok"
    now += timedelta(seconds=21)
    outcomes = attempt_at(now)
    assert [o.delivered for o in outcomes] == [True, True, True]
    assert attempt_at(now + timedelta(hours=1)) == []
    assert receiver.accepted == Counter({e.public_id: 1 for e in sent})
    assert Endpoint.objects.get(pk=ep.pk).consecutive_failures == 0  # a 2xx resets the count
    for row in Delivery.objects.filter(endpoint=ep):
        log = list(row.attempt_log.order_by("number"))
        assert [a.number for a in log] == [1, 2, 3, 4]
        assert [a.succeeded for a in log] == [False, False, False, True]
        assert log[1].error.startswith("timed out") and log[2].status_code == 500


@pytest.mark.django_db
def test_retries_stop_when_the_24_hour_window_closes(receiver: Receiver) -> None:
    team = make_team()
    ep, _ = endpoint(team, receiver.url, failure_limit=1000)
    receiver.mode = "error"
    event = emit(team)
    now = timezone.now()
    dispatch.run_once(now=now)
    delivery = Delivery.objects.get(endpoint=ep)
    while delivery.status == "pending":
        assert delivery.next_attempt_at is not None
        gap = (delivery.next_attempt_at - now).total_seconds()
        assert 0 <= gap <= min(3600.0, 5.0 * 2 ** (delivery.attempts - 1)) + 1e-6
        now = delivery.next_attempt_at
        dispatch.deliver_due(now=now)
        delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.next_attempt_at is None
    last = delivery.attempt_log.order_by("-number").first()
    assert last is not None and last.started_at < event.created_at + timedelta(hours=24)
    assert 30 <= delivery.attempts <= 120  # ~10 growing gaps, then ~48 of 30 min on average
    assert len(receiver.requests) == delivery.attempts


# --- health -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_endpoint_is_disabled_after_n_consecutive_failures_and_says_so(receiver: Receiver) -> None:
    team = make_team()
    failing, secret = endpoint(team, receiver.url + "?failing", failure_limit=3)
    _, watcher_secret = endpoint(team, receiver.url + "?watcher", event_kinds=["webhook.disabled"])
    receiver.secrets = [secret, watcher_secret]
    emit(team)
    receiver.mode = "error"
    now = timezone.now()
    for _ in range(3):
        dispatch.run_once(now=now)
        now += timedelta(hours=2)  # past any backoff
    failing.refresh_from_db()
    assert not failing.enabled and failing.consecutive_failures == 3
    assert "HTTP 500" in failing.disabled_reason
    disabled = Event.objects.get(kind="webhook.disabled")
    assert disabled.team_id == team.pk and disabled.payload["endpoint"] == failing.pk
    # A disabled endpoint gets no attempts; the watcher gets the webhook.disabled event.
    receiver.mode = "ok"
    before = [r for r in receiver.requests if "failing" in r.path]
    dispatch.run_once(now=now)
    assert [r for r in receiver.requests if "failing" in r.path] == before
    [notice] = [r for r in receiver.requests if "watcher" in r.path]
    assert json.loads(notice.body)["id"] == disabled.public_id

    # Enabled again: the count restarts and the pending delivery goes out.
    services.endpoint_enable(endpoint=failing)
    assert failing.enabled and failing.consecutive_failures == 0
    dispatch.run_once(now=now)
    # Its own delivery, and the events recorded while it was disabled (its webhook.disabled notice).
    statuses = dict(Delivery.objects.filter(endpoint=failing).values_list("webhook_id", "status"))
    assert set(statuses.values()) == {"delivered"} and disabled.public_id in statuses


# --- server-side request forgery ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost/",
        "http://127.0.0.1:9/",
        "http://[::1]/",
        "http://100.64.0.1/",
        "file:///etc/passwd",
    ],
)
def test_private_addresses_are_refused_at_creation(settings: Any, url: str) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with pytest.raises(ValidationError) as refused:
        endpoint(make_team(), url)
    assert "url" in refused.value.message_dict
    assert not Endpoint.objects.exists()


@pytest.mark.django_db
def test_a_refused_address_at_delivery_is_a_failed_attempt_with_the_reason(
    settings: Any, receiver: Receiver
) -> None:
    team = make_team()
    ep, _ = endpoint(team, receiver.url)
    emit(team)
    settings.OUTBOUND_ALLOWED_HOSTS = []  # as if the host now resolved to a private address
    [outcome] = dispatch.run_once()
    assert outcome.sent and not outcome.delivered and outcome.error.startswith("refused:")
    assert receiver.requests == []
    delivery = Delivery.objects.get(endpoint=ep)
    assert delivery.status == "pending" and "loopback" in delivery.last_error
    assert "refused:" in delivery.attempt_log.get().error


# --- secret rotation ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_during_the_overlap_both_secrets_verify_and_after_it_only_the_new_one(receiver: Receiver) -> None:
    team = make_team()
    ep, old = endpoint(team, receiver.url)
    now = timezone.now()
    default = services.secret_rotate(endpoint=ep, now=now)
    assert default.endpoint.previous_secret_expires_at == now + timedelta(hours=24)
    rotated = services.secret_rotate(endpoint=ep, overlap=timedelta(hours=1), now=now)
    middle, new = default.secret, rotated.secret
    assert len({old, middle, new}) == 3
    receiver.secrets = [new]
    emit(team, payload={"n": 1})
    dispatch.run_once(now=now + timedelta(minutes=30))
    emit(team, payload={"n": 2})
    dispatch.run_once(now=now + timedelta(hours=2))
    during, after = receiver.requests
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    Webhook(new).verify(during.body, during.headers)
    Webhook(middle).verify(during.body, during.headers)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    Webhook(new).verify(after.body, after.headers)
    for stale in (middle, old):
        with pytest.raises(WebhookVerificationError):
            Webhook(stale).verify(after.body, after.headers)


# --- filters and batches ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_thresholds_kinds_and_plan_filters(receiver: Receiver) -> None:
    team, other = make_team(), make_team()
    plan = make_plan(team=team)
    endpoint(team, receiver.url + "?all")
    endpoint(team, receiver.url + "?moves", event_kinds=["result.stored"], thresholds={"total_usd": 0.02})
    endpoint(team, receiver.url + "?books", event_kinds=["price_book.published"])
    endpoint(team, receiver.url + "?plan", plan_id=plan.pk)
    small = result_stored(team, total_usd=0.01, step_s=0.5)
    big = result_stored(team, total_usd=-0.05)
    first = result_stored(team)  # no previous result: no deltas
    unknown = result_stored(team, total_usd=None)
    book = emit(None, "price_book.published")  # a global event: every team's endpoints
    failed = emit(team, "run.failed", plan_id=plan.pk)
    emit(other, "run.failed")  # another team's: nobody here
    dispatch.run_once()
    got: dict[str, set[str]] = {}
    for request in receiver.requests:
        got.setdefault(request.path.split("?")[1], set()).add(request.headers["webhook-id"])
    ids = [e.public_id for e in (small, big, first, unknown, book, failed)]
    assert got == {
        "all": set(ids),
        "moves": {big.public_id},
        "books": {book.public_id},
        "plan": {failed.public_id},
    }


@pytest.mark.django_db
def test_batches_carry_up_to_n_events_each_once_and_keep_their_id_on_retry(receiver: Receiver) -> None:
    team = make_team()
    ep, secret = endpoint(team, receiver.url, batch_size=3)
    receiver.secrets = [secret]
    sent = [emit(team, payload={"n": i}) for i in range(7)]
    receiver.mode = "error"
    now = timezone.now()
    dispatch.run_once(now=now)
    first_ids = [r.headers["webhook-id"] for r in receiver.requests]
    receiver.mode = "ok"
    dispatch.run_once(now=now + timedelta(hours=1))
    accepted = [r for r in receiver.requests if r.verified]
    assert sorted(r.headers["webhook-id"] for r in accepted) == sorted(first_ids)  # the same ids on retry
    assert len(set(first_ids)) == 3 and all(i.startswith("msg_") for i in first_ids)
    bodies = sorted(
        (Webhook(secret).verify(r.body, r.headers) for r in accepted),
        key=lambda b: b["events"][0]["data"]["n"],
    )
    assert [len(b["events"]) for b in bodies] == [3, 3, 1]
    carried = [e["id"] for b in bodies for e in b["events"]]
    assert carried == [e.public_id for e in sent]
    assert DeliveryEvent.objects.filter(endpoint=ep).count() == 7


# --- manual redelivery and claims ----------------------------------------------------------------------


@pytest.mark.django_db
def test_a_manual_redelivery_is_a_new_attempt_with_the_same_webhook_id(receiver: Receiver) -> None:
    team = make_team()
    ep, secret = endpoint(team, receiver.url)
    receiver.secrets = [secret]
    event = emit(team)
    dispatch.run_once()
    delivery = Delivery.objects.get(endpoint=ep)
    services.delivery_redeliver(delivery=delivery)
    dispatch.run_once()
    assert receiver.accepted == Counter({event.public_id: 2})
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2
    assert [a.manual for a in delivery.attempt_log.order_by("number")] == [False, True]
    # An attempt in flight (claimed) cannot be redelivered at the same time.
    services.delivery_redeliver(delivery=delivery)
    [(claimed, _token)] = dispatch.claim_due()
    assert claimed == delivery.pk
    with pytest.raises(services.DeliveryConflict):
        services.delivery_redeliver(delivery=delivery)


@pytest.mark.django_db
def test_a_crash_during_fan_out_moves_neither_the_mark_nor_the_rows(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = make_team()
    ep, _ = endpoint(team, receiver.url)
    mark = ep.last_event_id
    emitted = [emit(team, payload={"n": i}) for i in range(3)]

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("worker killed")

    with monkeypatch.context() as patched:
        patched.setattr(DeliveryEvent.objects, "bulk_create", crash)
        with pytest.raises(RuntimeError):
            dispatch.fan_out()
    ep.refresh_from_db()
    assert ep.last_event_id == mark and not Delivery.objects.filter(endpoint=ep).exists()
    assert dispatch.fan_out() == 3
    assert dispatch.fan_out() == 0
    ep.refresh_from_db()
    assert ep.last_event_id == emitted[-1].pk
    assert sorted(DeliveryEvent.objects.filter(endpoint=ep).values_list("event_id", flat=True)) == [
        e.pk for e in emitted
    ]


@pytest.mark.django_db(transaction=True)
def test_two_dispatchers_never_claim_one_delivery_at_once(receiver: Receiver) -> None:
    team = make_team()
    ep, _ = endpoint(team, receiver.url)
    for i in range(40):
        emit(team, payload={"n": i})
    dispatch.fan_out()
    assert Delivery.objects.filter(endpoint=ep).count() == 40
    claims: list[list[tuple[int, Any]]] = []
    barrier = threading.Barrier(4)

    def claim() -> None:
        from django.db import connection

        try:
            barrier.wait()
            claims.append(dispatch.claim_due(limit=15))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [pk for batch in claims for pk, _ in batch]
    assert len(ids) == len(set(ids)) == 40
    assert dispatch.claim_due() == []  # all leased
    # A stale token sends nothing.
    pk, token = next(batch for batch in claims if batch)[0]
    Delivery.objects.filter(pk=pk).update(claim_token=None)
    assert dispatch.attempt(pk, token).sent is False
    assert receiver.requests == []


@pytest.mark.django_db(transaction=True)
def test_an_event_committed_after_a_later_one_is_not_skipped(receiver: Receiver) -> None:
    """Transaction A takes an event id, B takes a higher one and commits first, the dispatcher runs, then A
    commits: A's event is still delivered (the mark alone would have passed it)."""
    team = make_team()
    ep, secret = endpoint(team, receiver.url)
    receiver.secrets = [secret]
    taken, release, done = threading.Event(), threading.Event(), threading.Event()
    early: dict[str, Event] = {}

    def slow_transaction() -> None:
        from django.db import connection

        try:
            with transaction.atomic():
                early["event"] = emit(team, payload={"who": "A"})
                taken.set()
                release.wait(10)
        finally:
            connection.close()
            done.set()

    thread = threading.Thread(target=slow_transaction)
    thread.start()
    assert taken.wait(10)
    late = emit(team, payload={"who": "B"})
    assert late.pk > early["event"].pk
    dispatch.run_once()
    assert [r.headers["webhook-id"] for r in receiver.requests] == [late.public_id]
    release.set()
    assert done.wait(10)
    thread.join()
    dispatch.run_once()
    dispatch.run_once()
    assert [r.headers["webhook-id"] for r in receiver.requests] == [late.public_id, early["event"].public_id]
    assert DeliveryEvent.objects.filter(endpoint=ep).count() == 2


def test_a_full_claim_queues_the_next_dispatch_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backlog larger than one claim drains at the workers' pace, not one claim per beat."""
    from integrations import dispatch as dispatching
    from integrations import tasks

    sent: list[str] = []
    monkeypatch.setattr(dispatching, "fan_out", lambda: 0)
    monkeypatch.setattr(dispatching, "expire", lambda: 0)
    monkeypatch.setattr(tasks.deliver, "delay", lambda *args: sent.append("deliver"))
    monkeypatch.setattr(tasks.dispatch, "delay", lambda: sent.append("dispatch"))
    full = [(i, uuid.uuid4()) for i in range(dispatching.CLAIM_LIMIT)]
    monkeypatch.setattr(dispatching, "claim_due", lambda: full)
    tasks.dispatch.run()
    assert sent == ["deliver"] * dispatching.CLAIM_LIMIT + ["dispatch"]
    sent.clear()
    monkeypatch.setattr(dispatching, "claim_due", lambda: full[:3])
    tasks.dispatch.run()
    assert sent == ["deliver"] * 3
