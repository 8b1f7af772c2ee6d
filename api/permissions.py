"""Team scoping and roles.

Every object belongs to a team. The caller's teams and roles are read once per request (one query) and
cached on the request. Querysets are filtered to those teams, so another team's object is simply not found
(404 on every method, never 403, so that existence does not leak). Within a team: a viewer reads, an editor
writes, an admin also manages members and tokens. A token restricted to a team sees only that team.
"""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from api.models import ApiToken
from scenarios.models import ROLE_RANK


def team_roles(request: Request) -> dict[int, str]:
    """``{team_id: role}`` for the caller (empty for anonymous callers); one query, cached per request."""
    cached = getattr(request, "_planner_team_roles", None)
    if cached is not None:
        return cached
    roles: dict[int, str] = {}
    user = request.user
    if user is not None and user.is_authenticated:
        from scenarios.models import Membership

        # An invitation not yet accepted gives nothing (``Membership``).
        rows = Membership.objects.filter(user_id=user.pk, accepted_at__isnull=False)
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is not None and token.team_id is not None:
            rows = rows.filter(team_id=token.team_id)
        roles = dict(rows.values_list("team_id", "role"))
    request._planner_team_roles = roles  # type: ignore[attr-defined]
    return roles


def has_role(request: Request, team_id: int | None, role: str) -> bool:
    if team_id is None:
        return False
    held = team_roles(request).get(team_id)
    return held is not None and ROLE_RANK[held] >= ROLE_RANK[role]


class TeamRolePermission(permissions.IsAuthenticated):
    """Authenticated; reads need any role on the object's team, writes need ``view.write_role``.

    Objects outside the caller's teams never reach this check: the view's queryset does not contain them.
    """

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        team_id = view.object_team_id(obj)
        if request.method in permissions.SAFE_METHODS:
            return has_role(request, team_id, "viewer")
        return has_role(request, team_id, getattr(view, "write_role", "editor"))
