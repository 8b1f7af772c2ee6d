"""``manage.py create_access``: a user, a team and an API token in one line, for scripts and first setups.

    python manage.py create_access --username alice --team "ML infra" [--role admin]
        [--password-stdin] [--token-name cli] [--expires-days 30] [--scope read] [--json]

An existing user (by user name) and an existing team (by slug, from ``--team-slug`` or the slugified
``--team``) are reused, so running it again issues one more token and changes nothing else (except the
role when ``--role`` is given, and the password when ``--password-stdin`` is). A new user gets a generated
password unless one is piped in; a new team gets the user as its admin. Teams and memberships are made by
``scenarios.services``; the token follows the API's rules (``web.views.tokens.check_new_token``) and is made
by ``ApiToken.issue``.

Output on stdout, one ``KEY=value`` line each (shell-safe: no value has spaces or quotes), or one JSON object
with ``--json``: ``USERNAME``, ``TEAM`` (the slug), ``ROLE``, ``PASSWORD`` (only when generated; a password
read from stdin is never printed), ``TOKEN`` (the secret, shown this once) and ``TOKEN_ID``. Anything
wrong is a ``CommandError`` naming the option, with nothing stored.
"""

from __future__ import annotations

import json
import secrets
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Field
from django.utils import timezone
from django.utils.text import slugify

from api.models import SCOPE_CHOICES, SCOPE_READ_WRITE, ApiToken
from scenarios import services
from scenarios.models import ROLE_ADMIN, ROLE_CHOICES, Membership, Team
from web.views.tokens import MAX_EXPIRES_DAYS, check_new_token

ROLES = tuple(value for value, _ in ROLE_CHOICES)
# Serializer field of the token rules -> the option that set it.
TOKEN_OPTIONS = {
    "name": "--token-name",
    "team": "--team",
    "expires_at": "--expires-days",
    "scope": "--scope",
    "": "--username",
}
SCOPES = tuple(value for value, _ in SCOPE_CHOICES)


def _messages(exc: ValidationError) -> str:
    return "; ".join(str(message) for message in exc.messages)


