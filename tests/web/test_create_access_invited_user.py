"""``manage.py create_access`` is the operator's: it gives the user the role on the team at once, as the
admin site does. A user a team's admin has invited (not yet accepted) is enrolled by it, and the token it
issues works on the team."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.test import APIClient

from scenarios import services
from scenarios.models import Membership

pytestmark = pytest.mark.django_db


def test_create_access_for_an_invited_user_enrols_them_and_issues_a_working_token() -> None:
    owner = get_user_model().objects.create_user(username="owner", password="long-enough-password-123")
    dave = get_user_model().objects.create_user(username="dave", password="long-enough-password-123")
    team = services.team_create(name="ML infra", slug="ml-infra", owner=owner)
    services.membership_invite(team=team, user=dave, role="viewer")

    out = io.StringIO()
    call_command("create_access", "--username", "dave", "--team", "ML infra", "--role", "editor", stdout=out)
    fields = dict(line.split("=", 1) for line in out.getvalue().strip().splitlines())

    membership = Membership.objects.get(team=team, user=dave)
    assert membership.role == "editor"
    assert membership.accepted_at is not None, "create_access left the membership an unanswered invitation"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {fields['TOKEN']}")
    assert [t["id"] for t in client.get("/api/v1/teams/").json()["results"]] == [team.pk]
