"""A price fan-out that cannot finish within the task's time limit (the soft limit raises in the worker, a
little before the hard limit would kill it) fails the same way on every delivery. Like one whose worker is
lost each time, it is given up after a bounded number of deliveries, with the reason, instead of the sweeper
sending it again, and a worker comparing every plan again, every few minutes for ever."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone

from scenarios import fanout
from scenarios.models import DEFAULT_MAX_ATTEMPTS, PriceFanOut
from scenarios.runs.sweeper import runs_sweep
from tests.scenarios.factories import global_price_cut, make_plan, make_team

pytestmark = pytest.mark.django_db


def test_a_fan_out_over_the_time_limit_on_every_delivery_is_not_sent_again_forever(
    sent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_plan(team=make_team())
    book = global_price_cut()

    def too_long(**kwargs: Any) -> Any:
        raise SoftTimeLimitExceeded("SoftTimeLimitExceeded()")
        yield  # pragma: no cover

    monkeypatch.setattr(fanout, "plans_with_price_changes", too_long)
    now = timezone.now()
    deliveries = 0
    for _ in range(DEFAULT_MAX_ATTEMPTS + 5):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timezone, "now", lambda now=now: now)
            try:
                fanout.price_book_fan_out(price_book_id=book.pk, delivery=True)
            except SoftTimeLimitExceeded:
                deliveries += 1
        now += dt.timedelta(minutes=5)  # past the lease and the sweeper's re-send delay
        runs_sweep(now=now, send=False)
    row = PriceFanOut.objects.get(pk=book.pk)
    assert deliveries <= DEFAULT_MAX_ATTEMPTS, (
        f"{deliveries} deliveries each hit the time limit; the fan-out is still due (done_at={row.done_at}, "
        f"lost_deliveries={row.lost_deliveries})"
    )
    assert row.done_at is not None and row.error
