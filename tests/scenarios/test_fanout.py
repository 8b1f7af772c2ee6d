"""Re-runs when prices change, the nightly re-check, and one re-run per (plan, price-book version)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from scenarios import execution, fanout, services
from scenarios.models import Result, Run
from tests.scenarios.factories import CLUSTER_A100, make_plan, make_team

H100_BOOK = [
    {"kind": "accelerator", "key": "h100-sxm", "value": 25000, "source": "list price"},
    {"kind": "accelerator", "key": "a100-sxm-80gb", "value": 15000},
    {"kind": "electricity", "key": "quebec", "value": 0.05},
]


def publish(team, entries, name="book"):
    return services.price_book_publish(team=team, user=None, name=name, entries=entries, fan_out="none")


def with_price(entries, key, value):
    return [{**e, "value": value} if e["key"] == key else e for e in entries]


def execute_all(claim) -> None:
    for run_id in Run.objects.filter(status="queued").order_by("pk").values_list("pk", flat=True):
        execution.run_execute(run_id=run_id, claim=claim)


@pytest.mark.django_db
def test_h100_price_change_re_solves_exactly_the_h100_plans_with_deltas(claim, sent) -> None:
    team = make_team()
    h100 = [make_plan(team=team) for _ in range(3)]
    a100 = [make_plan(team=team, cluster_doc=CLUSTER_A100) for _ in range(2)]
    publish(None, H100_BOOK)
    for plan in h100 + a100:
        services.run_request(plan=plan, user=None)
    execute_all(claim)
    assert Result.objects.count() == 5
    book = publish(None, with_price(H100_BOOK, "h100-sxm", 21000), name="H100 cut")
    sent.clear()
    outcome = fanout.price_book_fan_out(price_book_id=book.pk)
    assert (outcome.plans_checked, outcome.plans_changed, outcome.runs_created) == (5, 3, 3)
    runs = list(Run.objects.filter(trigger="price_change"))
    assert {r.plan_id for r in runs} == {p.pk for p in h100}
    assert {r.price_book_id for r in runs} == {book.pk} and sorted(
        run_id for chunk in sent for run_id in chunk
    ) == sorted(r.pk for r in runs)
    execute_all(claim)
    for plan in h100:
        latest = Result.objects.filter(plan=plan).latest("version")
        assert latest.version == 2 and latest.price_book_id == book.pk
        capex_change = latest.delta["total_usd"]["change"]
        assert capex_change < 0 and latest.delta["usd_per_million_tokens"]["change"] < 0
        assert latest.input_snapshot["prices"]["cluster.accelerator.unit_price_usd"]["value"] == 21000
    for plan in a100:
        assert list(Result.objects.filter(plan=plan).values_list("version", flat=True)) == [1]


@pytest.mark.django_db
def test_fan_out_is_idempotent_and_skips_unchanged_and_overridden_prices(claim, sent) -> None:
    team, shielded = make_team(), make_team()
    plan, shielded_plan = make_plan(team=team), make_plan(team=shielded)
    publish(None, H100_BOOK)
    publish(shielded, [{"kind": "accelerator", "key": "h100-sxm", "value": 24000}])
    same = publish(None, H100_BOOK, name="re-issued, same prices")
    assert fanout.price_book_fan_out(price_book_id=same.pk).runs_created == 0
    cut = publish(None, with_price(H100_BOOK, "h100-sxm", 20000))
    first = fanout.price_book_fan_out(price_book_id=cut.pk)
    again = fanout.price_book_fan_out(price_book_id=cut.pk)
    assert (first.plans_changed, first.runs_created, again.runs_created) == (1, 1, 0)
    assert list(Run.objects.values_list("plan_id", flat=True)) == [plan.pk]
    assert not Run.objects.filter(plan=shielded_plan).exists()


@pytest.mark.django_db
def test_team_book_fans_out_to_that_team_only(sent) -> None:
    team, other = make_team(), make_team()
    plan = make_plan(team=team)
    make_plan(team=other)
    book = publish(team, [{"kind": "electricity", "key": "quebec", "value": 0.01}])
    outcome = fanout.price_book_fan_out(price_book_id=book.pk)
    assert (outcome.plans_checked, outcome.runs_created) == (1, 1)
    assert Run.objects.get().plan_id == plan.pk


@pytest.mark.django_db
def test_nightly_recheck_runs_only_auto_rerun_plans_whose_inputs_changed(claim, sent) -> None:
    team = make_team()
    auto = make_plan(team=team, auto_rerun=True)
    manual = make_plan(team=team)
    first = fanout.plans_recheck()
    assert (first.plans_checked, first.runs_created) == (1, 1)
    assert Run.objects.get().plan_id == auto.pk and Run.objects.get().trigger == "schedule"
    execute_all(claim)
    # Unchanged inputs: no run, no result.
    assert fanout.plans_recheck().runs_created == 0
    assert Run.objects.count() == 1 and Result.objects.count() == 1
    services.scenario_update(
        scenario=auto.cluster, user=None, document={**auto.cluster.document, "gpus": 128}
    )
    assert fanout.plans_recheck().runs_created == 1
    assert not Run.objects.filter(plan=manual).exists()


@pytest.mark.django_db
def test_nightly_after_a_price_fan_out_adds_no_second_run(sent) -> None:
    team = make_team()
    make_plan(team=team, auto_rerun=True)
    publish(None, H100_BOOK)
    cut = publish(None, with_price(H100_BOOK, "h100-sxm", 20000))
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    assert fanout.plans_recheck().runs_created == 0
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_beat_processes_at_once_create_one_run_per_plan_and_book(sent) -> None:
    team = make_team()
    plans = [make_plan(team=team, auto_rerun=True) for _ in range(20)]
    publish(None, H100_BOOK)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def beat() -> None:
        try:
            barrier.wait()
            fanout.plans_recheck()
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Run.objects.count() == len(plans)
    assert sorted(Run.objects.values_list("plan_id", flat=True)) == sorted(p.pk for p in plans)


@pytest.mark.django_db
def test_beat_schedules_are_rows_created_by_a_data_migration() -> None:
    import importlib

    from django.apps import apps
    from django_celery_beat.models import PeriodicTask

    migration = importlib.import_module("scenarios.migrations.0003_beat_schedules")
    migration.create_schedules(apps, None)
    migration.create_schedules(apps, None)  # idempotent
    rows = {t.task: t for t in PeriodicTask.objects.filter(task__startswith="scenarios.")}
    assert set(rows) == {"scenarios.sweep_runs", "scenarios.nightly_recheck"}
    assert rows["scenarios.sweep_runs"].interval.every == 30
    nightly = rows["scenarios.nightly_recheck"].crontab
    assert (nightly.hour, nightly.minute) == ("2", "30")
    assert PeriodicTask.objects.filter(task="scenarios.sweep_runs").count() == 1


@pytest.mark.django_db
def test_nightly_recheck_counts_only_results_of_the_current_solver(claim, sent, monkeypatch) -> None:
    import solvers

    team = make_team()
    plan = make_plan(team=team, auto_rerun=True)
    assert fanout.plans_recheck().runs_created == 1
    execute_all(claim)
    stored = Result.objects.get(plan=plan)
    assert stored.solver_version == solvers.SOLVER_VERSION
    assert fanout.plans_recheck().runs_created == 0
    # A new solver: the stored result is another solver's numbers, so the plan is re-run (and the run does
    # not conflict with the one the previous solver answered).
    monkeypatch.setattr(solvers, "SOLVER_VERSION", f"{solvers.SOLVER_VERSION}+next")
    again = fanout.plans_recheck()
    assert (again.plans_checked, again.runs_created) == (1, 1)
    assert Run.objects.filter(plan=plan, trigger="schedule").count() == 2
    assert fanout.plans_recheck().runs_created == 0  # and only once


@pytest.mark.django_db
def test_fan_out_and_plans_to_rerun_agree(sent) -> None:
    team = make_team()
    h100 = [make_plan(team=team) for _ in range(2)]
    make_plan(team=team, cluster_doc=CLUSTER_A100)
    publish(None, H100_BOOK)
    cut = publish(None, [{"kind": "accelerator", "key": "h100-sxm", "value": 20000}])  # a patch
    assert fanout.plans_to_rerun(book=cut) == 2
    outcome = fanout.price_book_fan_out(price_book_id=cut.pk)
    assert (outcome.plans_checked, outcome.plans_changed, outcome.runs_created) == (3, 2, 2)
    assert sorted(Run.objects.values_list("plan_id", flat=True)) == sorted(p.pk for p in h100)
