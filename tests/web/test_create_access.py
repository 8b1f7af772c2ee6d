"""``manage.py create_access``: user, team and token in one line; reuses what exists; refuses bad options
with a message naming the option and stores nothing."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from api.limits import MAX_ACTIVE_TOKENS_PER_USER
from api.models import ApiToken, hash_token
from scenarios.models import Membership, Team
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db

User = get_user_model()


def run(
    *args: str, stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None
) -> dict[str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("create_access", *args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    pairs = [line.split("=", 1) for line in lines]
    assert all(len(pair) == 2 for pair in pairs), lines
    return {key: value for key, value in pairs}


def counts() -> tuple[int, int, int, int]:
    return User.objects.count(), Team.objects.count(), Membership.objects.count(), ApiToken.objects.count()


def test_creates_user_team_and_token() -> None:
    out = run("--username", "alice", "--team", "ML infra")
    assert list(out) == ["USERNAME", "TEAM", "ROLE", "PASSWORD", "TOKEN", "TOKEN_ID"]
    assert out["USERNAME"] == "alice" and out["TEAM"] == "ml-infra" and out["ROLE"] == "admin"
    user = User.objects.get(username="alice")
    assert user.check_password(out["PASSWORD"]) and len(out["PASSWORD"]) >= 20
    team = Team.objects.get(slug="ml-infra")
    assert team.name == "ML infra"
    assert Membership.objects.get(team=team, user=user).role == "admin"
    token = ApiToken.objects.get(pk=int(out["TOKEN_ID"]))
    assert token.key_hash == hash_token(out["TOKEN"]) and token.user == user and token.team == team
    # No --expires-days: the default lifetime (API_TOKEN_DEFAULT_DAYS); no --scope: read and write.
    assert token.name == "cli" and token.scope == "read_write"
    expected = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    assert token.expires_at is not None and abs(token.expires_at - expected) < timedelta(minutes=1)
    # The token works against the API, restricted to the team.
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {out['TOKEN']}")
    assert api.get("/api/v1/tokens/").status_code == 200


def test_second_run_reuses_user_and_team_and_issues_another_token() -> None:
    first = run("--username", "alice", "--team", "ML infra")
    second = run("--username", "alice", "--team", "ML infra", "--token-name", "ci", "--expires-days", "30")
    assert "PASSWORD" not in second  # an existing user's password is not touched
    assert second["TEAM"] == first["TEAM"] and second["TOKEN"] != first["TOKEN"]
    assert counts() == (1, 1, 1, 2)
    token = ApiToken.objects.get(pk=int(second["TOKEN_ID"]))
    assert token.name == "ci" and token.expires_at is not None
    assert abs(token.expires_at - (timezone.now() + timedelta(days=30))) < timedelta(minutes=1)
    user = User.objects.get(username="alice")
    assert user.check_password(first["PASSWORD"])


def test_existing_member_keeps_role_unless_one_is_given() -> None:
    owner = User.objects.create_user(username="owner", password="x-long-password-1")
    team = Team.objects.create(name="Shared", slug="shared")
    Membership.objects.create(team=team, user=owner, role="admin")
    out = run("--username", "bob", "--team", "Shared", "--role", "viewer")
    assert out["ROLE"] == "viewer" and out["TEAM"] == "shared"
    assert run("--username", "bob", "--team", "Shared")["ROLE"] == "viewer"
    assert run("--username", "bob", "--team", "Shared", "--role", "editor")["ROLE"] == "editor"
    assert Membership.objects.get(team=team, user__username="bob").role == "editor"
    # A team found by --team-slug keeps its name.
    run("--username", "carol", "--team", "Another name", "--team-slug", "shared")
    assert Team.objects.get(slug="shared").name == "Shared" and Team.objects.count() == 1


def test_password_from_stdin_is_set_and_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    password = "correct horse battery staple"
    out = run(
        "--username",
        "dave",
        "--team",
        "T",
        "--password-stdin",
        stdin=password + "\n",
        monkeypatch=monkeypatch,
    )
    assert "PASSWORD" not in out
    assert User.objects.get(username="dave").check_password(password)


def test_json_output() -> None:
    out = io.StringIO()
    call_command("create_access", "--username", "erin", "--team", "Team E", "--json", stdout=out)
    body: dict[str, Any] = json.loads(out.getvalue())
    assert set(body) == {"username", "team", "role", "password", "token", "token_id"}
    assert body["team"] == "team-e" and body["token"].startswith("pln_")


@pytest.mark.parametrize(
    ("args", "stdin", "option"),
    [
        (["--username", "bad name!", "--team", "T"], None, "--username:"),
        (["--username", "", "--team", "T"], None, "--username:"),
        (["--username", "u" * 151, "--team", "T"], None, "--username:"),
        (["--username", "ok", "--team", "   "], None, "--team:"),
        (["--username", "ok", "--team", "!!!"], None, "--team: the name gives an empty slug"),
        (["--username", "ok", "--team", "T" * 201], None, "--team:"),
        (["--username", "ok", "--team", "T", "--team-slug", "not a slug"], None, "--team-slug:"),
        (
            ["--username", "ok", "--team", "T", "--role", "owner"],
            None,
            "--role: must be one of viewer, editor, admin",
        ),
        (
            ["--username", "ok", "--team", "T", "--expires-days", "0"],
            None,
            "--expires-days: must be between 1",
        ),
        (
            ["--username", "ok", "--team", "T", "--expires-days", "soon"],
            None,
            "--expires-days: must be a whole",
        ),
        (
            ["--username", "ok", "--team", "T", "--token-name", ""],
            None,
            "--token-name: This field may not be blank",
        ),
        (["--username", "ok", "--team", "T", "--token-name", "n" * 101], None, "--token-name:"),
        (
            ["--username", "ok", "--team", "T", "--password-stdin"],
            "",
            "--password-stdin: no password on stdin",
        ),
        (["--username", "ok", "--team", "T", "--password-stdin"], "123\n", "--password-stdin:"),
    ],
)
def test_bad_options_name_the_option_and_store_nothing(
    monkeypatch: pytest.MonkeyPatch, args: list[str], stdin: str | None, option: str
) -> None:
    before = counts()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with pytest.raises(CommandError) as caught:
        call_command("create_access", *args, stdout=io.StringIO())
    assert str(caught.value).startswith(option), str(caught.value)
    assert counts() == before


def test_the_api_token_limit_applies_and_nothing_is_stored() -> None:
    run("--username", "frank", "--team", "F")
    user = User.objects.get(username="frank")
    for i in range(MAX_ACTIVE_TOKENS_PER_USER - 1):
        ApiToken.issue(user=user, name=f"t{i}")
    before = counts()
    with pytest.raises(CommandError, match="--username: at most 50 active tokens per user"):
        call_command("create_access", "--username", "frank", "--team", "New team", stdout=io.StringIO())
    assert counts() == before  # the new team was rolled back with the refused token


def test_exit_status_and_stderr_from_the_command_line(tmp_path: Any) -> None:
    """A refused option is a non-zero exit with the option named on stderr (nothing reaches the database:
    the command fails before connecting)."""
    proc = subprocess.run(
        [sys.executable, "manage.py", "create_access", "--username", "ok", "--team", "T", "--role", "boss"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "--role: must be one of viewer, editor, admin" in proc.stderr and proc.stdout == ""


def test_example_plans_gives_the_team_a_plan_per_example_with_a_solve_queued(no_broker: None) -> None:
    from scenarios.models import Plan, Run

    examples = sorted((ROOT / "examples").glob("*.yaml"))
    out = run("--username", "newcomer", "--team", "First team", "--example-plans")
    team = Team.objects.get(slug="first-team")
    plans = Plan.objects.filter(team=team)
    assert int(out["EXAMPLE_PLANS"]) == len(examples) == plans.count() > 0
    assert Run.objects.filter(plan__team=team, kind="solve", status="queued").count() == len(examples)
    # Again: the plans exist, so none is added and no solve is queued twice.
    again = run("--username", "newcomer", "--team", "First team", "--example-plans")
    assert again["EXAMPLE_PLANS"] == "0" and plans.count() == len(examples)
    assert Run.objects.filter(plan__team=team).count() == len(examples)


def test_scope_option_issues_a_read_token() -> None:
    out = run("--username", "reader", "--team", "Readers", "--scope", "read")
    assert ApiToken.objects.get(pk=int(out["TOKEN_ID"])).scope == "read"
    with pytest.raises(CommandError, match="--scope: must be one of read, read_write"):
        run("--username", "reader", "--team", "Readers", "--scope", "admin")
