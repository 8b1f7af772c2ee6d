"""API tokens page: list the signed-in user's tokens, create one (its secret shown once), revoke one.

The rules are the API's (``api.views.tokens``): the name, the team (one of the user's teams, or none for a
token that acts on all of them) and the expiry are validated by the API's own serializer, and the limit on
active tokens is ``api.limits.token_limit_error``. Any member may create a token for one of their teams, as
through the API; a session is never restricted to one team, so the API's rule for team-restricted callers
does not arise here.

The secret is shown on the page the creation redirects to, and nowhere after it: the POST keeps it in the
session only until that page pops it (a reload, or the back button, cannot show it again; the page is not
cached). Only a hash is stored (``ApiToken.issue``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.generic import TemplateView, View

from api.limits import token_limit_error
from api.models import SCOPE_CHOICES, SCOPE_READ_WRITE, ApiToken
from api.serializers.tokens import ApiTokenSerializer
from scenarios.models import ROLE_VIEWER, Team
from web.access import TeamPageMixin

SESSION_SECRET_KEY = "web_new_token"
ALL_TEAMS = ""
# The form asks for days; beyond this a date is not an expiry anyone means (and would overflow a datetime).
MAX_EXPIRES_DAYS = 36_500
# Serializer field -> form field, so that an API rule's message lands on the field the user filled in.
SERIALIZER_FIELDS = {"name": "name", "team": "team", "expires_at": "expires_in_days", "scope": "scope"}


class TokenForm(forms.Form):
    """The fields as a person fills them in; their rules are the API serializer's (see ``issue_token``)."""

    name = forms.CharField(required=False, strip=True)
    team = forms.ChoiceField(required=False)
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_EXPIRES_DAYS, label="Expires in (days)"
    )
    scope = forms.ChoiceField(choices=SCOPE_CHOICES, initial=SCOPE_READ_WRITE, required=False, label="Scope")

    def __init__(self, *args: Any, teams: tuple[Team, ...], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        team_field = self.fields["team"]
        assert isinstance(team_field, forms.ChoiceField)
        team_field.choices = [(ALL_TEAMS, "All my teams"), *((str(t.pk), t.name) for t in teams)]


@dataclass
class _SessionCaller:
    """What the API's team lookups (``api.permissions.team_roles``) read from a caller: the user, and no
    token (a browser session acts on all of the user's teams)."""

    user: Any
    auth: None = None


def check_new_token(
    *,
    user: Any,
    name: str,
    team_id: int | str | None,
    expires_at: datetime | None,
    scope: str = SCOPE_READ_WRITE,
) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    """The API's rules for a new token of ``user`` (its serializer, then the limit on active tokens):
    ``(validated data, {})`` or ``(None, {serializer field or "": [messages]})``. The dashboard and
    ``manage.py create_access`` both ask here, so a token is held to the same rules however it is made."""
    data = {"name": name, "team": team_id, "expires_at": expires_at, "scope": scope}
    serializer = ApiTokenSerializer(data=data, context={"request": _SessionCaller(user=user)})
    if not serializer.is_valid():
        return None, {field: [str(error) for error in errors] for field, errors in serializer.errors.items()}
    limit_error = token_limit_error(user.pk)
    if limit_error is not None:
        return None, {"": [limit_error]}
    return dict(serializer.validated_data), {}


def issue_token(request: HttpRequest, form: TokenForm) -> tuple[ApiToken, str] | None:
    """Validate a bound form with the API's rules and issue the token; None (errors on the form) if refused."""
    if not form.is_valid():
        return None
    days = form.cleaned_data["expires_in_days"]
    valid, errors = check_new_token(
        user=request.user,
        name=form.cleaned_data["name"],
        team_id=form.cleaned_data["team"] or None,
        expires_at=None if days is None else timezone.now() + timedelta(days=days),
        scope=form.cleaned_data["scope"] or SCOPE_READ_WRITE,
    )
    if valid is None:
        for field, messages_ in errors.items():
            for message in messages_:
                form.add_error(SERIALIZER_FIELDS.get(field), message)
        return None
    return ApiToken.issue(user=request.user, **valid)  # type: ignore[arg-type]  # signed in: never anonymous


class TokensView(TeamPageMixin, TemplateView):
    """``/tokens/``: the user's own tokens and the form that creates one."""

    template_name = "web/tokens.html"
    write_role = ROLE_VIEWER

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        created = request.session.pop(SESSION_SECRET_KEY, None)
        response = self.render_to_response(self.get_context_data(created=created))
        add_never_cache_headers(response)
        return response

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        form = TokenForm(request.POST, teams=self.access.teams)
        issued = issue_token(request, form)
        if issued is None:
            response = self.render_to_response(self.get_context_data(form=form), status=400)
            add_never_cache_headers(response)
            return response
        token, secret = issued
        request.session[SESSION_SECRET_KEY] = {"name": token.name, "secret": secret}
        return HttpResponseRedirect(reverse("web:tokens"))

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.setdefault("form", TokenForm(teams=self.access.teams))
        context["nav"] = "tokens"
        context["name_max_length"] = getattr(ApiTokenSerializer().fields["name"], "max_length", None)
        context["max_expires_days"] = MAX_EXPIRES_DAYS
        context["default_expires_days"] = settings.API_TOKEN_DEFAULT_DAYS
        context["tokens"] = list(
            ApiToken.objects.filter(user=self.request.user.pk)
            .select_related("team")
            .order_by("-created_at", "-id")
        )
        return context


class RevokeTokenView(TeamPageMixin, View):
    """``POST /tokens/<pk>/revoke/``: revoke one of the user's own tokens (anyone else's is not found)."""

    http_method_names = ["post"]  # noqa: RUF012

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        token = get_object_or_404(ApiToken, pk=pk, user_id=request.user.pk)
        if token.revoked_at is None:
            token.revoke(by=request.user if isinstance(request.user, Model) else None)
            messages.success(request, f"Token “{token.name}” revoked: it no longer authenticates.")
        else:
            messages.info(request, f"Token “{token.name}” was already revoked.")
        return HttpResponseRedirect(reverse("web:tokens"))


urlpatterns = [
    path("tokens/", TokensView.as_view(), name="tokens"),
    path("tokens/<int:pk>/revoke/", RevokeTokenView.as_view(), name="token-revoke"),
]
