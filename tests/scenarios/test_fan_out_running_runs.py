"""A price fan-out skips a plan only for a run that will still read the new prices.

The fan-out adds no run for a plan when an automatic run of the plan for the same priced document is still
queued or running. A queued run reads the plan's inputs (and the books in force) when a worker takes it, so it
will solve the new prices. A running run has read them already: when that happened under a different book (the
books moved on between its fan-out and its claim), it solves other prices than its key says, and skipping the
plan for it leaves the plan at prices no book holds any more, with no run left to fix it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from scenarios import execution, fanout, services
from scenarios.execution import Claim
from scenarios.models import Run
from scenarios.runs.execute import _solve_held
from scenarios.runs.store import results_store
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

H100 = {"kind": "accelerator", "key": "h100-sxm", "value": 20000}
QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}
PRICE = "cluster.accelerator.unit_price_usd"


def new_claim() -> Claim:
    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def publish_and_fan_out(value: float, name: str) -> Any:
    book = services.price_book_publish(
        team=None, user=None, name=name, entries=[{**H100, "value": value}], fan_out="none"
    )
    fanout.price_book_fan_out(price_book_id=book.pk)
    return book


def claim_and_solve(run: Run) -> tuple[Claim, list[Any]]:
    claim = new_claim()
    assert execution.runs_claim(run_ids=[run.pk], claim=claim)[run.pk] == execution.CLAIMED
    return claim, _solve_held(held=[run.pk], claim=claim, sheets={}, outcomes={})


def test_a_running_re_run_that_read_other_prices_does_not_stand_for_the_new_book(sent: Any) -> None:
    plan = make_plan(team=make_team())
    services.price_book_publish(team=None, user=None, name="v1", entries=[H100, QUEBEC], fan_out="none")
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=new_claim())

    up = publish_and_fan_out(25000, "v2")  # queues a run keyed by the document priced at 25,000
    first = Run.objects.get(plan=plan, price_book=up)
    higher = publish_and_fan_out(30000, "v3")  # before a worker took the first run
    second = Run.objects.get(plan=plan, price_book=higher)
    in_flight = [claim_and_solve(first), claim_and_solve(second)]  # both read 30,000
    assert all(solved[0].inputs.prices[PRICE]["value"] == 30000 for _, solved in in_flight)

    back = publish_and_fan_out(25000, "v4")  # 25,000 again while both runs solve 30,000
    for claim, solved in in_flight:
        results_store(solved=solved, claim=claim)
    for run_id in Run.objects.filter(status="queued").values_list("pk", flat=True):
        execution.run_execute(run_id=run_id, claim=new_claim())

    plan.refresh_from_db()
    assert plan.latest_result.prices[PRICE]["value"] == 25000, (
        f"book v4 prices the H100 at 25,000; the plan is left at 30,000 with "
        f"{Run.objects.filter(plan=plan, price_book=back).count()} run for v4"
    )
