"""Short leases renewed while a run executes, and time limits that belong to the worker.

* ``LeaseKeeper`` renews on its period from its own thread and stops with the work it guards;
* a run held by a live delivery keeps moving its lease forward while it solves;
* messages carry no time limit (the executing worker applies its own), and the soft limit is 90% of the hard;
* a sweep chunk over its soft limit fails the run saying that the chunk timed out, not "solver error";
* with the shipped lease (20 s) and the shipped sweeper schedule (beat, every 30 s), the run of a worker
  killed with SIGKILL mid-solve is back in the queue within a minute and is then solved by another worker.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest
from django.utils import timezone

from scenarios import execution, queue, services
from scenarios.models import Run
from tests.conftest import wait_for
from tests.scenarios.beat import running_beat
from tests.scenarios.factories import make_plan, make_team

HOOKS = ("--include", "tests.scenarios.worker_hooks")


def test_the_lease_keeper_renews_on_its_period_and_stops_with_the_work() -> None:
    calls: list[float] = []
    with execution.LeaseKeeper(lambda: calls.append(time.monotonic()), period_s=0.05) as keeper:
        time.sleep(0.4)
    stopped_with = len(calls)
    time.sleep(0.2)
    assert 4 <= stopped_with == len(calls) == keeper.renewals
    assert not any(t.name == "lease-keeper" and t.is_alive() for t in threading.enumerate())


def test_the_default_period_is_a_third_of_the_lease(settings) -> None:
    settings.RUN_LEASE_S = 21
    assert execution.LeaseKeeper(lambda: None).period_s == 7


def test_shipped_limits_soft_is_90_percent_of_hard_and_the_lease_is_short() -> None:
    from planner import settings as shipped

    hard, soft = shipped.CELERY_TASK_TIME_LIMIT, shipped.CELERY_TASK_SOFT_TIME_LIMIT
    assert shipped.RUN_LEASE_S == 20
    assert soft == int(hard * 0.9) and soft < hard


@pytest.mark.django_db(transaction=True)  # the keeper's thread has its own connection: data must be committed
def test_a_run_held_by_a_live_delivery_keeps_its_lease_while_it_solves(settings, monkeypatch, claim) -> None:
    settings.RUN_LEASE_S = 3  # renewed every second
    plan = make_plan(team=make_team())
    run = services.run_request(plan=plan, user=None)
    leases: list[Any] = []
    solve = execution.EXECUTORS["solve"]

    def slow(inputs: Any, held: Run, claim_: Any) -> dict[str, Any]:
        for _ in range(4):
            time.sleep(1.1)
            leases.append(Run.objects.values_list("lease_expires_at", flat=True).get(pk=held.pk))
        return solve(inputs, held, claim_)

    monkeypatch.setitem(execution.EXECUTORS, "solve", slow)
    assert execution.run_execute(run_id=run.pk, claim=claim).status == "succeeded"
    assert len(set(leases)) >= 3, leases  # moved forward while the solve ran ...
    assert all(lease > timezone.now() - dt.timedelta(seconds=10) for lease in leases)
    # ... so the sweeper never took it for lost, although the solve outlived a whole lease.
    assert Run.objects.get(pk=run.pk).attempts == 1


@pytest.mark.integration  # publishes to the real broker
def test_messages_carry_no_time_limit_whoever_sends_them(monkeypatch) -> None:
    from celery import current_app
    from celery.signals import before_task_publish

    # This process was configured with other limits than the worker that will run the task.
    monkeypatch.setattr(current_app.conf, "task_time_limit", 7)
    monkeypatch.setattr(current_app.conf, "task_soft_time_limit", 6)
    seen: list[Any] = []

    def record(headers: dict[str, Any] | None = None, **_: Any) -> None:
        seen.append((headers or {}).get("timelimit"))

    before_task_publish.connect(record, weak=False)
    try:
        # A task id nobody runs: the message waits on the test queue, which only test workers consume.
        queue.send(queue.EXECUTE_RUN, [0])
    finally:
        before_task_publish.disconnect(record)
    assert [list(limits) for limits in seen] == [[None, None]]


@pytest.mark.django_db
def test_a_sweep_chunk_over_its_time_limit_says_it_timed_out(monkeypatch, claim) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from scenarios import search_jobs, tasks
    from scenarios.jobs import requests, sweep

    plan = make_plan(team=make_team())
    monkeypatch.setattr(requests, "send_start", lambda run_id: None)
    sent: list[Any] = []
    monkeypatch.setattr(
        sweep,
        "send_chunks",
        lambda *, run_id, chunks, input_hash: sent.extend((run_id, c, input_hash) for c in chunks),
    )
    run = search_jobs.sweep_request(
        plan=plan,
        user=None,
        axes=[{"field": "cluster.gpus", "values": [32, 64]}],
        space={"tp": [1, 2], "cp": [1], "pp": [1], "microbatch_seqs": [1]},
    )
    assert search_jobs.sweep_begin(run_id=run.pk, claim=claim) == "started"

    def too_slow(*_: Any) -> Any:
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(sweep, "_solve_chunk", too_slow)
    run_id, chunk, input_hash = sent[0]
    assert tasks.sweep_chunk.apply(args=[run_id, chunk, input_hash]).get() == "failed"
    failed = Run.objects.get(pk=run.pk)
    assert failed.status == "failed"
    assert f"points chunk {chunk} timed out" in failed.error and "solver error" not in failed.error


@pytest.mark.timeout(300)
def test_a_dead_workers_run_is_back_in_the_queue_within_a_minute(worker_factory, tmp_path) -> None:
    """Shipped lease and sweeper schedule: nothing here sweeps or shortens a lease."""
    plan = make_plan(team=make_team())
    with running_beat(tmp_path) as beat:
        doomed = worker_factory(concurrency=1, env={"SCENARIOS_TEST_SOLVE_DELAY_S": "600"}, extra_args=HOOKS)
        run = services.run_request(plan=plan, user=None)
        assert wait_for(lambda: Run.objects.get(pk=run.pk).status == "running", timeout_s=60), doomed.log()
        rescuer = worker_factory(concurrency=1, extra_args=HOOKS)
        doomed.kill9()
        killed_at = time.monotonic()
        requeued = wait_for(
            lambda: Run.objects.get(pk=run.pk).attempts >= 2 or Run.objects.get(pk=run.pk).status == "queued",
            timeout_s=75,
            interval_s=0.2,
        )
        back_after_s = time.monotonic() - killed_at
        assert requeued and back_after_s < 60, (back_after_s, beat.poll())
        assert wait_for(lambda: Run.objects.get(pk=run.pk).status == "succeeded", timeout_s=60), rescuer.log()
        done = Run.objects.get(pk=run.pk)
        print(f"dead worker's run back in the queue after {back_after_s:.1f} s")
    assert done.attempts == 2 and done.worker == rescuer.name
