"""A price fan-out delivery that meets a database error is retried by its task (``autoretry_for``), a few
seconds later: the retry does the fan-out's work, instead of finding the fan-out held by the lease the failed
attempt took and stopping until the sweeper sends the fan-out again."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from scenarios import execution, fanout, services
from scenarios.models import PriceFanOut, Run
from tests.scenarios.factories import make_plan, make_team

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
        fanout.price_book_fan_out(price_book_id=cut.pk, delivery=True)  # the task retries this
    retried = fanout.price_book_fan_out(price_book_id=cut.pk, delivery=True)
    assert retried.runs_created == 1, "the task's own retry found the fan-out held and did nothing"
    assert PriceFanOut.objects.get(pk=cut.pk).done_at is not None
