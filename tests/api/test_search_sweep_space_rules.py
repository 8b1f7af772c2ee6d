"""POST /plans/{id}/search/ and /sweep/: a space no layout of which the engine accepts is refused with 400
naming ``space`` before anything is queued, by a search and a sweep alike; a range within a field's limits
is not refused for a value past its own stop."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios.models import Run
from tests.api.factories import plan_for


def _url(plan: Any, job: str) -> str:
    return f"/api/v1/plans/{plan.pk}/{job}/"


def _paths(response: Any) -> list[str]:
    return [e["path"] for e in response.json().get("errors", [])]


@pytest.fixture
def plan(world: Any) -> Any:
    return plan_for(team=world.alpha, user=world.alice.user, name="p8b")


def test_a_search_of_interleaved_schedules_without_pipeline_stages_is_refused(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Interleaved 1F1B needs pp >= 2: with pp [1] every layout of the space breaks the engine's schedule
    rule. Accepting it queues a run (points_total 5,160) that can only fail with 'none of 6,600 candidate
    layouts is valid'; ``search_check`` promises a 400 at ``space`` for a space with no layout that passes the
    schedule rules."""
    body = {"space": {"schedule": ["interleaved"], "pp": [1]}}
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(_url(plan, "search"), body, format="json")
    assert response.status_code == 400 and _paths(response) == ["space"], response.json()
    assert Run.objects.count() == 0 and callbacks == []


def test_a_sweep_whose_every_point_has_no_valid_layout_is_refused_as_a_search_is(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """tp 3 divides neither Llama 3 8B's 32 heads nor any GPU count swept: /search/ refuses that space with
    400 at ``space``; a sweep over it could only store a row with an error at every point (the reason a
    sweep whose every point is over the layout limit is refused), so it is refused too, not queued (202)."""
    space = {"tp": [3]}
    search = world.carol.client.post(_url(plan, "search"), {"space": space}, format="json")
    assert search.status_code == 400 and _paths(search) == ["space"], search.json()
    body = {"axes": [{"field": "cluster.gpus", "values": [32, 64]}], "space": space}
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(_url(plan, "sweep"), body, format="json")
    assert response.status_code == 400 and "space" in _paths(response), response.json()
    assert Run.objects.count() == 0 and callbacks == []


def test_a_fraction_swept_up_to_its_limit_is_accepted(world: Any, plan: Any) -> None:
    """0.09 to 1.0 by 0.07 lists fractions within [0, 1]; its last value must not come out as
    1.0000000000000002, which is refused with 'must be <= 1, got 1 (value 14 of the range)'."""
    axes = [{"field": "training.efficiency.overlap.dp", "range": {"start": 0.09, "stop": 1.0, "step": 0.07}}]
    response = world.carol.client.post(
        _url(plan, "sweep"), {"axes": axes, "space": {"tp": [1, 2], "pp": [1]}}, format="json"
    )
    assert response.status_code == 202, response.json()
    assert response.json()["points_total"] == 14


def test_a_search_listing_interleaved_before_1f1b_at_pp_1_is_accepted(
    world: Any, plan: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """At pp 1 the schedule does not matter and 1f1b is valid: a space of schedules [interleaved, 1f1b] and
    pp [1] holds as many layouts as [1f1b, interleaved] does, so it is queued (202) as that one is, not
    refused with 400 at ``space``."""
    accepted = world.carol.client.post(
        _url(plan, "search"), {"space": {"schedule": ["1f1b", "interleaved"], "pp": [1]}}, format="json"
    )
    assert accepted.status_code == 202, accepted.json()
    response = world.carol.client.post(
        _url(plan, "search"), {"space": {"schedule": ["interleaved", "1f1b"], "pp": [1]}}, format="json"
    )
    assert response.status_code == 202, response.json()


def test_a_sweep_whose_points_hold_either_no_layout_or_too_many_is_refused(
    world: Any, plan: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """The two refusals mixed: one point's space holds no valid layout, the other's more than a search may
    build; no point could be searched, so the sweep is refused at ``space``, not queued to store error rows."""
    from scenarios.jobs import requests
    from solvers.search.space import MAX_LAYOUTS_PER_SEARCH

    def layouts_of(document: Any, space: Any) -> int:
        return 0 if document["cluster"]["gpus"] == 32 else MAX_LAYOUTS_PER_SEARCH + 1

    monkeypatch.setattr(requests, "_layouts_of", layouts_of)
    body = {"axes": [{"field": "cluster.gpus", "values": [32, 64]}], "space": {"tp": [1, 2]}}
    with django_capture_on_commit_callbacks() as callbacks:
        response = world.carol.client.post(_url(plan, "sweep"), body, format="json")
    assert response.status_code == 400 and _paths(response) == ["space"], response.json()
    assert "no point's search space can be searched" in response.json()["errors"][0]["message"]
    assert Run.objects.count() == 0 and callbacks == []
