"""An invitation the team's admin withdraws (``DELETE /teams/{id}/members/{id}/``) while its invitee accepts
it is gone: the acceptance answers 404, as for any invitation that is not the caller's, not a server error."""

from __future__ import annotations

from typing import Any

import pytest

from api.views.teams import InvitationViewSet
from scenarios.models import Membership
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_accepting_an_invitation_withdrawn_meanwhile_answers_404(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.alice.client.post(
        f"/api/v1/teams/{world.alpha.pk}/members/", {"user": "nobody", "role": "editor"}, format="json"
    )
    invitation = Membership.objects.get(team=world.alpha, user=world.nobody.user)
    looked_up = InvitationViewSet.get_object

    def withdrawn_after_lookup(self: Any) -> Any:
        found = looked_up(self)
        # the admin's DELETE commits between the invitee's lookup and the acceptance
        assert (
            world.alice.client.delete(f"/api/v1/teams/{world.alpha.pk}/members/{found.pk}/").status_code
            == 204
        )
        return found

    monkeypatch.setattr(InvitationViewSet, "get_object", withdrawn_after_lookup)
    client = world.nobody.client
    client.raise_request_exception = False
    answer = client.post(f"/api/v1/invitations/{invitation.pk}/accept/")
    assert answer.status_code == 404, (answer.status_code, answer.content[:200])
    assert not Membership.objects.filter(team=world.alpha, user=world.nobody.user).exists()
