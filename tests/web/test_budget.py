"""The dashboard's costly forms draw on the API's per-user budgets (web.budget): creating a plan on the
``solve`` budget, running a plan and starting a search or a sweep on the ``run`` budget. Over the budget a form
answers 429 with Retry-After and does nothing; pages that only show are not counted."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from api.throttling import PerTokenScopedThrottle
from scenarios.models import Plan, Run
from tests.api import factories as f
from tests.web.conftest import SPACE_FORM, Browsers, preset_fields

pytestmark = pytest.mark.django_db

CREATE = reverse("web:plan-create")


@pytest.fixture
def budget_of_one(monkeypatch: pytest.MonkeyPatch, fresh_throttle_counts: None) -> None:
    monkeypatch.setattr(PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "1/min", "run": "1/min"})


def assert_over_budget(response: Any) -> None:
    assert response.status_code == 429, response.content.decode()[:500]
    assert 1 <= int(response["Retry-After"]) <= 60
    assert (
        "Too many requests" in response.content.decode() and "Nothing was done" in response.content.decode()
    )


def test_creating_plans_draws_on_the_solve_budget_that_the_users_api_session_shares(
    browsers: Browsers, budget_of_one: None
) -> None:
    for _ in range(3):  # showing the form costs nothing
        assert browsers.carol.get(CREATE).status_code == 200
    first = browsers.carol.post(CREATE, {"form": "preset", "name": "one", **preset_fields()})
    assert first.status_code == 302, first.content.decode()[:500]
    assert_over_budget(browsers.carol.post(CREATE, {"form": "preset", "name": "two", **preset_fields()}))
    assert sorted(Plan.objects.values_list("name", flat=True)) == ["one"]
    # the same user's browser session on the API has spent it too; another user has a budget of their own
    body = {"schema_version": 1, "model": {"preset": "llama3-8b"}}
    assert browsers.carol.post("/api/v1/solve/", body, content_type="application/json").status_code == 429
    other = browsers.alice.post(CREATE, {"form": "preset", "name": "three", **preset_fields()})
    assert other.status_code == 302


def test_running_a_plan_and_starting_a_job_draw_on_the_run_budget(
    browsers: Browsers, budget_of_one: None, no_broker: None
) -> None:
    world = browsers.world
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="Alpha plan")
    run_url = reverse("web:plan-run", args=[plan.pk])
    assert browsers.carol.post(run_url).status_code == 302
    assert_over_budget(browsers.carol.post(run_url))
    job = f"{reverse('web:job-new')}?plan={plan.pk}&kind=search"
    assert browsers.carol.get(job).status_code == 200
    assert_over_budget(browsers.carol.post(job, {"objective": "step_s", **SPACE_FORM}))
    assert Run.objects.count() == 1
    # another user's budget is untouched
    started = browsers.alice.post(job, {"objective": "step_s", **SPACE_FORM})
    assert started.status_code == 302 and Run.objects.count() == 2
