"""The search jobs and the change feed at their edges: a tampered cursor, progress of a
search taken up again, instants finer than a microsecond, a repeated ``kind``."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest

from scenarios import events, execution
from scenarios.models import EVENT_RUN_FAILED, Event, Run
from scenarios.runs import claims
from tests.api.conftest import World
from tests.api.factories import plan_for
from tests.api.inprocess import claim

SPACE: dict[str, Any] = {"tp": [1, 2, 4], "cp": [1], "pp": [1, 2], "microbatch_seqs": [1, 2]}


def _record(team_id: int, name: str) -> None:
    events.record([events.event(kind=EVENT_RUN_FAILED, team_id=team_id, payload={"name": name})])


def _cursor(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --- The change feed ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("position", ["abc", "1.5", ""])
def test_a_tampered_feed_cursor_is_a_client_error_not_a_500(world: World, position: str) -> None:
    """The cursor is client-held text: one whose position is not an id must be refused (DRF's own answer to
    a cursor it cannot read is 404 "Invalid cursor"), not crash the feed with a ValueError."""
    _record(world.alpha.pk, "one")
    client = world.alice.client
    client.raise_request_exception = False
    response = client.get(f"/api/v1/events/?cursor={_cursor('p=' + position)}")
    assert response.status_code == 404, (response.status_code, response.content[:300])
    tail = client.get(
        f"/api/v1/events/?after={Event.objects.get().public_id}&cursor={_cursor('p=' + position)}"
    )
    assert tail.status_code == 404, (tail.status_code, tail.content[:300])


# --- Search jobs -------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("no_broker")
def test_search_progress_never_goes_backwards_when_a_lost_search_is_run_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search whose worker was lost after evaluating most layouts is re-queued by the sweeper and run
    again; its points_done (read through /runs/{id}/) drops from near the total back to the first chunk."""
    from scenarios.jobs import search

    monkeypatch.setattr(search, "SEARCH_PROGRESS_PERIOD_S", 0.0)
    monkeypatch.setattr("solvers.search.ranking.EVAL_CHUNK_LAYOUTS", 64)
    plan = plan_for(team=world.alpha, user=world.alice.user, name="p")
    accepted = world.carol.client.post(f"/api/v1/plans/{plan.pk}/search/", {"space": SPACE}, format="json")
    assert accepted.status_code == 202, accepted.content[:300]
    run_id, url = accepted.json()["run"], accepted.json()["url"]
    total = accepted.json()["points_total"]
    # The first worker evaluates all but the last chunk, then is lost (its lease runs out).
    first = claim()
    assert execution.run_claim(run_id=run_id, claim=first) == execution.CLAIMED
    assert claims.run_progress(run_id=run_id, claim=first, points_done=total - 64, points_total=total)
    seen = [world.carol.client.get(url).json()["points_done"]]
    Run.objects.filter(pk=run_id).update(lease_expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    execution.runs_sweep(send=False)
    seen.append(world.carol.client.get(url).json()["points_done"])

    original = claims.run_progress

    def spy(**kwargs: Any) -> bool:
        ok = original(**kwargs)
        seen.append(world.carol.client.get(url).json()["points_done"])
        return ok

    monkeypatch.setattr(claims, "run_progress", spy)
    assert execution.run_execute(run_id=run_id, claim=claim()).status == "succeeded"
    seen.append(world.carol.client.get(url).json()["points_done"])
    assert seen == sorted(seen), seen


@pytest.mark.django_db
def test_since_and_until_with_sub_microsecond_instants_keep_their_meaning(world: World) -> None:
    """ISO 8601 allows more than six fractional digits; stored instants have six. Read truncated, ``until`` half
    a microsecond after an event left that event out, and ``since`` kept it: such an instant is refused."""
    _record(world.alpha.pk, "one")
    created = Event.objects.get().created_at.astimezone(dt.UTC)
    later = created.strftime("%Y-%m-%dT%H:%M:%S.%f") + "5Z"  # half a microsecond after the event
    for name in ("until", "since"):  # refused naming the parameter, rather than read as another instant
        response = world.alice.client.get(f"/api/v1/events/?{name}={later}")
        assert response.status_code == 400, response.content[:300]
        assert response.json()["errors"][0]["path"] == name


@pytest.mark.django_db
def test_the_kind_filter_repeats(world: World) -> None:
    """``kind`` is the feed's one filter that takes several values, as repeated parameters (every other
    repeated parameter is a 400)."""
    from scenarios.models import EVENT_JOB_FINISHED

    _record(world.alpha.pk, "failed")
    events.record([events.event(kind=EVENT_JOB_FINISHED, team_id=world.alpha.pk, payload={"name": "done"})])
    both = world.alice.client.get(f"/api/v1/events/?kind={EVENT_RUN_FAILED}&kind={EVENT_JOB_FINISHED}")
    assert both.status_code == 200, both.content[:300]
    assert {row["kind"] for row in both.json()["results"]} == {EVENT_RUN_FAILED, EVENT_JOB_FINISHED}
    twice = world.alice.client.get(f"/api/v1/events/?team={world.alpha.pk}&team={world.alpha.pk}")
    assert twice.status_code == 400 and twice.json()["errors"][0]["path"] == "team"