class Command(BaseCommand):
    help = "Create (or reuse) a user and a team, and issue an API token; prints KEY=value lines (or --json)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", required=True, help="the user's name (reused when it exists)")
        parser.add_argument("--team", required=True, help="the team's name (reused when its slug exists)")
        parser.add_argument("--team-slug", default=None, help="the team's slug (default: the slugified name)")
        parser.add_argument(
            "--role",
            default=None,
            help=f"the user's role on the team: {', '.join(ROLES)} (default: admin for a new member; an "
            "existing member keeps theirs)",
        )
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the user's password from stdin (first line) instead of generating one for a new user",
        )
        parser.add_argument("--token-name", default="cli", help="the token's name (default: cli)")
        parser.add_argument(
            "--expires-days",
            default=None,
            help=f"days until the token expires (1-{MAX_EXPIRES_DAYS}; default: API_TOKEN_DEFAULT_DAYS)",
        )
        parser.add_argument(
            "--scope",
            default=SCOPE_READ_WRITE,
            help=f"what the token may do: {', '.join(SCOPES)} (default: {SCOPE_READ_WRITE}; read only reads)",
        )
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object instead of KEY=value lines"
        )
        parser.add_argument(
            "--example-plans",
            action="store_true",
            help="also give the team a plan for each scenario of examples/ (the published runs) and queue a "
            "solve of each, so that a first comparison needs no typing; plans whose name the team already "
            "uses are skipped",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username = self._username(options["username"])
        team_name, slug = self._team(options["team"], options["team_slug"])
        role = options["role"]
        if role is not None and role not in ROLES:
            raise CommandError(f"--role: must be one of {', '.join(ROLES)}, not '{role}'")
        expires_days = self._expires_days(options["expires_days"])
        if options["scope"] not in SCOPES:
            raise CommandError(f"--scope: must be one of {', '.join(SCOPES)}, not '{options['scope']}'")
        password = self._read_password(username) if options["password_stdin"] else None

        with transaction.atomic():
            user, generated = self._user(username, password)
            team, role = self._membership(user, team_name, slug, role)
            token, secret = self._token(user, team, options["token_name"], expires_days, options["scope"])
            examples = self._example_plans(team, user) if options["example_plans"] else None

        fields: dict[str, Any] = {"USERNAME": user.get_username(), "TEAM": team.slug, "ROLE": role}
        if generated is not None:
            fields["PASSWORD"] = generated
        fields.update(TOKEN=secret, TOKEN_ID=token.pk)
        if examples is not None:
            fields["EXAMPLE_PLANS"] = examples
        if options["json"]:
            self.stdout.write(json.dumps({key.lower(): value for key, value in fields.items()}))
        else:
            for key, value in fields.items():
                self.stdout.write(f"{key}={value}")

    def _example_plans(self, team: Team, user: Any) -> int:
        """A plan per scenario document of ``examples/`` (named by its ``name``, else its file), each with a
        solve queued (sent to the workers when the transaction commits). Returns how many were created."""
        from django.conf import settings

        from scenarios.models import TRIGGER_USER, Plan
        from solvers.cli import parse_text
        from web.plan_forms import Refused, create_plan

        folder = Path(settings.BASE_DIR) / "examples"
        files = sorted(folder.glob("*.yaml"))
        if not files:
            raise CommandError(f"--example-plans: no scenario files in {folder}")
        taken = set(Plan.objects.filter(team=team, archived_at__isnull=True).values_list("name", flat=True))
        created = 0
        for path in files:
            document = parse_text(path.read_text())
            name = str(document.get("name") or path.stem)
            if name in taken:
                continue
            try:
                plan = create_plan(team=team, user=user, name=name, document=document)
            except Refused as exc:
                raise CommandError(f"--example-plans: {path.name}: {exc}") from None
            services.run_request(plan=plan, user=user, trigger=TRIGGER_USER, kind="solve")
            taken.add(name)
            created += 1
        return created

    # --- arguments (checked before anything is stored) ------------------------------------------------

    def _username(self, raw: str) -> str:
        field = get_user_model()._meta.get_field(get_user_model().USERNAME_FIELD)
        assert isinstance(field, Field)
        try:
            return str(field.clean(raw, None))
        except ValidationError as exc:
            raise CommandError(f"--username: {_messages(exc)}") from None

    def _team(self, name: str, slug: str | None) -> tuple[str, str]:
        name = name.strip()
        name_field = Team._meta.get_field("name")
        slug_field = Team._meta.get_field("slug")
        try:
            name_field.clean(name, None)
        except ValidationError as exc:
            raise CommandError(f"--team: {_messages(exc)}") from None
        option = "--team-slug" if slug is not None else "--team"
        slug = slug if slug is not None else slugify(name)
        if not slug:
            raise CommandError("--team: the name gives an empty slug; pass --team-slug")
        try:
            slug_field.clean(slug, None)
        except ValidationError as exc:
            raise CommandError(f"{option}: {_messages(exc)}") from None
        return name, slug

    def _expires_days(self, raw: str | None) -> int | None:
        if raw is None:
            return None
        try:
            days = int(raw)
        except ValueError:
            raise CommandError(f"--expires-days: must be a whole number of days, not '{raw}'") from None
        if not 1 <= days <= MAX_EXPIRES_DAYS:
            raise CommandError(f"--expires-days: must be between 1 and {MAX_EXPIRES_DAYS}")
        return days

    def _read_password(self, username: str) -> str:
        line = sys.stdin.readline()
        password = line.rstrip("\r\n")
        if not password:
            raise CommandError("--password-stdin: no password on stdin")
        user_model = get_user_model()
        try:
            validate_password(password, user=user_model(**{user_model.USERNAME_FIELD: username}))
        except ValidationError as exc:
            raise CommandError(f"--password-stdin: {_messages(exc)}") from None
        return password

    # --- rows (inside one transaction: an error stores nothing) ---------------------------------------

    def _user(self, username: str, password: str | None) -> tuple[Any, str | None]:
        """The user (created or reused) and the password generated for it (None when none was)."""
        user_model = get_user_model()
        user = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: username}).first()
        generated = None
        if user is None:
            if password is None:
                password = generated = secrets.token_urlsafe(18)
            user = user_model._default_manager.create_user(username=username, password=password)
        elif password is not None:
            user.set_password(password)
            user.save(update_fields=["password"])
        return user, generated

    def _membership(self, user: Any, name: str, slug: str, role: str | None) -> tuple[Team, str]:
        """The team (created with the user as admin, or reused) and the user's role on it."""
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            team = services.team_create(name=name, slug=slug, owner=user)
            return team, ROLE_ADMIN
        found = Membership.objects.filter(team=team, user=user).values_list("role", "accepted_at").first()
        if found is not None and found[1] is not None and role in (None, found[0]):
            return team, found[0]
        # the operator enrols: an invitation the user has not answered is accepted
        wanted = role or (found[0] if found is not None else ROLE_ADMIN)
        return team, services.membership_enrol(team=team, user=user, role=wanted).role

    def _token(
        self, user: Any, team: Team, name: str, expires_days: int | None, scope: str
    ) -> tuple[ApiToken, str]:
        expires_at = None if expires_days is None else timezone.now() + timedelta(days=expires_days)
        valid, errors = check_new_token(
            user=user, name=name, team_id=team.pk, expires_at=expires_at, scope=scope
        )
        if valid is None:
            field, messages = next(iter(errors.items()))
            raise CommandError(f"{TOKEN_OPTIONS.get(field, '--token-name')}: {'; '.join(messages)}")
        return ApiToken.issue(user=user, **valid)
