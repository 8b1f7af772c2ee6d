"""A plan's current result is the result of its current inputs, whatever order workers store in.

Two runs of one plan can be in flight at once: a worker reads the plan's inputs (revisions and the price
books in force) when it starts solving, and stores a while later. When a run that read older inputs (the
plan was edited, or a newer price book was published, after it read them) stores after a run that read
the newer ones, its result is a valid version of the plan, but it must not replace the newer result as
the plan's current one. Each test replays that interleaving step by step: claim and solve the first run,
then let a second run of the new inputs claim, solve and store, then store the first."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from scenarios import currency, execution, fanout, services
from scenarios.execution import Claim
from scenarios.models import Result, Run
from scenarios.runs.execute import _solve_held
from scenarios.runs.store import results_store
from tests.scenarios.factories import TRAINING, make_plan, make_team

pytestmark = pytest.mark.django_db


def new_claim() -> Claim:
    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


def claim_and_solve(run_id: int) -> tuple[Claim, list[Any]]:
    """A worker's first half: claim the run and solve the inputs the plan has now (nothing stored yet)."""
    claim = new_claim()
    assert execution.runs_claim(run_ids=[run_id], claim=claim)[run_id] == execution.CLAIMED
    solved = _solve_held(held=[run_id], claim=claim, sheets={}, outcomes={})
    assert len(solved) == 1
    return claim, solved


def test_a_run_of_the_plan_before_an_edit_that_stores_last_does_not_become_the_current_result(
    sent: Any,
) -> None:
    plan = make_plan(team=make_team())
    first = services.run_request(plan=plan, user=None)
    first_claim, first_solved = claim_and_solve(first.pk)

    services.plan_update(plan=plan, user=None, training={**TRAINING, "seq_len": 4096})
    second = services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=second.pk, claim=new_claim())
    second.refresh_from_db()
    plan.refresh_from_db()
    assert plan.latest_result_id == second.result_id

    results_store(solved=first_solved, claim=first_claim)  # the slow worker stores the older inputs
    first.refresh_from_db()
    assert first.status == "succeeded"
    plan.refresh_from_db()
    assert plan.latest_result_id == second.result_id, "the plan's current result went back to older inputs"
    assert currency.results_currency([plan.latest_result_id])[plan.latest_result_id].current


def test_a_re_run_priced_by_an_older_book_that_stores_last_does_not_become_the_current_result(
    sent: Any,
) -> None:
    plan = make_plan(team=make_team())
    h100 = {"kind": "accelerator", "key": "h100-sxm", "value": 25000}
    quebec = {"kind": "electricity", "key": "quebec", "value": 0.05}
    services.price_book_publish(team=None, user=None, name="v1", entries=[h100, quebec], fan_out="none")
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=new_claim())

    cut = services.price_book_publish(
        team=None, user=None, name="v2", entries=[{**h100, "value": 20000}], fan_out="none"
    )
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    old_run = Run.objects.get(plan=plan, price_book=cut)
    old_claim, old_solved = claim_and_solve(old_run.pk)  # priced at 20,000

    raised = services.price_book_publish(
        team=None, user=None, name="v3", entries=[{**h100, "value": 30000}], fan_out="none"
    )
    assert fanout.price_book_fan_out(price_book_id=raised.pk).runs_created == 1
    new_run = Run.objects.get(plan=plan, price_book=raised)
    execution.run_execute(run_id=new_run.pk, claim=new_claim())  # priced at 30,000, stored first
    new_run.refresh_from_db()

    results_store(solved=old_solved, claim=old_claim)
    plan.refresh_from_db()
    current = Result.objects.get(pk=plan.latest_result_id)
    assert current.prices["cluster.accelerator.unit_price_usd"]["value"] == 30000, (
        "the plan's current result is priced by a book that is no longer in force"
    )
    assert plan.latest_result_id == new_run.result_id


def test_a_plan_archived_while_its_run_solves_gets_no_new_current_result(sent: Any) -> None:
    """An archived plan no longer runs (``run_submit`` refuses it, a worker fails a run it takes after the
    archive): a run that was solving when the plan was archived does not store a new current result for it
    (nor raise the events of one) either."""
    from scenarios.models import Event

    plan = make_plan(team=make_team())
    run = services.run_request(plan=plan, user=None)
    claim, solved = claim_and_solve(run.pk)
    services.plan_archive(plan=plan, user=None)
    results_store(solved=solved, claim=claim)
    plan.refresh_from_db()
    assert plan.latest_result_id is None and not Result.objects.filter(plan=plan).exists()
    assert not Event.objects.filter(plan_id=plan.pk, kind__startswith="result").exists()
    run.refresh_from_db()
    assert run.status == "failed" and "archived" in run.error
