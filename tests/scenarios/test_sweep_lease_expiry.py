"""A sweep whose lease expired while its chunk messages waited behind other work (the sweeper re-sends it
through ``scenarios.execute_run``): it is still solved a chunk per task, so no task exceeds the budget its
chunks are sized for (``SWEEP_CHUNK_POINTS`` points, about ``SWEEP_CHUNK_LAYOUTS`` layouts: far inside the task
time limit), and once its result is stored its chunk rows are dropped as on the chunk path."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from scenarios import execution, search_jobs
from scenarios.models import Result, Run, SweepChunk
from scenarios.runs import sweeper
from tests.scenarios.factories import SPACE, make_plan, make_team, new_claim

AXES: list[dict[str, Any]] = [
    {"field": "cluster.gpus", "values": [32, 64]},
    {"field": "site.region", "values": ["quebec", "virginia"]},
    {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 25, "stop": 75, "step": 25}},
]
POINTS = 12
CHUNK_POINTS = 2


def _expired_sweep(settings: Any, chunks_sent: list[Any]) -> Run:
    """A started sweep whose chunks were sent but none taken yet, and whose lease then ran out: the sweeper
    put it back to queued (to be sent through ``scenarios.execute_run``)."""
    settings.SWEEP_CHUNK_POINTS = CHUNK_POINTS
    settings.SWEEP_MIN_CHUNKS = 1
    run = search_jobs.sweep_request(plan=make_plan(team=make_team()), user=None, axes=AXES, space=SPACE)
    assert search_jobs.sweep_begin(run_id=run.pk, claim=new_claim()) == "started"
    assert len(chunks_sent) == POINTS // CHUNK_POINTS
    later = timezone.now() + dt.timedelta(seconds=settings.RUN_LEASE_S + 1)
    report = sweeper.runs_sweep(now=later, send=False)
    assert report.expired == 1
    run.refresh_from_db()
    assert run.status == "queued"
    return run


@pytest.mark.django_db
def test_a_resent_sweep_solves_no_more_than_a_chunk_in_one_task(
    settings, starts_sent, chunks_sent, sent, monkeypatch
) -> None:
    """The re-sent run arrives as one ``scenarios.execute_run`` task; solving every point there puts the
    whole sweep under one task's time limit (a 1,000-point sweep is 50 chunks of about 10 s each against
    a soft limit of 270 s), so a sweep that waited behind another one fails on the time limit."""
    import solvers.sweep

    run = _expired_sweep(settings, chunks_sent)
    solved: list[int] = []
    original = solvers.sweep.sweep_point

    def counting(plan: Any, index: int, **kwargs: Any) -> Any:
        solved.append(index)
        return original(plan, index, **kwargs)

    monkeypatch.setattr(solvers.sweep, "sweep_point", counting)
    starts_sent.clear()
    outcome = execution.run_execute(run_id=run.pk, claim=new_claim())
    assert len(solved) <= CHUNK_POINTS, f"one task solved {len(solved)} points; a chunk holds {CHUNK_POINTS}"
    # handed over to its own start task, unclaimed by this one
    assert outcome.status == "handed over" and starts_sent == [run.pk]
    run.refresh_from_db()
    assert run.status == "queued" and run.claim_task_id == ""


@pytest.mark.django_db
def test_a_resent_sweep_drops_its_chunk_rows_once_its_result_is_stored(
    settings, starts_sent, chunks_sent, sent
) -> None:
    """The re-sent run is started again: its chunks are sent anew and, once they are solved, the result holds
    every point's row and the chunk rows are deleted, as on the chunk path (the sweep used to be finished in
    the one task and stored by it with every chunk row kept, a second copy of the result's rows for good)."""
    run = _expired_sweep(settings, chunks_sent)
    first_sending = list(chunks_sent)
    chunks_sent.clear()
    outcome = execution.run_execute(run_id=run.pk, claim=new_claim())
    assert outcome.status == "handed over"
    # the start task it was handed to
    assert search_jobs.sweep_begin(run_id=run.pk, claim=new_claim()) == "started"
    assert sorted(chunk for _, chunk, _ in chunks_sent) == sorted(chunk for _, chunk, _ in first_sending)
    for run_id, chunk, input_hash in chunks_sent:
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert len(Result.objects.get(runs=run).report["rows"]) == POINTS
    assert SweepChunk.objects.filter(run=run).count() == 0
