"""Re-runs when prices change, in the orders prices really change in: a global and a team book published
close together, a price that comes back, a plan archived while its re-run waits, the nightly re-check while a
fan-out's run waits. Each fan-out is called directly (``fan_out="none"`` at publish), standing for a fan-out
message delivered late (a busy queue, or the broker down and the sweeper sending it again)."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import currency, execution, fanout, services
from scenarios.models import Event, Result, Run, Team
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def publish(team: Any, entries: list[dict[str, Any]], name: str = "book") -> Any:
    return services.price_book_publish(team=team, user=None, name=name, entries=entries, fan_out="none")


def h100(value: float) -> list[dict[str, Any]]:
    return [{"kind": "accelerator", "key": "h100-sxm", "value": value}]


def execute_all(claim: Any) -> None:
    for run_id in Run.objects.filter(status="queued").order_by("pk").values_list("pk", flat=True):
        execution.run_execute(run_id=run_id, claim=claim)


def solved_plan(claim: Any, *, h100_usd: float, **fields: Any) -> tuple[Any, Any]:
    """A plan solved once under a global book with the H100 at ``h100_usd``: (plan, its result)."""
    plan = make_plan(team=make_team(), **fields)
    publish(None, [QUEBEC, *h100(h100_usd)])
    services.run_request(plan=plan, user=None)
    execute_all(claim)
    return plan, Result.objects.get(plan=plan)


def test_a_global_and_a_team_book_published_close_together_still_re_run_a_plan_whose_price_moved(
    claim: Any, sent: Any
) -> None:
    """The global book moves the H100 20,000 -> 25,000; before its fan-out runs, the team publishes its first
    book pinning the H100 at 25,000. Compared with the books of now, neither fan-out would see a change (the
    team's pin hides the global move; the team's pin equals the new global price). Each compares the sheets
    on either side of its own publication, so the global one re-runs the plan."""
    plan, first = solved_plan(claim, h100_usd=20000)
    assert first.prices["cluster.accelerator.unit_price_usd"]["value"] == 20000
    moved = publish(None, h100(25000))
    pinned = publish(plan.team, h100(25000), name="team pins the H100")
    assert fanout.price_book_fan_out(price_book_id=moved.pk).runs_created == 1
    assert fanout.price_book_fan_out(price_book_id=pinned.pk).runs_created == 0
    assert not currency.results_currency([first.pk])[first.pk].current
    execute_all(claim)
    plan.refresh_from_db()
    assert plan.latest_result.prices["cluster.accelerator.unit_price_usd"]["value"] == 25000


def test_a_team_book_published_before_a_global_one_is_compared_under_the_global_book_of_its_time(
    claim: Any, sent: Any
) -> None:
    """The other order: the team pins 25,000 while the global price is 20,000 (a change its fan-out re-runs),
    then the global book moves to 25,000 (hidden by the team's pin: nothing to re-run)."""
    plan, _ = solved_plan(claim, h100_usd=20000)
    pinned = publish(plan.team, h100(25000), name="team pins the H100")
    moved = publish(None, h100(25000))
    assert fanout.price_book_fan_out(price_book_id=moved.pk).runs_created == 0
    assert fanout.price_book_fan_out(price_book_id=pinned.pk).runs_created == 1


def test_a_price_that_comes_back_moves_the_figures_back_and_the_next_delta_is_against_the_current_result(
    claim: Any, sent: Any
) -> None:
    """H100 25,000 (v1) -> 20,000 (v2) -> 25,000: the third solve's inputs are v1's, so nothing new is stored
    and v1 is the plan's current result again, with a figure.moved event that says the cost went back up. The
    next change (21,000) is v3, compared with v1 (the result it replaces), not with v2."""
    plan, v1 = solved_plan(claim, h100_usd=25000)
    Team.objects.filter(pk=plan.team_id).update(alert_thresholds={"total_usd": 0.02})
    for value in (20000, 25000):
        book = publish(None, h100(value))
        assert fanout.price_book_fan_out(price_book_id=book.pk).runs_created == 1
        execute_all(claim)
    plan.refresh_from_db()
    assert plan.latest_result_id == v1.pk and Result.objects.filter(plan=plan).count() == 2
    v2 = Result.objects.get(plan=plan, version=2)
    [back_up] = Event.objects.filter(kind="figure.moved", plan_id=plan.pk, payload__change__gt=0)
    assert back_up.result_id == v1.pk
    assert back_up.payload["reused"] is True and back_up.payload["previous_version"] == 2
    assert back_up.payload["previous"] == v2.total_usd and back_up.payload["current"] == v1.total_usd

    book = publish(None, h100(21000))
    fanout.price_book_fan_out(price_book_id=book.pk)
    execute_all(claim)
    v3 = Result.objects.get(plan=plan, version=3)
    assert v3.prices["cluster.accelerator.unit_price_usd"]["value"] == 21000
    assert v3.previous_id == v1.pk and v3.delta["previous_version"] == 1
    assert v3.delta["total_usd"]["previous"] == v1.total_usd and v3.delta["total_usd"]["change"] < 0


def test_a_re_run_of_a_plan_archived_before_a_worker_takes_it_fails_with_the_reason(
    claim: Any, sent: Any
) -> None:
    plan, _ = solved_plan(claim, h100_usd=25000)
    cut = publish(None, h100(20000))
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    services.plan_archive(plan=plan, user=None)
    execute_all(claim)
    run = Run.objects.get(plan=plan, trigger="price_change")
    assert run.status == "failed" and "the plan is archived" in run.error
    assert Result.objects.filter(plan=plan).count() == 1


def test_the_nightly_re_check_adds_no_run_for_inputs_a_fan_out_run_is_still_to_solve(sent: Any) -> None:
    """A global fan-out queues the plan's run; a team book that does not touch the plan is published after it
    (a newer book id, which keys the nightly run). The nightly re-check finds the queued run for the same
    inputs and adds none."""
    team = make_team()
    plan = make_plan(team=team, auto_rerun=True)
    publish(None, [QUEBEC, *h100(25000)])
    cut = publish(None, h100(20000))
    assert fanout.price_book_fan_out(price_book_id=cut.pk).runs_created == 1
    other = publish(team, [{"kind": "accelerator", "key": "a100-sxm-80gb", "value": 14000}])
    assert fanout.price_book_fan_out(price_book_id=other.pk).runs_created == 0
    assert fanout.plans_recheck().runs_created == 0
    assert Run.objects.filter(plan=plan).count() == 1
