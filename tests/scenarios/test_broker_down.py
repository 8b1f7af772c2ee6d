"""Work requested while the broker is unreachable is stored and sent later, never lost or refused.

The producer is pointed at a closed local port (the machine's Redis is never touched): a run request answers
202 with ``"queue": "deferred"``, a price-book publish answers 201 with ``"fan_out": "deferred"`` and keeps
its ``PriceFanOut`` row, and the sweeper sends both once the broker is back; the fan-out then creates one
re-run per affected plan, and a repeated delivery creates none.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from scenarios import execution, fanout, queue, services, tasks
from scenarios.models import Membership, PriceFanOut, Run
from scenarios.runs import execute
from tests.scenarios.factories import CLUSTER_A100, make_plan, make_team, make_user

pytestmark = pytest.mark.django_db

H100_BOOK = [
    {"kind": "accelerator", "key": "h100-sxm", "value": 25000, "source": "list price"},
    {"kind": "electricity", "key": "quebec", "value": 0.05},
]
H100_CUT = [{"kind": "accelerator", "key": "h100-sxm", "value": 19000}]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _use_broker(app: Any, url: str) -> None:
    """Publish through ``url`` from now on (drops the cached connection and producer pools)."""
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down() -> Iterator[None]:
    from planner.celery import app

    previous = app.conf.broker_url
    _use_broker(app, f"redis://127.0.0.1:{_closed_port()}/0")
    try:
        yield
    finally:
        _use_broker(app, previous)


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Messages the code sends once the broker is back, recorded instead of sent."""
    messages: list[tuple[str, list[Any]]] = []

    def send_many(items: Any) -> int:
        items = [(name, list(args)) for name, args in items]
        messages.extend(items)
        return len(items)

    monkeypatch.setattr(queue, "send_many", send_many)
    monkeypatch.setattr(queue, "send", lambda name, args, producer=None: messages.append((name, list(args))))
    return messages


def _recorder(sent: list[list[int]]) -> Any:
    def enqueue_runs(*, run_ids: Any, chunk_size: int | None = None) -> int:
        sent.append(list(run_ids))
        return 1 if run_ids else 0

    return enqueue_runs


def _editor_client(team: Any) -> APIClient:
    user = make_user()
    Membership.objects.create(team=team, user=user, role="editor")
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.django_db(transaction=True)  # the view's own transaction commits, as in production
def test_a_run_requested_while_the_broker_is_down_is_accepted_and_sent_by_the_sweeper(
    broker_down, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    team = make_team()
    plan = make_plan(team=team)
    client = _editor_client(team)
    started = time.monotonic()
    response = client.post(f"/api/v1/plans/{plan.pk}/run/")
    elapsed = time.monotonic() - started
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["queue"]) == ("queued", "deferred")
    run = Run.objects.get(pk=body["run"])
    assert run.status == "queued" and run.enqueued_at is None  # left to the sweeper's next tick
    assert elapsed < 5, f"the request waited {elapsed:.1f} s for the broker"

    # The broker is back: the next sweep sends exactly this run, and the one after sends nothing more.
    sent: list[list[int]] = []
    monkeypatch.setattr(execute, "enqueue_runs", _recorder(sent))
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().resent == 1
        assert execution.runs_sweep().resent == 0
    assert sent == [[run.pk]]


@pytest.mark.django_db(transaction=True)
def test_a_run_requested_with_the_broker_up_says_queued(captured, django_capture_on_commit_callbacks) -> None:
    team = make_team()
    plan = make_plan(team=team)
    response = _editor_client(team).post(f"/api/v1/plans/{plan.pk}/run/")
    assert response.status_code == 202 and response.json()["queue"] == "queued"
    assert captured == [(queue.EXECUTE_RUN, [response.json()["run"]])]
    assert Run.objects.get().enqueued_at is not None


def test_the_sweeper_defers_again_while_the_broker_stays_down(
    broker_down, django_capture_on_commit_callbacks
) -> None:
    plan = make_plan(team=make_team())
    with django_capture_on_commit_callbacks(execute=True):
        requested = services.run_submit(plan=plan, user=None)
    assert requested.sending.state == queue.DEFERRED
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().resent == 1  # tried, failed, marked unsent again: no exception
    assert Run.objects.get().enqueued_at is None


