"""A token restricted to one team sees that team only: the user's invitations to other teams (their names and
slugs) are not listed to it, as its team list and token list show no other team."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.models import ApiToken
from scenarios.models import Membership
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_a_team_token_does_not_list_invitations_to_other_teams(world: World) -> None:
    Membership.objects.create(team=world.beta, user=world.bob.user, role="viewer", accepted_at=None)
    _, secret = ApiToken.issue(user=world.bob.user, name="alpha tool", team=world.alpha)
    alpha_tool = APIClient()
    alpha_tool.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    assert [t["id"] for t in alpha_tool.get("/api/v1/teams/").json()["results"]] == [world.alpha.pk]
    listed = alpha_tool.get("/api/v1/invitations/")
    names = [i["team_name"] for i in listed.json().get("results", [])] if listed.status_code == 200 else []
    assert names == [], f"a token restricted to alpha lists invitations to {names}"
