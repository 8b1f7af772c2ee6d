"""A member an admin adds is invited, not enrolled: anyone may make a team and name any user, so until the user
accepts, the team gives them nothing (no rows, no default, no writes through a tool that omits ``team``) and
takes nothing from them. Members leave when they like; a team keeps one accepted admin."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from api.models import ApiToken
from scenarios.models import Membership, Team
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def _client_of(username: str) -> tuple[APIClient, Any]:
    user = get_user_model().objects.create_user(username=username, password="long-enough-password-123")
    _, secret = ApiToken.issue(user=user, name="tool")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client, user


def test_an_invited_user_sees_nothing_of_the_team_until_they_accept(world: World) -> None:
    f.plan_for(team=world.alpha, user=world.alice.user, name="alpha plan")
    dave, _ = _client_of("dave")
    added = world.alice.client.post(
        f"/api/v1/teams/{world.alpha.pk}/members/", {"user": "dave", "role": "editor"}, format="json"
    )
    assert added.status_code == 201, added.content
    assert added.json()["accepted_at"] is None

    assert dave.get("/api/v1/teams/").json()["results"] == []
    assert dave.get("/api/v1/plans/").json()["results"] == []
    assert dave.get(f"/api/v1/teams/{world.alpha.pk}/members/").status_code == 404
    # a tool that omits `team` does not write into the inviting team
    made = dave.post("/api/v1/sites/", {"name": "mine", "document": {"region": "quebec"}}, format="json")
    assert made.status_code == 400 and made.json()["errors"][0]["path"] == "team", made.content

    invitations = dave.get("/api/v1/invitations/").json()["results"]
    assert [(i["team"], i["team_name"], i["role"]) for i in invitations] == [
        (world.alpha.pk, "Alpha", "editor")
    ]
    accepted = dave.post(f"/api/v1/invitations/{invitations[0]['id']}/accept/")
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["accepted_at"] is not None
    assert [t["id"] for t in dave.get("/api/v1/teams/").json()["results"]] == [world.alpha.pk]
    assert [p["name"] for p in dave.get("/api/v1/plans/").json()["results"]] == ["alpha plan"]
    assert dave.get("/api/v1/invitations/").json()["results"] == []


def test_an_invitation_is_its_invitees_alone_to_answer(world: World) -> None:
    _dave, _ = _client_of("dave")
    world.alice.client.post(
        f"/api/v1/teams/{world.alpha.pk}/members/", {"user": "dave", "role": "viewer"}, format="json"
    )
    invitation = Membership.objects.get(team=world.alpha, user__username="dave")
    for other in (world.alice.client, world.mallory.client, world.carol.client):
        assert other.post(f"/api/v1/invitations/{invitation.pk}/accept/").status_code == 404
        assert other.delete(f"/api/v1/invitations/{invitation.pk}/").status_code == 404
    assert Membership.objects.get(pk=invitation.pk).accepted_at is None


def test_declining_removes_the_invitation_and_a_team_token_cannot_answer(world: World) -> None:
    dave, user = _client_of("dave")
    for team in (world.alpha, world.beta):
        Membership.objects.create(team=team, user=user, role="viewer", accepted_at=None)
    Membership.objects.filter(team=world.beta, user=user).update(accepted_at="2026-01-01T00:00:00Z")
    _, secret = ApiToken.issue(user=user, name="beta only", team=world.beta)
    beta_tool = APIClient()
    beta_tool.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    invitation = Membership.objects.get(team=world.alpha, user=user)
    assert beta_tool.post(f"/api/v1/invitations/{invitation.pk}/accept/").status_code == 403
    assert dave.delete(f"/api/v1/invitations/{invitation.pk}/").status_code == 204
    assert not Membership.objects.filter(pk=invitation.pk).exists()


def test_members_leave_and_their_team_tokens_stop_working(world: World) -> None:
    token, secret = ApiToken.issue(user=world.bob.user, name="alpha tool", team=world.alpha)
    tool = APIClient()
    tool.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert tool.get("/api/v1/plans/").status_code == 200
    left = world.bob.client.post(f"/api/v1/teams/{world.alpha.pk}/leave/")  # bob is a viewer
    assert left.status_code == 204, left.content
    assert not Membership.objects.filter(team=world.alpha, user=world.bob.user).exists()
    token.refresh_from_db()
    assert token.revoked_at is not None and tool.get("/api/v1/plans/").status_code == 401
    assert world.mallory.client.post(f"/api/v1/teams/{world.alpha.pk}/leave/").status_code == 404


def test_an_invited_admin_does_not_count_as_the_teams_admin(world: World) -> None:
    _, user = _client_of("dave")
    Membership.objects.create(team=world.alpha, user=user, role="admin", accepted_at=None)
    assert world.alice.client.post(f"/api/v1/teams/{world.alpha.pk}/leave/").status_code == 400
    mine = Membership.objects.get(team=world.alpha, user=world.alice.user)
    members = f"/api/v1/teams/{world.alpha.pk}/members/"
    assert (
        world.alice.client.patch(f"{members}{mine.pk}/", {"role": "editor"}, format="json").status_code == 400
    )
    assert Membership.objects.get(pk=mine.pk).role == "admin"
    assert Team.objects.filter(pk=world.alpha.pk).exists()
