"""A price fan-out whose every attempt fails with the same database error (a statement timeout on its
comparison, a limit of the server) exhausts its task's retries on every message. It is given up after a
bounded number of messages, with the reason, like one whose worker is lost or that hits the time limit each
time, rather than sent again by the sweeper, and retried some sixty times per message, for ever."""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from scenarios import fanout, tasks
from scenarios.models import DEFAULT_MAX_ATTEMPTS, PriceFanOut
from scenarios.runs.sweeper import runs_sweep
from tests.scenarios.factories import global_price_cut, make_plan, make_team

pytestmark = pytest.mark.django_db


def test_a_fan_out_failing_with_the_same_database_error_on_every_message_is_given_up(
    sent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_plan(team=make_team())
    book = global_price_cut()

    def statement_timeout(**kwargs: Any) -> Any:
        raise OperationalError("canceling statement due to statement timeout")
        yield  # pragma: no cover

    monkeypatch.setattr(fanout, "plans_with_price_changes", statement_timeout)
    attempts_per_message = int(tasks.RETRY_OPTIONS["max_retries"]) + 1
    now = timezone.now()
    messages = 0
    for _ in range(DEFAULT_MAX_ATTEMPTS + 3):
        if PriceFanOut.objects.get(pk=book.pk).done_at is not None:
            break
        messages += 1
        for _attempt in range(attempts_per_message):  # the task's retries, a few seconds apart
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(timezone, "now", lambda now=now: now)
                with contextlib.suppress(OperationalError):
                    fanout.price_book_fan_out(price_book_id=book.pk, delivery=True, holder=f"task-{messages}")
            now += dt.timedelta(seconds=10)
        now += dt.timedelta(minutes=5)
        runs_sweep(now=now, send=False)
    row = PriceFanOut.objects.get(pk=book.pk)
    assert row.done_at is not None and row.error, (
        f"{messages} messages of {attempts_per_message} attempts each failed the same way; the fan-out is "
        f"still due (lost_deliveries={row.lost_deliveries})"
    )
