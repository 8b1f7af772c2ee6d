"""Log in, log out and the team switcher."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from scenarios import services
from scenarios.models import Membership
from web.access import SESSION_TEAM_KEY, team_access


class LoginView(auth_views.LoginView):
    """Django's log-in page; a signed-in user whose ``?next=`` is the log-in page itself goes to the
    dashboard's home instead (Django raises "Redirection loop" for it: a 500)."""

    template_name = "web/login.html"
    redirect_authenticated_user = True

    def get_success_url(self) -> str:
        url = super().get_success_url()
        if url.split("?", 1)[0] == self.request.path:
            return resolve_url(settings.LOGIN_REDIRECT_URL)
        return url


@login_required
@require_POST
def switch_team(request: HttpRequest) -> HttpResponse:
    """Select the team whose rows the lists show; only a team the user belongs to can be selected."""
    access = team_access(request)
    raw = request.POST.get("team", "")
    chosen = next((team for team in access.teams if str(team.pk) == raw), None)
    if chosen is None:
        messages.error(request, "team: not one of your teams")
    else:
        request.session[SESSION_TEAM_KEY] = chosen.pk
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=False):
        target = reverse("web:plans")
    return HttpResponseRedirect(target)


@login_required
@require_POST
def answer_invitation(request: HttpRequest, pk: int) -> HttpResponse:
    """Accept or decline one of the user's invitations (``answer`` = ``accept`` or ``decline``); another
    user's invitation is not found."""
    invitation = next((m for m in team_access(request).invitations if m.pk == pk), None)
    if invitation is None:
        raise Http404("no such invitation")
    answer = request.POST.get("answer", "")
    if answer == "accept":
        try:
            services.membership_accept(membership=invitation)
        except Membership.DoesNotExist:
            raise Http404("no such invitation: it was withdrawn") from None
        messages.success(request, f"You joined {invitation.team.name} as {invitation.role}.")
    elif answer == "decline":
        invitation.delete()
        messages.success(request, f"You declined the invitation to {invitation.team.name}.")
    else:
        messages.error(request, "answer: must be accept or decline")
    return HttpResponseRedirect(reverse("web:plans"))


urlpatterns = [
    path(
        "login/",
        LoginView.as_view(),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("team/", switch_team, name="switch-team"),
    path("invitations/<int:pk>/", answer_invitation, name="answer-invitation"),
]
