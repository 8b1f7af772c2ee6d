"""Two changes that used to leave no audit entry: a user accepting an invitation (from then on the membership
gives access, so the team's admins see who joined and when) and a price feed's schedule (when the feed
publishes the team's books), at creation and on every change."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from api.models import ApiToken
from scenarios import services
from scenarios.models import Membership
from tests.api.conftest import World
from tests.api.test_audit_of_team_settings import create_feed

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit/"


def entries_about(world: World, object_type: str, object_id: int) -> list[dict[str, Any]]:
    response = world.alice.client.get(AUDIT, {"page_size": 500})
    assert response.status_code == 200, response.content[:500]
    return [
        entry
        for entry in response.json()["results"]
        if entry["object_type"] == object_type and entry["object_id"] == object_id
    ]


def test_accepting_an_invitation_is_audited_with_the_invitee_as_actor(world: World) -> None:
    dave = get_user_model().objects.create_user(username="dave", password="long-enough-password-123")
    _, secret = ApiToken.issue(user=dave, name="tool")
    dave_client = APIClient()
    dave_client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    added = world.alice.client.post(
        f"/api/v1/teams/{world.alpha.pk}/members/", {"user": "dave", "role": "editor"}, format="json"
    )
    assert added.status_code == 201, added.content
    member = added.json()["id"]
    accepted = dave_client.post(f"/api/v1/invitations/{member}/accept/")
    assert accepted.status_code == 200, accepted.content

    about = entries_about(world, "membership", member)
    assert [entry["event"] for entry in reversed(about)] == ["created", "changed"]
    acceptance = about[0]
    assert acceptance["actor"] == "dave"
    assert acceptance["team"] == world.alpha.pk
    before, after = acceptance["changes"]["accepted_at"]
    assert before is None and after

    # an accepted membership is no invitation any more; accepting it again changes and writes nothing
    assert dave_client.post(f"/api/v1/invitations/{member}/accept/").status_code == 404
    services.membership_accept(membership=Membership.objects.get(pk=member))
    assert len(entries_about(world, "membership", member)) == 2


def test_a_price_feeds_schedule_is_audited_when_set_and_when_changed(world: World, settings: Any) -> None:
    client = world.alice.client
    feed = create_feed(world, settings)
    about = entries_about(world, "price_feed", feed)
    assert [entry["event"] for entry in about] == ["created"], about
    assert about[0]["changes"]["schedule"] == [None, "every_s=3600"]
    assert about[0]["changes"]["source"] == [None, "http://127.0.0.1:9/prices.csv"]

    moved = client.patch(
        f"/api/v1/price-feeds/{feed}/",
        {"schedule": {"crontab": "30 2 * * *"}, "name": "distributor nightly"},
        format="json",
    )
    assert moved.status_code == 200, moved.content
    about = entries_about(world, "price_feed", feed)
    assert [entry["event"] for entry in reversed(about)] == ["created", "changed"]
    change = about[0]
    assert change["actor"] == "alice" and change["team"] == world.alpha.pk
    assert change["changes"] == {
        "name": ["distributor", "distributor nightly"],
        "schedule": ["every_s=3600", "crontab=30 2 * * * UTC"],
    }

    # the same schedule again is no change
    again = client.patch(
        f"/api/v1/price-feeds/{feed}/", {"schedule": {"crontab": "30 2 * * *"}}, format="json"
    )
    assert again.status_code == 200, again.content
    assert len(entries_about(world, "price_feed", feed)) == 2
