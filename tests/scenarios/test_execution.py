"""Claim, attempt cap, idempotent storage, deltas, sweeper (in process; workers are in test_worker.py)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from scenarios import conf, execution, services
from scenarios.execution import BUSY, CAPPED, CLAIMED, RESUMED, Claim
from scenarios.models import Result, Run
from tests.scenarios.factories import make_plan, make_team, training_with_tokens

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(sent):
    return make_plan(team=make_team())


def _run(plan, **fields) -> Run:
    return services.run_request(plan=plan, user=None, **fields)


def _stored(plan, claim) -> Result:
    run = _run(plan)
    execution.run_execute(run_id=run.pk, claim=claim)
    return Result.objects.get(runs=run)


def test_unchanged_inputs_return_the_existing_result(plan, claim) -> None:
    first = execution.run_execute(run_id=_run(plan).pk, claim=claim)
    again = execution.run_execute(run_id=_run(plan).pk, claim=Claim(task_id="other", retries=0))
    assert first.created and not again.created and again.result_id == first.result_id
    assert Result.objects.filter(plan=plan).count() == 1
    assert set(Run.objects.values_list("status", flat=True)) == {"succeeded"}


def test_changed_inputs_make_the_next_version_with_a_delta(plan, claim) -> None:
    v1 = _stored(plan, claim)
    services.plan_update(plan=plan, user=None, training=training_with_tokens(2.0e12))
    v2 = _stored(plan, claim)
    assert (v2.version, v2.previous_id) == (2, v1.pk)
    assert v2.delta["previous_version"] == 1
    tco = v2.delta["total_usd"]
    assert tco["previous"] == v1.total_usd and tco["current"] == v2.total_usd
    assert tco["change"] == pytest.approx(v2.report["tco"]["total_usd"] - v1.report["tco"]["total_usd"])
    assert set(v2.delta) >= {"total_usd", "usd_per_million_tokens", "total_kgco2e", "step_s"}
    # Going back to the first inputs returns version 1 again; nothing new is stored.
    services.plan_update(plan=plan, user=None, training=training_with_tokens(1.0e12))
    back = execution.run_execute(run_id=_run(plan).pk, claim=claim)
    assert back.result_id == v1.pk and Result.objects.filter(plan=plan).count() == 2


def test_a_finished_run_is_not_claimed_again(plan, claim) -> None:
    run = _run(plan)
    execution.run_execute(run_id=run.pk, claim=claim)
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id="late-duplicate", retries=0)) == BUSY


def test_a_live_claim_is_not_taken_by_another_delivery(plan, claim) -> None:
    run = _run(plan)
    assert execution.run_claim(run_id=run.pk, claim=claim) == CLAIMED
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id="sweeper-resend", retries=0)) == BUSY
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("running", 1)


def test_redelivery_after_a_lost_worker_counts_attempts_up_to_the_cap(plan) -> None:
    run = _run(plan)
    delivery = Claim(task_id=str(uuid.uuid4()), retries=0)
    # The same message delivered again means the worker holding it died: each is an attempt.
    assert [execution.run_claim(run_id=run.pk, claim=delivery) for _ in range(3)] == [CLAIMED] * 3
    assert execution.run_claim(run_id=run.pk, claim=delivery) == CAPPED
    run.refresh_from_db()
    assert run.status == "failed" and run.attempts == 3 and run.finished_at is not None
    assert run.error.startswith("gave up after 3 attempts: the worker running this run was lost")
    assert execution.run_claim(run_id=run.pk, claim=delivery) == BUSY


def test_a_retry_after_a_transient_error_resumes_without_counting(plan) -> None:
    run = _run(plan)
    task_id = str(uuid.uuid4())
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=0)) == CLAIMED
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=1)) == RESUMED
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id=task_id, retries=2)) == RESUMED
    run.refresh_from_db()
    assert (run.status, run.attempts, run.claim_retries) == ("running", 1, 2)


def test_an_expired_lease_can_be_claimed_by_another_delivery(plan, claim, settings) -> None:
    run = _run(plan)
    execution.run_claim(run_id=run.pk, claim=claim)
    later = timezone.now() + dt.timedelta(seconds=conf.run_lease_s() + 1)
    assert execution.run_claim(run_id=run.pk, claim=Claim(task_id="next", retries=0), now=later) == CLAIMED
    # The first delivery no longer holds the run: its late success does not overwrite the new claim.
    assert not execution.run_fail(run_id=run.pk, claim=claim, error="late")
    run.refresh_from_db()
    assert (run.status, run.attempts, run.claim_task_id) == ("running", 2, "next")


def test_bad_input_fails_the_run_with_the_field_path(plan, claim) -> None:
    # A scenario edited after the plan was validated so that the layout no longer divides the cluster.
    from scenarios.models import ClusterRevision

    rev = plan.cluster.latest_revision
    bad = ClusterRevision.objects.create(
        scenario=plan.cluster, number=2, document={**rev.document, "gpus": 66}
    )
    type(plan.cluster).objects.filter(pk=plan.cluster_id).update(latest_revision=bad)
    run = _run(plan)
    execution.run_execute(run_id=run.pk, claim=claim)
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("the scenario cannot be solved: cluster.gpus")


def test_soft_time_limit_fails_the_run_with_the_reason(plan, monkeypatch) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from scenarios import tasks

    def slow(document, run, claim):
        raise SoftTimeLimitExceeded()

    monkeypatch.setitem(execution.EXECUTORS, "solve", slow)
    run = _run(plan)
    assert tasks.execute_run.apply(args=[run.pk]).get() == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and "exceeded its time limit" in run.error and run.attempts == 1


def test_sweeper_resends_stale_queued_runs_and_recovers_expired_leases(plan, sent, settings) -> None:
    settings.SWEEP_QUEUED_AFTER_S = 60
    fresh, stale, expired, capped = (_run(plan) for _ in range(4))
    long_ago = timezone.now() - dt.timedelta(minutes=5)
    Run.objects.filter(pk=stale.pk).update(enqueued_at=long_ago)
    Run.objects.filter(pk__in=[expired.pk, capped.pk]).update(
        status="running", lease_expires_at=long_ago, attempts=1
    )
    Run.objects.filter(pk=capped.pk).update(attempts=3)
    sent.clear()
    with pytest.MonkeyPatch.context():
        report = execution.runs_sweep(send=False)
    assert (report.resent, report.expired, report.failed) == (1, 1, 1)
    statuses = dict(Run.objects.values_list("pk", "status"))
    assert statuses[fresh.pk] == statuses[stale.pk] == statuses[expired.pk] == "queued"
    assert statuses[capped.pk] == "failed"
    assert Run.objects.get(pk=capped.pk).error.startswith("gave up after 3 attempts")
    # A second sweep right away finds nothing: the resent runs carry a fresh enqueued_at.
    assert execution.runs_sweep(send=False) == execution.SweepReport(resent=0, expired=0, failed=0)


def test_sweeper_sends_after_commit(plan, sent, django_capture_on_commit_callbacks, monkeypatch) -> None:
    run = _run(plan)
    Run.objects.filter(pk=run.pk).update(enqueued_at=timezone.now() - dt.timedelta(hours=1))
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        execution.runs_sweep()
    assert sent == [[run.pk]]


def test_promoted_columns_read_search_reports_from_best() -> None:
    from scenarios.adapters import promoted_columns

    report = {"best": {"step": {"step_s": 2.0, "mfu": 0.4}, "tco": {"total_usd": 5.0}}}
    assert promoted_columns(report)["step_s"] == 2.0 and promoted_columns(report)["total_kgco2e"] is None


def test_chunk_over_its_time_limit_sends_its_runs_back_one_by_one(plan, sent, monkeypatch) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from scenarios import tasks

    def slow(document, run, claim):
        raise SoftTimeLimitExceeded()

    runs = [_run(plan) for _ in range(3)]
    sent.clear()
    monkeypatch.setitem(execution.EXECUTORS, "solve", slow)
    assert tasks.execute_runs.apply(args=[[r.pk for r in runs]]).get() == {"released": 3}
    assert [sorted(ids) for ids in sent] == [sorted(r.pk for r in runs)]
    assert set(Run.objects.values_list("status", "attempts")) == {("queued", 1)}
    assert tasks.execute_run.apply(args=[runs[0].pk]).get() == "failed"
    assert Run.objects.get(pk=runs[0].pk).attempts == 2
