"""Immutability at the database: triggers refuse UPDATE and DELETE whatever code sends them."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from scenarios import execution, services
from scenarios.errors import ImmutableRowError
from scenarios.models import ClusterRevision, PriceBook, PriceEntry, Result, Run
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_result(claim, sent) -> Result:
    team = make_team()
    plan = make_plan(team=team)
    run = services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=run.pk, claim=claim)
    return Result.objects.get(runs=run)


def _raw(sql: str, params: list[Any]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_database_refuses_update_of_a_result(stored_result: Result) -> None:
    with pytest.raises(DatabaseError, match="immutable"):
        _raw("UPDATE scenarios_result SET total_usd = 0 WHERE id = %s", [stored_result.pk])
    stored_result.refresh_from_db()
    assert stored_result.total_usd and stored_result.total_usd > 0


def test_database_refuses_delete_of_a_result(stored_result: Result) -> None:
    with pytest.raises(DatabaseError, match="immutable"):
        _raw("DELETE FROM scenarios_result WHERE id = %s", [stored_result.pk])
    assert Result.objects.filter(pk=stored_result.pk).exists()


def test_queryset_update_and_delete_of_results_fail_too(stored_result: Result) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        Result.objects.filter(pk=stored_result.pk).update(version=99)
    with pytest.raises(DatabaseError), transaction.atomic():
        Result.objects.filter(pk=stored_result.pk)._raw_delete(Result.objects.db)
    assert Result.objects.get(pk=stored_result.pk).version == 1


def test_model_refuses_resave_and_delete(stored_result: Result) -> None:
    with pytest.raises(ImmutableRowError):
        stored_result.save()
    with pytest.raises(ImmutableRowError):
        stored_result.delete()


def test_price_books_and_entries_are_immutable() -> None:
    book = services.price_book_publish(
        team=None,
        user=None,
        name="list",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 25000}],
        fan_out="none",
    )
    entry = PriceEntry.objects.get(price_book=book)
    with pytest.raises(DatabaseError, match="immutable"):
        _raw("UPDATE scenarios_priceentry SET value = 1 WHERE id = %s", [entry.pk])
    with pytest.raises(DatabaseError, match="immutable"):
        _raw("DELETE FROM scenarios_pricebook WHERE id = %s", [book.pk])
    assert PriceBook.objects.get(pk=book.pk).entries.get().value == 25000


def test_revisions_refuse_update() -> None:
    team = make_team()
    plan = make_plan(team=team)
    rev = plan.cluster.latest_revision
    with pytest.raises(DatabaseError, match="immutable"):
        _raw("UPDATE scenarios_clusterrevision SET document = '{}' WHERE id = %s", [rev.pk])
    assert ClusterRevision.objects.get(pk=rev.pk).document["accelerator"] == "h100-sxm"


def test_unique_plan_input_hash_solver_and_version(stored_result: Result) -> None:
    fields = {
        "plan_id": stored_result.plan_id,
        "team_id": stored_result.team_id,
        "input_snapshot": {},
        "cluster_revision_id": stored_result.cluster_revision_id,
        "model_revision_id": stored_result.model_revision_id,
        "site_revision_id": stored_result.site_revision_id,
        "report": {},
    }
    same_solver = {**fields, "solver_version": stored_result.solver_version}
    with pytest.raises(IntegrityError), transaction.atomic():
        Result.objects.create(version=2, input_hash=stored_result.input_hash, **same_solver)
    with pytest.raises(IntegrityError), transaction.atomic():
        Result.objects.create(version=1, input_hash="f" * 64, **same_solver)
    # The same inputs solved by another solver are another result.
    other = Result.objects.create(
        version=2, input_hash=stored_result.input_hash, solver_version="x", **fields
    )
    assert other.pk != stored_result.pk


def test_automatic_runs_are_unique_per_plan_book_and_inputs(stored_result: Result) -> None:
    plan = stored_result.plan
    book = services.price_book_publish(
        team=None,
        user=None,
        name="b",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.04}],
        fan_out="none",
    )
    Run.objects.create(plan=plan, team=plan.team, trigger="schedule", price_book=book, input_hash="a" * 64)
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(
            plan=plan, team=plan.team, trigger="price_change", price_book=book, input_hash="a" * 64
        )
    # User runs are not deduplicated: asking twice queues twice (the result is still stored once).
    Run.objects.create(plan=plan, team=plan.team, trigger="api", price_book=book, input_hash="a" * 64)
    Run.objects.create(plan=plan, team=plan.team, trigger="api", price_book=book, input_hash="a" * 64)
