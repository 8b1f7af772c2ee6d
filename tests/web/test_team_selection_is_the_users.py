"""Which team the dashboard shows and writes to is the signed-in user's choice: anyone may make a team and add
any user to it, so a team that someone else adds the user to never becomes, unasked, the team the user's
lists show and the team a new plan (its cluster, model and site documents) is written to."""

from __future__ import annotations

import pytest

from scenarios.models import Membership, Plan
from tests.web.conftest import Browsers, preset_fields

pytestmark = pytest.mark.django_db


def test_being_added_to_another_team_does_not_move_where_new_plans_go(browsers: Browsers) -> None:
    world = browsers.world
    carol = browsers.carol  # editor on Alpha, her only team
    assert carol.get("/").status_code == 200  # her dashboard shows Alpha

    made = world.mallory.client.post(
        "/api/v1/teams/", {"name": "Aardvark", "slug": "aardvark"}, format="json"
    )
    assert made.status_code == 201, made.content
    added = world.mallory.client.post(
        f"/api/v1/teams/{made.json()['id']}/members/", {"user": "carol", "role": "editor"}, format="json"
    )
    assert added.status_code == 201, added.content

    response = carol.post("/plans/new/", {"form": "preset", "name": "confidential run", **preset_fields()})
    assert response.status_code == 302, response.content[:500]
    plan = Plan.objects.get(name="confidential run")
    assert plan.team_id == world.alpha.pk
    assert not Plan.objects.filter(team_id=made.json()["id"]).exists()


def test_an_invitation_is_answered_on_the_dashboard_and_joining_does_not_move_the_default(
    browsers: Browsers,
) -> None:
    world = browsers.world
    carol = browsers.carol
    made = world.mallory.client.post(
        "/api/v1/teams/", {"name": "Aardvark", "slug": "aardvark"}, format="json"
    )
    team_id = made.json()["id"]
    world.mallory.client.post(
        f"/api/v1/teams/{team_id}/members/", {"user": "carol", "role": "editor"}, format="json"
    )
    invitation = Membership.objects.get(team_id=team_id, user=world.carol.user)

    page = carol.get("/plans/").content.decode()
    assert "Aardvark" in page and "invited" in page
    # nobody else answers it
    url = f"/invitations/{invitation.pk}/"
    assert browsers.bob.post(url, {"answer": "accept"}).status_code == 404
    assert carol.post(url, {"answer": "accept"}).status_code == 302
    assert Membership.objects.get(pk=invitation.pk).accepted_at is not None

    # joined later, Aardvark (first by name) does not become the team new plans go to
    response = carol.post("/plans/new/", {"form": "preset", "name": "after joining", **preset_fields()})
    assert response.status_code == 302, response.content[:500]
    assert Plan.objects.get(name="after joining").team_id == world.alpha.pk


def test_a_declined_invitation_is_gone(browsers: Browsers) -> None:
    world = browsers.world
    made = world.mallory.client.post("/api/v1/teams/", {"name": "Zebra", "slug": "zebra"}, format="json")
    team_id = made.json()["id"]
    world.mallory.client.post(
        f"/api/v1/teams/{team_id}/members/", {"user": "bob", "role": "viewer"}, format="json"
    )
    invitation = Membership.objects.get(team_id=team_id, user=world.bob.user)
    assert browsers.bob.post(f"/invitations/{invitation.pk}/", {"answer": "decline"}).status_code == 302
    assert not Membership.objects.filter(pk=invitation.pk).exists()