@pytest.mark.django_db(transaction=True)
def test_a_price_book_published_while_the_broker_is_down_re_runs_every_affected_plan_once(
    broker_down, django_capture_on_commit_callbacks, monkeypatch, claim
) -> None:
    team = make_team()
    client = _editor_client(team)
    h100_plans = [make_plan(team=team, name=f"h100-{i}") for i in range(3)]
    make_plan(team=team, cluster_doc=CLUSTER_A100, name="a100")
    services.price_book_publish(team=team, user=None, name="v1", entries=H100_BOOK, fan_out="none")
    started = time.monotonic()
    response = client.post(
        "/api/v1/price-books/", {"team": team.pk, "name": "cut", "entries": H100_CUT}, format="json"
    )
    elapsed = time.monotonic() - started
    assert response.status_code == 201, response.content
    assert (response.json()["fan_out"], response.json()["plans_to_rerun"]) == ("deferred", 3)
    assert elapsed < 5, f"the publish waited {elapsed:.1f} s for the broker"
    book_id = response.json()["id"]
    pending = PriceFanOut.objects.get(pk=book_id)
    assert (pending.enqueued_at, pending.done_at) == (None, None)
    assert not Run.objects.exists()

    # The broker is back: the sweeper sends the fan-out (once), its delivery creates one run per H100 plan.
    messages: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(queue, "send_many", lambda items: messages.extend((n, list(a)) for n, a in items))
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().fan_outs == 1
        assert execution.runs_sweep().fan_outs == 0  # just sent: not stale yet
    assert messages == [(queue.FAN_OUT_PRICES, [book_id])]
    sent: list[list[int]] = []
    monkeypatch.setattr(execute, "enqueue_runs", _recorder(sent))
    assert tasks.fan_out_prices.apply(args=[book_id]).get() == {"plans_changed": 3, "runs_created": 3}
    assert sorted(Run.objects.values_list("plan_id", flat=True)) == sorted(p.pk for p in h100_plans)
    assert sorted(run_id for ids in sent for run_id in ids) == sorted(
        Run.objects.values_list("pk", flat=True)
    )
    done = PriceFanOut.objects.get(pk=book_id)
    assert done.done_at is not None and (done.plans_changed, done.runs_created, done.attempts) == (3, 3, 1)

    # A redelivered message (Redis restored it, or the sweeper sent it twice) does nothing, and the
    # sweeper never sends a done fan-out again, however old its message is.
    assert tasks.fan_out_prices.apply(args=[book_id]).get() == {"plans_changed": 0, "runs_created": 0}
    PriceFanOut.objects.filter(pk=book_id).update(enqueued_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().fan_outs == 0
    assert Run.objects.count() == 3


def test_a_fan_out_held_by_a_live_delivery_is_not_sent_again_and_an_expired_one_is(
    django_capture_on_commit_callbacks, captured, settings
) -> None:
    import datetime as dt

    from django.utils import timezone

    team = make_team()
    make_plan(team=team)
    services.price_book_publish(team=team, user=None, name="v1", entries=H100_BOOK, fan_out="none")
    book = services.price_book_publish(team=team, user=None, name="cut", entries=H100_CUT, fan_out="none")
    old = timezone.now() - dt.timedelta(hours=1)
    PriceFanOut.objects.create(
        price_book=book, enqueued_at=old, lease_expires_at=timezone.now() + dt.timedelta(seconds=20)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().fan_outs == 0  # a worker is comparing the plans right now
    assert fanout.price_book_fan_out(price_book_id=book.pk, delivery=True).plans_checked == 0
    PriceFanOut.objects.filter(pk=book.pk).update(lease_expires_at=old)  # that worker died
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.runs_sweep().fan_outs == 1
    assert captured == [(queue.FAN_OUT_PRICES, [book.pk])]


def test_publish_and_the_fan_out_row_commit_or_roll_back_together() -> None:
    from django.db import transaction

    team = make_team()
    with pytest.raises(RuntimeError), transaction.atomic():
        services.price_book_publish(team=team, user=None, name="v1", entries=H100_BOOK, fan_out="async")
        assert PriceFanOut.objects.count() == 1
        raise RuntimeError("the request failed after the publish")
    assert not PriceFanOut.objects.exists()
