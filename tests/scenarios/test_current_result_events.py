"""The figure.moved events of a solve say how the plan's current result moved: a run that stores after a
newer one and does not become the current result (its inputs are older than the plan's of now) moves
nothing, so it raises no figure.moved event."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from scenarios import execution, fanout, services
from scenarios.execution import Claim
from scenarios.models import Event, Result, Run, Team
from scenarios.runs.execute import _solve_held
from scenarios.runs.store import results_store
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def new_claim() -> Claim:
    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def h100(value: float) -> list[dict[str, Any]]:
    return [{"kind": "accelerator", "key": "h100-sxm", "value": value}]


def publish(entries: list[dict[str, Any]]) -> Any:
    return services.price_book_publish(team=None, user=None, name="book", entries=entries, fan_out="none")


def test_a_run_of_prices_solved_before_that_stores_after_the_current_inputs_raises_no_figure_moved(
    sent: Any,
) -> None:
    """H100 25,000 (v1) -> 30,000 (v2, current) -> 25,000 (a re-run reads v1's inputs and is still solving) ->
    30,000 again. The plan's current result is v2, which holds the inputs of now; the slow run's inputs are
    v1's, so storing it keeps v2 current, and no event says the cost went back down to v1's."""
    plan = make_plan(team=make_team())
    Team.objects.filter(pk=plan.team_id).update(alert_thresholds={"total_usd": 0.02})
    publish([QUEBEC, *h100(25000)])
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=new_claim())
    v1 = Result.objects.get(plan=plan)

    raised = publish(h100(30000))
    assert fanout.price_book_fan_out(price_book_id=raised.pk).runs_created == 1
    execution.run_execute(run_id=Run.objects.get(plan=plan, price_book=raised).pk, claim=new_claim())
    plan.refresh_from_db()
    v2 = plan.latest_result
    assert v2.version == 2

    back = publish(h100(25000))
    assert fanout.price_book_fan_out(price_book_id=back.pk).runs_created == 1
    slow = Run.objects.get(plan=plan, price_book=back)
    slow_claim = new_claim()
    assert execution.runs_claim(run_ids=[slow.pk], claim=slow_claim)[slow.pk] == execution.CLAIMED
    slow_solved = _solve_held(held=[slow.pk], claim=slow_claim, sheets={}, outcomes={})  # reads 25,000

    publish(h100(30000))  # v2's inputs are the plan's again
    moved_before = Event.objects.filter(kind="figure.moved", plan_id=plan.pk).count()
    results_store(solved=slow_solved, claim=slow_claim)

    plan.refresh_from_db()
    assert plan.latest_result_id == v2.pk  # the current result holds the inputs of now
    slow.refresh_from_db()
    assert slow.status == "succeeded" and slow.result_id == v1.pk
    moved = list(Event.objects.filter(kind="figure.moved", plan_id=plan.pk).order_by("pk")[moved_before:])
    assert moved == [], (
        "figure.moved raised for a current result that did not change: "
        f"{[(e.payload['figure'], e.payload['previous'], e.payload['current']) for e in moved]}"
    )


def test_a_re_run_priced_by_an_older_book_that_stores_last_raises_no_figure_moved(sent: Any) -> None:
    """H100 25,000 -> 20,000 (a re-run reads it and is still solving) -> 30,000 (its re-run stores first and
    is the current result). The slow run's result is a version of the plan, not its current result: the
    plan's figures did not move to 20,000's, so no figure.moved says they did."""
    plan = make_plan(team=make_team())
    Team.objects.filter(pk=plan.team_id).update(alert_thresholds={"total_usd": 0.02})
    publish([QUEBEC, *h100(25000)])
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=new_claim())

    cut = publish(h100(20000))
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    slow = Run.objects.get(plan=plan, price_book=cut)
    slow_claim = new_claim()
    assert execution.runs_claim(run_ids=[slow.pk], claim=slow_claim)[slow.pk] == execution.CLAIMED
    slow_solved = _solve_held(held=[slow.pk], claim=slow_claim, sheets={}, outcomes={})

    raised = publish(h100(30000))
    assert fanout.price_book_fan_out(price_book_id=raised.pk).runs_created == 1
    execution.run_execute(run_id=Run.objects.get(plan=plan, price_book=raised).pk, claim=new_claim())
    plan.refresh_from_db()
    current = plan.latest_result_id
    moved_before = Event.objects.filter(kind="figure.moved", plan_id=plan.pk).count()

    results_store(solved=slow_solved, claim=slow_claim)
    plan.refresh_from_db()
    assert plan.latest_result_id == current
    moved = list(Event.objects.filter(kind="figure.moved", plan_id=plan.pk).order_by("pk")[moved_before:])
    assert moved == [], (
        "figure.moved raised for a result that did not become the plan's current one: "
        f"{[(e.payload['figure'], e.payload['previous'], e.payload['current']) for e in moved]}"
    )
