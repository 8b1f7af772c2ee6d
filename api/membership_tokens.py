"""A member removed from a team loses the API tokens restricted to that team, however the membership goes
(deleted, moved to another user or team, or made an invitation again).

``DELETE /teams/{id}/members/{id}/`` revokes them itself (naming who revoked them); a membership deleted
elsewhere (the admin's delete page, its team's inline, a team deleted with its members) goes through this
receiver, so that a member added back later does not find an old, perhaps leaked, token working again. The
token's ``revoked_by`` is left empty there; the audit log's entry for the change names the actor of the
request, as for any change the admin makes.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, pre_save

from api.models import ApiToken
from scenarios.models import Membership


def revoke_team_tokens(sender: Any, instance: Membership, **kwargs: Any) -> None:
    # One by one (a few rows), so that each revocation is in the audit log.
    for token in ApiToken.objects.active().filter(user_id=instance.user_id, team_id=instance.team_id):
        token.revoke(by=None)


def revoke_when_moved(sender: Any, instance: Membership, **kwargs: Any) -> None:
    """A membership given to another user or team (the admin's change form), or made an invitation again, is
    a removal for its former (user, team): their tokens restricted to that team are revoked."""
    if instance.pk is None:
        return
    before = (
        Membership.objects.filter(pk=instance.pk).values_list("user_id", "team_id", "accepted_at").first()
    )
    if before is None:
        return
    user_id, team_id, accepted_at = before
    if (user_id, team_id) != (instance.user_id, instance.team_id) or (
        accepted_at is not None and instance.accepted_at is None
    ):
        for token in ApiToken.objects.active().filter(user_id=user_id, team_id=team_id):
            token.revoke(by=None)


def connect() -> None:
    post_delete.connect(revoke_team_tokens, sender=Membership, dispatch_uid="api.revoke_team_tokens")
    pre_save.connect(revoke_when_moved, sender=Membership, dispatch_uid="api.revoke_when_moved")
