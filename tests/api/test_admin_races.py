"""A team keeps an admin when two admins demote each other at once, and a token restricted to one team reads
that team's audit entries only (not those of its user's other tokens)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.models import ApiToken
from tests.api.conftest import World, build_world

AUDIT = "/api/v1/audit/"


@pytest.mark.django_db
def test_team_restricted_token_does_not_see_audit_of_the_users_all_team_tokens(world: World) -> None:
    alice = world.alice
    # An all-teams token of alice, created and revoked (entries with team=None).
    mine = alice.client.post("/api/v1/tokens/", {"name": "personal all teams"}, format="json").json()
    # A token restricted to alpha (alice is admin of alpha).
    _, secret = ApiToken.issue(user=alice.user, name="alpha only", team=world.alpha)
    restricted = APIClient()
    restricted.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    # The restricted token cannot see the all-teams token itself ...
    assert restricted.get(f"/api/v1/tokens/{mine['id']}/").status_code == 404
    # ... but the audit log shows it (name, prefix, scope, expiry) to the restricted token.
    found = restricted.get(AUDIT, {"object_type": "token", "object_id": mine["id"]}).json()["results"]
    assert found == []


def test_two_admins_demoting_each_other_at_once_leave_the_team_one_admin(
    transactional_db: None, monkeypatch: Any
) -> None:
    from django.db import connection

    from api.views.teams import MemberViewSet
    from scenarios.models import Membership

    world = build_world()
    carol_m = Membership.objects.get(team=world.alpha, user=world.carol.user)
    carol_m.role = "admin"
    carol_m.save()
    alice_m = Membership.objects.get(team=world.alpha, user=world.alice.user)

    barrier = threading.Barrier(2, timeout=2)
    original = MemberViewSet._refuse_losing_last_admin

    def slow_check(self: Any, membership: Any, new_role: Any) -> None:
        original(self, membership, new_role)
        # without the team lock both requests pass the check before either commits; with it, the second
        # waits for the first, so this wait times out and the second sees the first's change
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()

    monkeypatch.setattr(MemberViewSet, "_refuse_losing_last_admin", slow_check)
    statuses: dict[str, int] = {}

    def demote(name: str, client: APIClient, membership_pk: int) -> None:
        try:
            url = f"/api/v1/teams/{world.alpha.pk}/members/{membership_pk}/"
            statuses[name] = client.patch(url, {"role": "viewer"}, format="json").status_code
        finally:
            connection.close()

    threads = [
        threading.Thread(target=demote, args=("alice", world.alice.client, alice_m.pk)),
        threading.Thread(target=demote, args=("carol", world.carol.client, carol_m.pk)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    admins = Membership.objects.filter(team=world.alpha, role="admin").count()
    assert admins == 1 and sorted(statuses.values()) == [200, 400], statuses
