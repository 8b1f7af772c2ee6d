"""A membership the admin moves to another user (or another team) takes the member off the team as a delete
does: the tokens the former member held restricted to that team are revoked, so added back later, the old
token does not work again."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.models import ApiToken
from scenarios.models import Membership
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_moving_a_membership_to_another_user_in_the_admin_revokes_the_former_members_team_tokens(
    world: World, admin_client: Client
) -> None:
    token, secret = ApiToken.issue(user=world.carol.user, name="alpha tool", team=world.alpha)
    tool = APIClient()
    tool.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert tool.get("/api/v1/plans/").status_code == 200

    membership = Membership.objects.get(team=world.alpha, user=world.carol.user)
    moved = admin_client.post(
        f"/admin/scenarios/membership/{membership.pk}/change/",
        {
            "team": world.alpha.pk,
            "user": world.nobody.user.pk,
            "role": "editor",
            "accepted_at_0": "2026-01-01",
            "accepted_at_1": "00:00:00",
        },
    )
    assert moved.status_code == 302, moved.content[:2000]
    assert Membership.objects.get(pk=membership.pk).user_id == world.nobody.user.pk

    Membership.objects.create(team=world.alpha, user=world.carol.user, role="viewer")  # added back
    token.refresh_from_db()
    assert token.revoked_at is not None, "the former member's team token was left active"
    assert tool.get("/api/v1/plans/").status_code == 401
