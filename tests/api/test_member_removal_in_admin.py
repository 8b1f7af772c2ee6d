"""A member removed from a team in the admin loses the tokens restricted to that team, as one removed through
``DELETE /teams/{id}/members/{id}/`` does: added back later, the old token does not work again."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.models import ApiToken
from scenarios.models import Membership
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_removing_a_member_in_the_admin_revokes_their_team_tokens(world: World, admin_client: Client) -> None:
    token, secret = ApiToken.issue(user=world.carol.user, name="alpha tool", team=world.alpha)
    tool = APIClient()
    tool.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert tool.get("/api/v1/plans/").status_code == 200

    membership = Membership.objects.get(team=world.alpha, user=world.carol.user)
    removed = admin_client.post(f"/admin/scenarios/membership/{membership.pk}/delete/", {"post": "yes"})
    assert removed.status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()

    token.refresh_from_db()
    assert token.revoked_at is not None
    # added back (as a viewer), the old team token stays dead
    Membership.objects.create(team=world.alpha, user=world.carol.user, role="viewer")
    assert tool.get("/api/v1/plans/").status_code == 401
