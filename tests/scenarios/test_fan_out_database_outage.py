"""A price fan-out interrupted by a database outage is retried by its task (a transient error), and its
lease cannot be given back while the database is down. The retry, once the database is back, is the same
delivery: it does the fan-out rather than finding the lease of its own attempt held and stopping, so a few
short outages neither count as lost deliveries nor give the fan-out up with the re-runs it owes."""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import Any

import pytest
from django.db import OperationalError
from django.db.models import QuerySet
from django.utils import timezone

from scenarios import fanout
from scenarios.models import PriceFanOut, Run
from scenarios.runs.sweeper import runs_sweep
from tests.scenarios.factories import global_price_cut, make_plan, make_team

pytestmark = pytest.mark.django_db


def test_a_fan_out_retried_after_database_outages_is_done_not_given_up(sent: Any) -> None:
    plan = make_plan(team=make_team())
    book = global_price_cut()
    real_update = QuerySet.update

    def database_down(**kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")
        yield  # pragma: no cover

    def release_fails(self: QuerySet[Any], **kwargs: Any) -> int:
        if self.model is PriceFanOut and kwargs == {"lease_expires_at": None}:
            raise OperationalError("server closed the connection unexpectedly")
        return real_update(self, **kwargs)

    now = timezone.now()
    for message in range(3):  # three deliveries, each hit by a short outage
        task_id = f"task-{message}"  # a message's task id, which its retries keep
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timezone, "now", lambda now=now: now)
            patch.setattr(fanout, "plans_with_price_changes", database_down)
            patch.setattr(QuerySet, "update", release_fails)
            with pytest.raises(OperationalError):
                fanout.price_book_fan_out(price_book_id=book.pk, delivery=True, holder=task_id)
        retried = now + dt.timedelta(seconds=3)  # the task's retry, the database back
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timezone, "now", lambda retried=retried: retried)
            patch.setattr(fanout, "plans_with_price_changes", database_down)  # the outage comes back
            with contextlib.suppress(OperationalError):
                fanout.price_book_fan_out(price_book_id=book.pk, delivery=True, holder=task_id)
        now += dt.timedelta(minutes=5)
        runs_sweep(now=now, send=False)

    row = PriceFanOut.objects.get(pk=book.pk)
    assert row.error == "" and row.lost_deliveries == 0, (
        f"deliveries retried after a database outage were counted as lost: lost_deliveries="
        f"{row.lost_deliveries}, error={row.error!r}"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda now=now: now)
        fanout.price_book_fan_out(price_book_id=book.pk, delivery=True)
    assert Run.objects.filter(plan=plan, price_book=book).exists()
