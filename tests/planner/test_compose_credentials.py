"""The services that face requests and run tasks hold only the application role's credentials.

``planner_app`` (DATABASE_URL) owns nothing, so whatever web, worker or beat is made to do cannot disable the
results' immutability trigger, truncate or alter a table (README, "Database roles"). That holds only if those
containers do not also hold the table owner's credentials or the PostgreSQL superuser's password: the owner
may disable the trigger, the superuser anything. Only ``migrate`` needs the owner, only ``postgres`` the
superuser.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.planner.test_compose import COMPOSE, example_env, interpolate, service_env


@pytest.fixture(scope="module")
def dotenv() -> dict[str, str]:
    return example_env()


@pytest.fixture(scope="module")
def compose(dotenv: dict[str, str]) -> dict[str, Any]:
    return interpolate(yaml.safe_load(COMPOSE.read_text()), dotenv)


@pytest.mark.parametrize("service", ["web", "worker", "beat"])
def test_long_running_services_hold_no_owner_or_superuser_credentials(
    compose: dict[str, Any], dotenv: dict[str, str], service: str
) -> None:
    env = service_env(compose, dotenv, service)
    owner_password = dotenv["PLANNER_OWNER_PASSWORD"]
    superuser_password = dotenv["POSTGRES_PASSWORD"]
    leaked = sorted(
        name for name, value in env.items() if owner_password in value or superuser_password in value
    )
    assert not leaked, (
        f"{service} receives the table owner's or the PostgreSQL superuser's password in {leaked}: code running "
        "in it can connect as a role that disables the results' immutability trigger"
    )


@pytest.mark.parametrize("service", ["web", "worker", "beat"])
def test_an_owner_url_left_in_dotenv_is_overridden_as_the_example_says(
    dotenv: dict[str, str], service: str
) -> None:
    """.env.example lists MIGRATE_DATABASE_URL under 'Set by docker-compose.yml from the values above (any
    value here is overridden)'. An operator who fills that line in (it is shown with its value) must not hand
    the table owner's password to web, worker and beat: compose used to override it for every service, and
    now sets it for migrate only, so the .env value reaches the others unchanged."""
    filled = {
        **dotenv,
        "MIGRATE_DATABASE_URL": f"postgres://planner_owner:{dotenv['PLANNER_OWNER_PASSWORD']}@postgres:5432/planner",
    }
    compose = interpolate(yaml.safe_load(COMPOSE.read_text()), filled)
    env = service_env(compose, filled, service)
    assert dotenv["PLANNER_OWNER_PASSWORD"] not in env.get("MIGRATE_DATABASE_URL", ""), service
