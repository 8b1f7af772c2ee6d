"""The nightly re-check queues a run for every live ``auto_rerun`` plan whose current inputs have no result
stored by the current solver, including a plan whose earlier automatic run for the same inputs failed (its
workers were lost up to the attempt cap, or it hit the time limit on a busy machine): a failed run stored no
result, so the inputs still have none."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import execution, fanout, services
from scenarios.models import Result, Run
from scenarios.runs.claims import gave_up_error
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

H100 = {"kind": "accelerator", "key": "h100-sxm", "value": 25000}
QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def lose_every_worker(run_id: int) -> None:
    """The run's workers were lost up to the attempt cap: the sweeper failed it with the reason."""
    Run.objects.filter(pk=run_id).update(status="failed", attempts=3, error=gave_up_error())


def test_a_price_re_run_that_failed_is_queued_again_by_the_nightly_re_check(sent: Any, claim: Any) -> None:
    plan = make_plan(team=make_team(), auto_rerun=True)
    services.price_book_publish(team=None, user=None, name="v1", entries=[H100, QUEBEC], fan_out="none")
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=claim)
    cut = services.price_book_publish(
        team=None, user=None, name="v2", entries=[{**H100, "value": 20000}], fan_out="none"
    )
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    lose_every_worker(Run.objects.get(plan=plan, trigger="price_change").pk)

    assert fanout.plans_recheck().runs_created == 1, "the inputs have no result, and no run is queued"


def test_a_nightly_run_that_failed_is_queued_again_the_next_night(sent: Any, claim: Any) -> None:
    plan = make_plan(team=make_team(), auto_rerun=True)
    services.price_book_publish(team=None, user=None, name="v1", entries=[H100, QUEBEC], fan_out="none")
    assert fanout.plans_recheck().runs_created == 1
    lose_every_worker(Run.objects.get(plan=plan).pk)
    assert not Result.objects.filter(plan=plan).exists()

    assert fanout.plans_recheck().runs_created == 1, "the inputs have no result, and no run is queued"


def test_inputs_whose_automatic_runs_keep_failing_are_not_queued_every_night_for_ever(
    sent: Any, claim: Any
) -> None:
    """A scenario that fails every time (it cannot be solved, or it always kills its worker) is tried
    ``AUTOMATIC_FAILURES_PER_INPUT`` times, then left until its inputs change or a user runs it."""
    plan = make_plan(team=make_team(), auto_rerun=True)
    services.price_book_publish(team=None, user=None, name="v1", entries=[H100, QUEBEC], fan_out="none")
    for _ in range(fanout.AUTOMATIC_FAILURES_PER_INPUT):
        assert fanout.plans_recheck().runs_created == 1
        lose_every_worker(Run.objects.filter(plan=plan).latest("id").pk)
    assert fanout.plans_recheck().runs_created == 0
    assert Run.objects.filter(plan=plan, status="failed").count() == fanout.AUTOMATIC_FAILURES_PER_INPUT
