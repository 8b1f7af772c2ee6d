"""Personas for the API tests, each with a client authenticated by a real hashed API token.

alice: admin of team "alpha"; carol: editor on alpha; bob: viewer on alpha; mallory: admin of team "beta"
(the other team); nobody: authenticated, in no team; anonymous: no credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from api.models import ApiToken


@dataclass
class Persona:
    name: str
    user: Any
    client: APIClient
    token: str


def _persona(name: str) -> Persona:
    user = get_user_model().objects.create_user(username=name, password=f"{name}-password-1234")
    _, secret = ApiToken.issue(user=user, name=f"{name} test token")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return Persona(name=name, user=user, client=client, token=secret)


@dataclass
class World:
    alpha: Any
    beta: Any
    alice: Persona
    carol: Persona
    bob: Persona
    mallory: Persona
    nobody: Persona
    anonymous: APIClient


def build_world() -> World:
    from scenarios.models import Membership, Team

    alpha = Team.objects.create(name="Alpha", slug="alpha")
    beta = Team.objects.create(name="Beta", slug="beta")
    alice, carol, bob, mallory, nobody = (_persona(n) for n in ("alice", "carol", "bob", "mallory", "nobody"))
    Membership.objects.create(team=alpha, user=alice.user, role="admin")
    Membership.objects.create(team=alpha, user=carol.user, role="editor")
    Membership.objects.create(team=alpha, user=bob.user, role="viewer")
    Membership.objects.create(team=beta, user=mallory.user, role="admin")
    return World(alpha, beta, alice, carol, bob, mallory, nobody, APIClient())


@pytest.fixture
def world(db: None) -> World:
    return build_world()


T = TypeVar("T")


def shared_rows(django_db_blocker: Any, build: Callable[[], T]) -> Iterator[T]:
    """Rows built once for a whole module, for module-scoped fixtures of non-transactional tests.

    ``build`` runs inside a transaction that stays open until the module ends and is then rolled back, so
    nothing is ever committed. Each test's own transaction (pytest-django's ``db``) nests inside it as a
    savepoint and is rolled back to it, so every test starts from exactly the rows ``build`` made, as if
    they had been built for it alone. Not for ``transactional_db`` tests (they commit and flush)."""
    from django.db import connection, transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            rows = build()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield rows
    finally:
        with django_db_blocker.unblock():
            assert connection.in_atomic_block, "the module's transaction was closed by a test"
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def with_fresh_clients(world: World) -> World:
    """The same users and tokens with new API clients (no cookies or credentials carried between tests)."""

    def fresh(persona: Persona) -> Persona:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {persona.token}")
        return replace(persona, client=client)

    return replace(
        world,
        alice=fresh(world.alice),
        carol=fresh(world.carol),
        bob=fresh(world.bob),
        mallory=fresh(world.mallory),
        nobody=fresh(world.nobody),
        anonymous=APIClient(),
    )


@pytest.fixture(autouse=True)
def _no_failed_token_throttle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests send wrong tokens on purpose from one address, across the whole run: the failed-token throttle
    (api.throttling.FailedTokenThrottle) would answer later tests 429. tests/api/test_brute_force.py
    restores the configured rate to test it."""
    from api.throttling import FailedTokenThrottle

    monkeypatch.setattr(FailedTokenThrottle, "THROTTLE_RATES", {"token_failure": None})


@pytest.fixture
def no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing goes to a broker: runs and sweeps are executed in process by the test (tests.api.inprocess)."""
    from scenarios.jobs import requests
    from scenarios.runs import execute

    monkeypatch.setattr(execute, "enqueue_runs", lambda **_: 0)
    monkeypatch.setattr(execute, "send_starts", lambda run_ids: 0)
    monkeypatch.setattr(requests, "send_start", lambda run_id: None)
