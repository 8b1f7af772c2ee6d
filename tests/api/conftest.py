"""Personas for the API tests, each with a client authenticated by a real hashed API token.

alice: admin of team "alpha"; carol: editor on alpha; bob: viewer on alpha; mallory: admin of team "beta"
(the other team); nobody: authenticated, in no team; anonymous: no credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
