"""Migrations 0014-0016 go back to 0013 on the data the new code writes, and what the older code then reads
means what it meant: under 0013 every membership row is in force, so an invitation nobody accepted must not
turn into a member of the team on the way back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scenarios import services
from scenarios.models import Run
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("scenarios", "0013_price_keys_hold_a_site_name")


@pytest.fixture
def back_to_0013() -> Iterator[MigrationExecutor]:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("scenarios")
    try:
        yield executor
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)


def test_going_back_to_0013_does_not_turn_an_unanswered_invitation_into_a_membership(
    back_to_0013: MigrationExecutor,
) -> None:
    owner = get_user_model().objects.create_user(username="owner", password="long-enough-password-123")
    dave = get_user_model().objects.create_user(username="dave", password="long-enough-password-123")
    team = services.team_create(name="Alpha", slug="alpha", owner=owner)
    services.membership_invite(team=team, user=dave, role="admin")

    back_to_0013.migrate([BEFORE])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT role FROM scenarios_membership WHERE team_id = %s AND user_id = %s", [team.pk, dave.pk]
        )
        rows = cursor.fetchall()
    assert rows == [], f"dave, invited only, is a member under 0013: {rows}"


def test_going_back_to_0013_with_a_failed_automatic_run_and_its_retry(
    back_to_0013: MigrationExecutor,
) -> None:
    plan = make_plan(team=make_team())
    for status in ("failed", "queued"):  # the nightly re-check queued the inputs again after a failure
        Run.objects.create(
            plan=plan, team=plan.team, trigger="schedule", status=status, input_hash="a" * 64, price_book=None
        )

    back_to_0013.migrate([BEFORE])  # must not fail on the rows the new code writes
