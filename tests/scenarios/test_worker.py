"""End to end through a real broker and real ``celery worker`` processes (tests/conftest.py)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from scenarios import execution, services
from scenarios.models import Result, Run
from tests.conftest import wait_for, wait_until_ready
from tests.scenarios.factories import make_plan, make_team


def test_requested_run_is_solved_by_a_worker_and_stored_once(celery_worker) -> None:
    team = make_team()
    plan = make_plan(team=team)
    runs = [services.run_request(plan=plan, user=None) for _ in range(3)]
    assert wait_for(lambda: Run.objects.filter(status="succeeded").count() == 3, timeout_s=60), (
        celery_worker.log()[-3000:]
    )
    assert Result.objects.filter(plan=plan).count() == 1
    assert {r.result_id for r in Run.objects.filter(pk__in=[r.pk for r in runs])} == {plan.results.get().pk}


def test_chunked_fan_out_through_two_worker_processes(worker_factory) -> None:
    wait_until_ready(worker_factory(concurrency=1, wait=False), worker_factory(concurrency=1, wait=False))
    team = make_team()
    plans = [make_plan(team=team) for _ in range(30)]
    services.price_book_publish(
        team=None,
        user=None,
        name="v1",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 20000}],
        fan_out="sync",
    )
    assert wait_for(lambda: Run.objects.filter(status="succeeded").count() == len(plans), timeout_s=90)
    assert Result.objects.count() == len(plans)
    assert set(Run.objects.values_list("trigger", flat=True)) == {"price_change"}


@pytest.mark.django_db(transaction=True)
def test_concurrent_stores_number_versions_without_gaps(sent) -> None:
    from solvers import solve

    team = make_team()
    plan = make_plan(team=team)
    inputs = services.plan_inputs(plan=plan)
    report = solve(inputs.document)
    runs = [services.run_request(plan=plan, user=None) for _ in range(8)]
    errors: list[BaseException] = []

    def store(worker: int, run: Run) -> None:
        try:
            for i in range(5):
                # Distinct inputs per (worker, i); worker 0 and 1 also race on the same five hashes.
                key = 0 if worker < 2 else worker
                fake = {**report, "input_hash": f"{key:032x}{i:032x}"}
                execution.result_store(run=run, claim=None, inputs=inputs, report=fake)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=store, args=(w, runs[w])) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    versions = sorted(Result.objects.filter(plan=plan).values_list("version", flat=True))
    assert versions == list(range(1, 7 * 5 + 1))
    previous = dict(Result.objects.filter(plan=plan).values_list("version", "previous__version"))
    # Each new version is compared with the plan's current result: the one before it, unless a store that
    # found its inputs solved already (workers 0 and 1 race on the same hashes) made an earlier one current.
    assert previous[1] is None and all(1 <= previous[v] < v for v in versions[1:])
