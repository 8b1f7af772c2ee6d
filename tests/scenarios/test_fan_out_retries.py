"""A price fan-out delivery that meets a database error is retried by its task (``autoretry_for``), a few
seconds later: the retry does the fan-out's work, instead of finding the fan-out held by the lease the failed
attempt took and stopping until the sweeper sends the fan-out again."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from scenarios import execution, fanout, services
from scenarios.models import PriceFanOut, Run
from tests.scenarios.factories import global_price_cut, make_plan, make_team

pytestmark = pytest.mark.django_db

H100 = {"kind": "accelerator", "key": "h100-sxm", "value": 25000}
QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def test_the_retry_of_a_fan_out_delivery_after_a_database_error_creates_the_runs(
    sent: Any, claim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(team=make_team())
    services.price_book_publish(team=None, user=None, name="v1", entries=[H100, QUEBEC], fan_out="none")
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=claim)
    cut = services.price_book_publish(
        team=None, user=None, name="v2", entries=[{**H100, "value": 20000}], fan_out="caller"
    )

    flush = fanout._flush
    calls = {"n": 0}

    def flaky_flush(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return flush(*args, **kwargs)

    monkeypatch.setattr(fanout, "_flush", flaky_flush)
    with pytest.raises(OperationalError):
        fanout.price_book_fan_out(
            price_book_id=cut.pk, delivery=True, holder="task-1"
        )  # the task retries this
    retried = fanout.price_book_fan_out(price_book_id=cut.pk, delivery=True, holder="task-1")
    assert retried.runs_created == 1, "the task's own retry found the fan-out held and did nothing"
    assert PriceFanOut.objects.get(pk=cut.pk).done_at is not None


def test_a_fan_out_whose_worker_is_lost_on_every_delivery_is_not_sent_again_forever(sent: Any) -> None:
    """Like a run (``Run.max_attempts``), a fan-out that kills its worker on every delivery (out of memory,
    over the hard time limit) stops being sent after a bounded number of attempts, instead of the sweeper
    sending it again, and every worker comparing every plan again, every minute for ever."""
    import datetime as dt

    from django.utils import timezone

    from scenarios.models import DEFAULT_MAX_ATTEMPTS
    from scenarios.runs.sweeper import runs_sweep

    make_plan(team=make_team())
    book = global_price_cut()
    now = timezone.now()
    sent_again = 0
    for _ in range(DEFAULT_MAX_ATTEMPTS + 5):
        # A delivery takes the fan-out, then its worker dies (no exception, no done_at).
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timezone, "now", lambda now=now: now)
            fanout._fan_out_take(price_book_id=book.pk, delivery=True)
        now += dt.timedelta(minutes=5)  # past the lease and the sweeper's re-send delay
        sent_again += runs_sweep(now=now, send=False).fan_outs
    assert PriceFanOut.objects.get(pk=book.pk).attempts >= DEFAULT_MAX_ATTEMPTS
    assert sent_again <= DEFAULT_MAX_ATTEMPTS, f"sent again {sent_again} times, with no attempt cap"
    given_up = PriceFanOut.objects.get(pk=book.pk)
    assert given_up.done_at is not None and given_up.error.startswith("gave up after"), given_up.error
