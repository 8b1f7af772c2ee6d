"""A sweep in one ``scenarios.execute_runs`` chunk with plain solves (a message sent before sweeps were routed
to their own start task): the chunk hands the sweep over to ``scenarios.sweep_start`` without claiming it, so
what happens to the chunk (its other solves over the soft time limit, its worker lost and the message
redelivered) is never the sweep's: no attempt counted, no lease dropped, no re-queue."""

from __future__ import annotations

from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from scenarios import search_jobs, services, tasks
from scenarios.execution import Claim
from scenarios.models import Run
from scenarios.runs import execute
from tests.scenarios.factories import SPACE, make_plan, make_team

AXES: list[dict[str, Any]] = [{"field": "cluster.gpus", "values": [32, 64]}]


def _a_sweep_and_a_solve(settings: Any) -> tuple[Run, Run]:
    """A queued sweep of two one-point chunks and a queued solve of another plan of the same team."""
    settings.SWEEP_CHUNK_POINTS = 1
    settings.SWEEP_MIN_CHUNKS = 1
    team = make_team()
    sweep = search_jobs.sweep_request(plan=make_plan(team=team), user=None, axes=AXES, space=SPACE)
    return sweep, services.run_request(plan=make_plan(team=team), user=None)


@pytest.mark.django_db
def test_a_sweep_in_a_chunk_whose_solves_time_out_is_handed_over_untouched(
    settings, starts_sent, chunks_sent, sent, monkeypatch
) -> None:
    sweep, solve = _a_sweep_and_a_solve(settings)

    def too_slow(inputs: Any, run: Any, claim: Any) -> dict[str, Any]:
        raise SoftTimeLimitExceeded()

    monkeypatch.setitem(execute.EXECUTORS, "solve", too_slow)
    sent.clear()
    starts_sent.clear()
    tasks.execute_runs.apply(args=[[sweep.pk, solve.pk]], task_id="chunk-of-runs")
    assert starts_sent == [sweep.pk] and chunks_sent == []  # handed to its start task, not started here

    sweep.refresh_from_db()
    assert (sweep.status, sweep.attempts, sweep.claim_task_id) == ("queued", 0, "")
    assert sweep.pk not in [run_id for batch in sent for run_id in batch]  # not released and re-sent
    assert Run.objects.get(pk=solve.pk).status == "queued"
    # its start task then takes it as a first attempt
    assert search_jobs.sweep_begin(run_id=sweep.pk, claim=Claim("start", 0, "pytest")) == "started"
    sweep.refresh_from_db()
    assert (sweep.status, sweep.attempts) == ("running", 1) and len(chunks_sent) == 2


@pytest.mark.django_db
def test_a_sweep_is_not_charged_the_attempts_of_a_chunk_whose_worker_dies_on_another_run(
    settings, starts_sent, chunks_sent, sent, monkeypatch
) -> None:
    from scenarios import execution

    sweep, solve = _a_sweep_and_a_solve(settings)
    Run.objects.filter(pk=sweep.pk).update(max_attempts=2)

    class WorkerLost(BaseException):
        """The child process dying mid-solve: nothing after it runs."""

    def dies(inputs: Any, run: Any, claim: Any) -> dict[str, Any]:
        raise WorkerLost()

    monkeypatch.setitem(execute.EXECUTORS, "solve", dies)
    delivery = Claim(task_id="chunk-of-runs", retries=0, worker="pytest")  # a redelivery keeps its task id
    for _ in range(3):
        with pytest.raises(WorkerLost):
            execution.runs_execute(run_ids=[sweep.pk, solve.pk], claim=delivery)
    sweep.refresh_from_db()
    assert (sweep.status, sweep.attempts) == ("queued", 0), sweep.error
    assert Run.objects.get(pk=solve.pk).attempts == 3
