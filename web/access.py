"""Who may see and change what on the dashboard: the API's team scoping and roles, for browser sessions.

The rule is the API's (``api.permissions``): every row belongs to a team; a page reads only rows of the
signed-in user's teams, so another team's row is not found (404, never 403, so that its existence does not
leak); within a team a viewer reads, an editor writes, an admin also manages tokens. The roles and their
ranks are the one table in ``scenarios.models``.

The team switcher keeps the chosen team in the session; lists show that team's rows. A page about one row
(a plan, a price book, a run) accepts a row of any of the user's teams and acts with the user's role on
that row's team.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from scenarios.models import ROLE_EDITOR, ROLE_RANK, ROLE_VIEWER, Membership, Team

SESSION_TEAM_KEY = "web_team_id"


@dataclass(frozen=True)
class TeamAccess:
    """The signed-in user's teams (``{team_id: role}``, one query) and the team the switcher selected."""

    teams: tuple[Team, ...]
    roles: dict[int, str]
    team: Team | None
    # Invitations the user has not answered: they give no access until accepted (``Membership``).
    invitations: tuple[Membership, ...] = ()

    @property
    def role(self) -> str | None:
        return None if self.team is None else self.roles.get(self.team.pk)

    def can(self, role: str, team_id: int | None = None) -> bool:
        """Whether the user holds ``role`` (or a higher one) on ``team_id`` (default: the selected team)."""
        team_id = self.team.pk if team_id is None and self.team is not None else team_id
        held = None if team_id is None else self.roles.get(team_id)
        return held is not None and ROLE_RANK[held] >= ROLE_RANK[role]

    def require(self, role: str, team_id: int | None = None) -> None:
        if not self.can(role, team_id):
            raise PermissionDenied(f"this needs the {role} role on the team")

    @property
    def team_ids(self) -> list[int]:
        return list(self.roles)


def team_access(request: HttpRequest) -> TeamAccess:
    """The user's teams and roles, read once per request (one query) and kept on the request."""
    cached = getattr(request, "_web_team_access", None)
    if cached is not None:
        return cached
    teams: list[Team] = []
    roles: dict[int, str] = {}
    joined: dict[int, tuple[Any, int]] = {}
    invitations: list[Membership] = []
    user = request.user
    if user.is_authenticated:
        for membership in (
            Membership.objects.filter(user_id=user.pk)
            .select_related("team")
            .order_by("team__name", "team_id")
        ):
            if membership.accepted_at is None:  # an invitation gives nothing until accepted
                invitations.append(membership)
                continue
            teams.append(membership.team)
            roles[membership.team_id] = membership.role
            joined[membership.team_id] = (membership.accepted_at, membership.pk)
    selected = None
    wanted = request.session.get(SESSION_TEAM_KEY) if hasattr(request, "session") else None
    for team in teams:
        if team.pk == wanted:
            selected = team
    if selected is None and teams:
        # Until the user picks one, the team they joined first: a team joined later never becomes, unasked,
        # the one the lists show and new plans are written to.
        selected = min(teams, key=lambda team: joined[team.pk])
    access = TeamAccess(teams=tuple(teams), roles=roles, team=selected, invitations=tuple(invitations))
    request._web_team_access = access  # type: ignore[attr-defined]
    return access


class TeamPageMixin(LoginRequiredMixin):
    """A signed-in page with the user's team access in ``self.access`` and in the template context.

    ``write_role`` is the role a POST needs on the row's team (``editor`` unless a view says otherwise).
    """

    request: HttpRequest
    write_role: str = ROLE_EDITOR

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.user.is_authenticated:
            self.access = team_access(request)
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)  # type: ignore[misc]
        context["access"] = self.access
        context["can_edit"] = self.access.can(self.write_role)
        return context


__all__ = ["ROLE_VIEWER", "SESSION_TEAM_KEY", "TeamAccess", "TeamPageMixin", "team_access"]


def access_context(request: HttpRequest) -> dict[str, Any]:
    """``access`` for every template (a context processor): pages rendered outside the dashboard's views (the
    404, 403 and over-budget pages) show the signed-in user's teams too, not "you are not a member of any
    team". Read only when a template asks (a lazy object), so the admin and the API's pages pay nothing."""
    return {"access": SimpleLazyObject(lambda: team_access(request))}
