"""The change feed: every cause writes its event in its own transaction, once, and teams read only theirs.

Runs are executed in this process through the worker's code path (``execution.run_execute``)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from scenarios import execution, services
from scenarios.models import Event, Plan, Result, Run
from tests.api import factories as f
from tests.api.conftest import World
from tests.api.inprocess import claim, solve_plan

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_broker")]


def make_plan(world: World, team: Any = None, name: str = "p") -> Plan:
    return f.plan_for(team=team or world.alpha, user=None, name=name)


def feed(client: Any, query: str = "") -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/events/?{query}")
    assert response.status_code == 200, response.content[:500]
    rows: list[dict[str, Any]] = response.json()["results"]
    return rows


def publish(team: Any, *entries: dict[str, Any]) -> Any:
    return services.price_book_publish(
        team=team, user=None, name="prices", entries=list(entries), fan_out="none"
    )


def test_a_stored_result_raises_one_event_with_its_headline_deltas(world: World) -> None:
    plan = make_plan(world)
    first = solve_plan(plan)
    publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0})
    second = solve_plan(plan)
    assert solve_plan(plan).pk == second.pk  # the same inputs again: no new result, no new event
    stored = feed(world.alice.client, f"kind=result.stored&plan={plan.pk}")
    assert [e["result"] for e in stored] == [second.pk, first.pk]  # newest first
    latest = stored[0]
    assert latest["id"].startswith("evt_") and latest["kind"] == "result.stored"
    assert latest["payload"]["previous_version"] == first.version
    assert latest["payload"]["deltas"]["total_usd"]["current"] == second.total_usd
    assert latest["payload"]["deltas"]["step_s"]["change"] == 0.0
    assert latest["payload"]["figures"]["total_usd"] == second.total_usd
    assert Event.objects.filter(kind="result.stored", result_id=second.pk).count() == 1


def test_a_figure_past_the_team_threshold_raises_figure_moved(world: World) -> None:
    response = world.alice.client.patch(
        f"/api/v1/teams/{world.alpha.pk}/",
        {"alert_thresholds": {"total_usd": 0.02, "step_s": 0.01}},
        format="json",
    )
    assert response.status_code == 200, response.content[:300]
    plan = make_plan(world)
    solve_plan(plan)
    publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0})
    moved = solve_plan(plan)
    events = feed(world.alice.client, "kind=figure.moved")
    assert [(e["result"], e["payload"]["figure"]) for e in events] == [(moved.pk, "total_usd")]
    assert events[0]["payload"]["change_fraction"] >= 0.02 and events[0]["payload"]["threshold"] == 0.02
    bad = world.alice.client.patch(
        f"/api/v1/teams/{world.alpha.pk}/", {"alert_thresholds": {"total_usd": 0}}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "alert_thresholds"
    unknown = world.alice.client.patch(
        f"/api/v1/teams/{world.alpha.pk}/", {"alert_thresholds": {"tco": 0.1}}, format="json"
    )
    assert unknown.status_code == 400


def test_a_failed_run_and_a_finished_sweep_raise_their_events_whatever_wrote_the_status(world: World) -> None:
    plan = make_plan(world)
    run = services.run_request(plan=plan, user=None)
    held = claim()
    assert execution.run_claim(run_id=run.pk, claim=held) == execution.CLAIMED
    assert execution.run_fail(run_id=run.pk, claim=held, error="the scenario cannot be solved: test")
    # The same run cannot fail twice, and a second status write raises nothing more.
    Run.objects.filter(pk=run.pk).update(error="again")
    (failed,) = feed(world.alice.client, "kind=run.failed")
    assert failed["run"] == run.pk and failed["payload"]["error"].startswith("the scenario cannot be solved")
    # The sweeper's bulk UPDATE at the attempt cap raises it too.
    capped = services.run_request(plan=plan, user=None)
    Run.objects.filter(pk=capped.pk).update(
        status="running", attempts=3, lease_expires_at="2000-01-01T00:00Z"
    )
    execution.runs_sweep(send=False)
    assert Event.objects.filter(kind="run.failed", run_id=capped.pk).count() == 1
    assert not Event.objects.filter(kind="job.finished").exists()  # a plain solve is not a job


def test_a_price_book_publication_is_an_event_with_its_changes_and_plans_to_rerun(world: World) -> None:
    plan = make_plan(world)
    solve_plan(plan)
    book = services.price_book_publish(
        team=None,
        user=None,
        name="global",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 28_000.0}],
        fan_out="none",
    )
    for persona in (world.alice, world.mallory):  # a global event: every team sees it
        (published,) = feed(persona.client, "kind=price_book.published")
        assert published["team"] is None and published["payload"]["price_book"] == book.pk
        assert published["payload"]["plans_to_rerun"] is None  # no team learns another's plan count
        assert published["payload"]["changes"]["added"][0]["key"] == "h100-sxm"


def test_a_new_solver_version_is_announced_once_per_team(world: World, monkeypatch) -> None:
    import solvers
    import solvers.version

    plans = [make_plan(world, name=f"p{i}") for i in range(2)]
    for plan in plans:
        solve_plan(plan)
    assert not Event.objects.filter(kind="solver.changed").exists()
    monkeypatch.setattr(solvers.version, "SOLVER_VERSION", "99.0.0")
    monkeypatch.setattr(solvers, "SOLVER_VERSION", "99.0.0")
    for plan in plans:
        solve_plan(plan)
    (changed,) = feed(world.alice.client, "kind=solver.changed")
    assert changed["payload"]["solver_version"] == "99.0.0"
    assert changed["payload"]["previous_solver_version"] == solvers_version_before(plans[0])


def solvers_version_before(plan: Plan) -> str:
    return str(Result.objects.filter(plan=plan).order_by("version").first().solver_version)  # type: ignore[union-attr]


def test_teams_read_only_their_events_and_the_feed_tails_forward(world: World) -> None:
    alpha_plan = make_plan(world, name="a")
    beta_plan = make_plan(world, team=world.beta, name="b")
    first = solve_plan(alpha_plan)
    solve_plan(beta_plan)
    assert {e["plan"] for e in feed(world.alice.client)} == {alpha_plan.pk}
    assert {e["plan"] for e in feed(world.mallory.client)} == {beta_plan.pk}
    (event,) = feed(world.alice.client, "kind=result.stored")
    assert world.mallory.client.get(f"/api/v1/events/{event['id']}/").status_code == 404
    assert world.alice.client.get(f"/api/v1/events/{event['id']}/").json()["result"] == first.pk
    # Tailing: after the newest event there is nothing; a new result then appears, oldest first, once it
    # has settled (a second: api.views.events.SETTLED_BEFORE_SQL).
    assert feed(world.alice.client, f"after={event['id']}") == []
    publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0})
    second = solve_plan(alpha_plan)
    time.sleep(1.1)
    tail = feed(world.alice.client, f"after={event['id']}")
    assert [e["kind"] for e in tail] == ["price_book.published", "result.stored"]
    assert tail[1]["result"] == second.pk
    bad = world.alice.client.get("/api/v1/events/?after=evt_nothex")
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "after"


def test_the_feed_pages_by_cursor_without_gaps_or_repeats(world: World) -> None:
    plan = make_plan(world)
    solve_plan(plan)
    for value in (26_000.0, 27_000.0, 28_000.0):
        publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": value})
        solve_plan(plan)
    seen: list[str] = []
    url: str | None = "/api/v1/events/?page_size=3"
    while url:
        page = world.alice.client.get(url).json()
        seen += [e["id"] for e in page["results"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == Event.objects.filter(team=world.alpha).count() == 7


def test_results_list_their_headline_delta(world: World) -> None:
    plan = make_plan(world)
    solve_plan(plan)
    publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0})
    second = solve_plan(plan)
    listed = world.alice.client.get(f"/api/v1/results/?plan={plan.pk}").json()["results"]
    assert listed[0]["id"] == second.pk and listed[0]["delta"]["total_usd"]["change"] > 0
