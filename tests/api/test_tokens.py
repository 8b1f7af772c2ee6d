"""Hashed API tokens: shown once, stored as a hash, revocable, and what 401 means."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from api.models import ApiToken
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_token_secret_is_shown_once_and_only_its_hash_is_stored(world: World) -> None:
    response = world.alice.client.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201, response.content
    secret = response.json()["token"]
    assert secret.startswith("pln_") and len(secret) > 40
    row = ApiToken.objects.get(pk=response.json()["id"])
    assert row.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {row.name, row.prefix, row.key_hash}
    fetched = world.alice.client.get(f"/api/v1/tokens/{row.pk}/").json()
    assert "token" not in fetched and fetched["prefix"] == secret[:8]

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/teams/").status_code == 200


def test_revoked_token_is_refused_with_401(world: World) -> None:
    created = world.carol.client.post("/api/v1/tokens/", {"name": "tool"}, format="json").json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {created['token']}")
    assert client.get("/api/v1/teams/").status_code == 200
    assert world.carol.client.delete(f"/api/v1/tokens/{created['id']}/").status_code == 204
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header", ["Bearer pln_not-a-real-token", "Bearer", "Bearer a b", "Token \u00e9t\u00e9", "bearer "]
)
def test_bad_credentials_are_401(world: World, header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get("/api/v1/teams/").status_code == 401


def test_anonymous_is_401_not_403(world: World) -> None:
    response = world.anonymous.get("/api/v1/plans/")
    assert response.status_code == 401
    assert response.json()["errors"] == []


def test_team_admin_revokes_a_members_team_token_but_not_a_personal_one(world: World) -> None:
    team_token = world.carol.client.post(
        "/api/v1/tokens/", {"name": "alpha only", "team": world.alpha.pk}, format="json"
    ).json()
    personal = world.carol.client.post("/api/v1/tokens/", {"name": "mine"}, format="json").json()
    assert world.alice.client.get(f"/api/v1/tokens/{personal['id']}/").status_code == 404
    assert world.bob.client.delete(f"/api/v1/tokens/{team_token['id']}/").status_code == 404
    assert world.mallory.client.delete(f"/api/v1/tokens/{team_token['id']}/").status_code == 404
    assert world.alice.client.delete(f"/api/v1/tokens/{team_token['id']}/").status_code == 204
    assert ApiToken.objects.get(pk=team_token["id"]).revoked_at is not None
    assert ApiToken.objects.get(pk=personal["id"]).revoked_at is None


def test_team_restricted_token_sees_only_its_team(world: World) -> None:
    from scenarios.models import Membership

    Membership.objects.create(team=world.beta, user=world.carol.user, role="viewer")
    created = world.carol.client.post(
        "/api/v1/tokens/", {"name": "beta only", "team": world.beta.pk}, format="json"
    ).json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created['token']}")
    teams = client.get("/api/v1/teams/").json()["results"]
    assert [t["slug"] for t in teams] == ["beta"]
    assert [t["slug"] for t in world.carol.client.get("/api/v1/teams/").json()["results"]] == [
        "alpha",
        "beta",
    ]


def test_token_for_a_team_of_someone_else_is_400(world: World) -> None:
    response = world.carol.client.post("/api/v1/tokens/", {"name": "x", "team": world.beta.pk}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "team"
