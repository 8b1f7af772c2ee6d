"""Property-based tests of the whole API against its generated OpenAPI schema (schemathesis).

Every operation gets positive and negative examples (well over 1,000 requests in all), sent through the
WSGI application with a real API token of a team admin, half of them aimed at existing rows. Checks: no 5xx,
documented status codes, content types and headers, and bodies that match the schema.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.db import transaction
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api import factories as f
from tests.api import hypothesis_compat
from tests.api.conftest import World, build_world

hypothesis_compat.install()

# About a minute and a half of requests: its own suite (`./dev test-slow`), run by CI, not by `./dev test`.
pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 25
MIN_REQUESTS = 1_000
CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)
SENT = {"requests": 0, "operations": 0}


@pytest.fixture
def api_schema(db: None) -> Any:
    from drf_spectacular.generators import SchemaGenerator

    from planner.wsgi import application

    raw = SchemaGenerator().get_schema(request=None, public=True)
    return schemathesis.from_dict(
        raw,
        app=application,
        data_generation_methods=[
            schemathesis.DataGenerationMethod.positive,
            schemathesis.DataGenerationMethod.negative,
        ],
    )


schema = schemathesis.from_pytest_fixture("api_schema")


@pytest.fixture(autouse=True)
def _keep_the_test_connection() -> Any:
    """Requests sent straight to the WSGI app fire request_started/finished, whose handler closes the
    database connection, and with it the test's transaction; Django's own test client disconnects it too."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def seeded(db: None) -> dict[str, Any]:
    """A team with one of everything, and the ids that path parameters are pointed at half of the time."""
    from scenarios import services

    world: World = build_world()
    user = world.alice.user
    trio = f.scenario_trio(team=world.alpha, user=user)
    plan = f.plan_for(team=world.alpha, user=user, name="plan", trio=trio)
    first = f.insert_result(plan=plan)
    second = f.insert_result(plan=plan, scale=2.0, previous=first)
    run = services.run_request(plan=plan, user=user)
    book = services.price_book_publish(
        team=world.alpha,
        user=user,
        name="p",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.05}],
        fan_out="none",
    )
    return {
        "world": world,
        "ids": {
            "/teams/": world.alpha.pk,
            "/clusters/": trio[0].pk,
            "/models/": trio[1].pk,
            "/sites/": trio[2].pk,
            "/plans/": plan.pk,
            "/runs/": run.pk,
            "/results/": second.pk,
            "/price-books/": book.pk,
        },
        "team_pk": world.alpha.pk,
    }


def aim_at_existing_rows(case: Any, seeded: dict[str, Any]) -> None:
    params = case.path_parameters or {}
    if "team_pk" in params and isinstance(params["team_pk"], int) and params["team_pk"] % 2 == 0:
        params["team_pk"] = seeded["team_pk"]
    if "id" in params and isinstance(params["id"], int) and params["id"] % 2 == 0:
        for prefix, pk in seeded["ids"].items():
            if case.path.startswith(f"/api/v1{prefix}"):
                params["id"] = pk
    if "number" in params and isinstance(params["number"], int) and params["number"] % 2 == 0:
        params["number"] = 1


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
@pytest.mark.django_db
def test_api_conforms_to_its_schema(case: Any, seeded: dict[str, Any]) -> None:
    aim_at_existing_rows(case, seeded)
    token = seeded["world"].alice.token
    # A savepoint per request: one request's database error cannot poison the operations that follow.
    with transaction.atomic():
        response = case.call_wsgi(headers={"Authorization": f"Bearer {token}"})
    SENT["requests"] += 1
    case.validate_response(response, checks=CHECKS)


def test_enough_requests_were_generated() -> None:
    """Runs after the operations above (file order); skipped when only part of the module was selected."""
    if SENT["requests"] == 0:
        pytest.skip("the schemathesis operations did not run in this session")
    print(f"schemathesis sent {SENT['requests']} requests")
    assert SENT["requests"] >= MIN_REQUESTS, SENT
