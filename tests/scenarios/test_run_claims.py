"""The life of a run where its claim is tested: a task's own retry after its lease ran out resumes the run (no
attempt counted, never capped as a lost worker), a delivery that lost its claim while it solved stores
nothing, and one run whose solver fails is failed alone, the other runs of its chunk stored."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from django.utils import timezone

from scenarios import conf, execution, services
from scenarios.execution import BUSY, CLAIMED, RESUMED, Claim
from scenarios.models import Plan, Result, Run
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(sent: Any) -> Any:
    return make_plan(team=make_team())


def after_the_lease() -> dt.datetime:
    # a retry whose wait outlasted its lease (the backoff is kept under half a lease; a database outage can
    # still keep the renewal from landing)
    return timezone.now() + dt.timedelta(seconds=conf.run_lease_s() + 1)


def test_a_tasks_own_retry_after_its_lease_ran_out_resumes_the_run_without_an_attempt(plan: Any) -> None:
    run = services.run_request(plan=plan, user=None)
    task_id = str(uuid.uuid4())
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=0)) == CLAIMED
    state = execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=1), now=after_the_lease())
    run.refresh_from_db()
    assert (state, run.attempts, run.claim_retries) == (RESUMED, 1, 1)


def test_a_tasks_own_retry_at_its_last_attempt_is_not_failed_as_a_lost_worker(plan: Any) -> None:
    run = services.run_request(plan=plan, user=None)
    Run.objects.filter(pk=run.pk).update(max_attempts=1)
    task_id = str(uuid.uuid4())
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=0)) == CLAIMED
    state = execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=1), now=after_the_lease())
    run.refresh_from_db()
    assert state == RESUMED and run.status == "running" and run.error == ""
    # another delivery once the resumed lease ran out takes it as an attempt (here the last: it is capped)
    later = after_the_lease() + dt.timedelta(seconds=conf.run_lease_s() + 1)
    other = execution.run_claim(run_id=run.pk, claim=Claim(task_id="another", retries=0), now=later)
    run.refresh_from_db()
    assert other == "capped" and run.status == "failed" and "gave up after 1 attempts" in run.error


def test_a_delivery_that_lost_its_claim_while_it_solved_stores_nothing(plan: Any, monkeypatch: Any) -> None:
    """Its lease ran out while it solved (a stalled keeper) and the sweeper capped the run: no result, no
    current result, no event; the delivery answers BUSY."""
    run = services.run_request(plan=plan, user=None)
    Run.objects.filter(pk=run.pk).update(max_attempts=1)
    solve = execution.EXECUTORS["solve"]

    def slow(inputs: Any, held: Any, claim: Any) -> Any:
        report = solve(inputs, held, claim)
        assert execution.runs_sweep(now=after_the_lease(), send=False).failed == 1
        return report

    monkeypatch.setitem(execution.EXECUTORS, "solve", slow)
    outcome = execution.run_execute(run_id=run.pk, claim=Claim(task_id="a", retries=0))
    run.refresh_from_db()
    assert outcome.status == BUSY and run.status == "failed" and run.result_id is None
    assert not Result.objects.filter(plan=plan).exists()
    assert Plan.objects.get(pk=plan.pk).latest_result_id is None


def test_one_run_whose_solver_fails_is_failed_alone_and_the_others_of_its_chunk_are_stored(
    plan: Any, monkeypatch: Any
) -> None:
    healthy = services.run_request(plan=plan, user=None)
    faulty = services.run_request(plan=make_plan(team=make_team()), user=None)
    solve = execution.EXECUTORS["solve"]

    def executor(inputs: Any, held: Any, claim: Any) -> Any:
        if held.pk == faulty.pk:
            raise ValueError("math domain error")  # a solver fault that no input check caught
        return solve(inputs, held, claim)

    monkeypatch.setitem(execution.EXECUTORS, "solve", executor)
    outcomes = execution.runs_execute(run_ids=[healthy.pk, faulty.pk], claim=Claim(task_id="c", retries=0))
    assert [o.status for o in outcomes] == ["succeeded", "failed"]
    statuses = dict(Run.objects.values_list("pk", "status"))
    assert (statuses[healthy.pk], statuses[faulty.pk]) == ("succeeded", "failed")
    assert Run.objects.get(pk=faulty.pk).error == "internal solver error: ValueError: math domain error"


def test_a_tasks_retry_waits_less_than_half_a_lease() -> None:
    """A transient error's retry comes back before the lease its run last renewed runs out (renewed every
    third of a lease), so the sweeper does not re-send the run while its own task waits."""
    from django.conf import settings

    from scenarios.tasks import RETRY_OPTIONS

    assert RETRY_OPTIONS["retry_backoff_max"] <= settings.RUN_LEASE_S / 2
    assert RETRY_OPTIONS["retry_backoff_max"] * RETRY_OPTIONS["max_retries"] >= 300  # minutes of outage
