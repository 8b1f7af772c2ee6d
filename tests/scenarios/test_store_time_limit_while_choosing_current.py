"""The soft time limit raised while a store decides which plans keep their current result is the task's to
handle (``execute_runs`` releases the chunk, ``execute_run`` fails the run with the reason): it is not taken for
"the plan's inputs of now cannot be resolved", which would store the chunk past the limit and make a run of
older prices the plan's current result."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from scenarios import execution, fanout, inputs, services
from scenarios.execution import Claim
from scenarios.models import Run
from scenarios.runs.execute import _solve_held
from scenarios.runs.store import results_store
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def new_claim() -> Claim:
    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def publish(value: float, *extra: dict[str, Any]) -> Any:
    entries = [*extra, {"kind": "accelerator", "key": "h100-sxm", "value": value}]
    return services.price_book_publish(team=None, user=None, name="book", entries=entries, fan_out="none")


def test_the_soft_time_limit_while_checking_the_inputs_of_now_stops_the_store(
    sent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(team=make_team())
    publish(25000, QUEBEC)
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=new_claim())

    cut = publish(20000)
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    slow = Run.objects.get(plan=plan, price_book=cut)
    slow_claim = new_claim()
    assert execution.runs_claim(run_ids=[slow.pk], claim=slow_claim)[slow.pk] == execution.CLAIMED
    slow_solved = _solve_held(held=[slow.pk], claim=slow_claim, sheets={}, outcomes={})  # reads 20,000

    raised = publish(30000)
    assert fanout.price_book_fan_out(price_book_id=raised.pk).runs_created == 1
    execution.run_execute(run_id=Run.objects.get(plan=plan, price_book=raised).pk, claim=new_claim())
    plan.refresh_from_db()
    current = plan.latest_result_id

    def over_the_limit(**kwargs: Any) -> Any:
        raise SoftTimeLimitExceeded("SoftTimeLimitExceeded()")

    monkeypatch.setattr(inputs, "plan_inputs", over_the_limit)
    with pytest.raises(SoftTimeLimitExceeded):
        results_store(solved=slow_solved, claim=slow_claim)
    plan.refresh_from_db()
    assert plan.latest_result_id == current, "the run of 20,000 became the current result of a plan at 30,000"
