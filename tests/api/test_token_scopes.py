"""Token lifetimes (API_TOKEN_DEFAULT_DAYS) and scopes (read-only tokens refused on every unsafe method)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from tests.api.conftest import World
from tests.api.factories import CLUSTER_DOC, plan_for

pytestmark = pytest.mark.django_db


def client_for(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_new_token_gets_the_default_lifetime(world: World) -> None:
    created = world.alice.client.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["scope"] == "read_write"
    token = ApiToken.objects.get(pk=body["id"])
    expected = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    assert token.expires_at is not None and abs(token.expires_at - expected) < timedelta(minutes=1)
    given = (timezone.now() + timedelta(days=3)).isoformat()
    short = world.alice.client.post("/api/v1/tokens/", {"name": "short", "expires_at": given}, format="json")
    short_expiry = ApiToken.objects.get(pk=short.json()["id"]).expires_at
    assert short_expiry is not None
    assert abs(short_expiry - (timezone.now() + timedelta(days=3))) < timedelta(minutes=1)


@override_settings(API_TOKEN_DEFAULT_DAYS=0)
def test_no_default_lifetime_when_the_setting_is_zero(world: World) -> None:
    _, secret = ApiToken.issue(user=world.alice.user, name="made under the setting")  # no end either
    created = client_for(secret).post("/api/v1/tokens/", {"name": "forever"}, format="json")
    assert ApiToken.objects.get(pk=created.json()["id"]).expires_at is None
    # made with a token that ends, the new one ends with it (a token makes no token that outlives it)
    capped = world.alice.client.post("/api/v1/tokens/", {"name": "capped"}, format="json")
    alice_token = ApiToken.objects.get(name="alice test token")
    assert ApiToken.objects.get(pk=capped.json()["id"]).expires_at == alice_token.expires_at


def test_an_expired_token_is_401(world: World) -> None:
    token, secret = ApiToken.issue(user=world.alice.user, name="old")
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client_for(secret).get("/api/v1/teams/").status_code == 401


def test_existing_tokens_get_the_default_lifetime_from_the_upgrade(world: World) -> None:
    """Migration 0002: a token made before lifetimes keeps working and expires the default time later."""
    import importlib

    migration = importlib.import_module("api.migrations.0002_token_scope_and_lifetime")
    ApiToken.objects.filter(user=world.bob.user).update(expires_at=None)
    revoked, _ = ApiToken.issue(user=world.bob.user, name="gone")
    ApiToken.objects.filter(pk=revoked.pk).update(expires_at=None, revoked_at=timezone.now())
    migration.give_existing_tokens_the_default_lifetime(apps, None)
    token = ApiToken.objects.get(user=world.bob.user, name="bob test token")
    expected = timezone.now() + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    assert token.expires_at is not None and abs(token.expires_at - expected) < timedelta(minutes=1)
    assert ApiToken.objects.get(pk=revoked.pk).expires_at is None  # revoked: left alone
    assert world.bob.client.get("/api/v1/teams/").status_code == 200


@pytest.fixture
def reader(world: World) -> APIClient:
    """A read token of alice, an admin: her role would allow every write."""
    created = world.alice.client.post("/api/v1/tokens/", {"name": "read", "scope": "read"}, format="json")
    assert created.status_code == 201 and created.json()["scope"] == "read"
    return client_for(created.json()["token"])


def test_a_read_token_reads(world: World, reader: APIClient) -> None:
    plan = plan_for(team=world.alpha, user=world.alice.user, name="p")
    for path in ("/api/v1/plans/", f"/api/v1/plans/{plan.pk}/", "/api/v1/clusters/", "/api/v1/tokens/"):
        assert reader.get(path).status_code == 200, path


def test_a_read_token_is_refused_every_write(world: World, reader: APIClient) -> None:
    plan = plan_for(team=world.alpha, user=world.alice.user, name="p")
    attempts: list[tuple[str, str, Any]] = [
        ("post", "/api/v1/clusters/", {"name": "c", "document": CLUSTER_DOC}),
        ("patch", f"/api/v1/plans/{plan.pk}/", {"name": "renamed"}),
        ("post", f"/api/v1/plans/{plan.pk}/run/", None),
        ("post", f"/api/v1/plans/{plan.pk}/archive/", None),
        ("delete", f"/api/v1/plans/{plan.pk}/", None),
        ("post", "/api/v1/tokens/", {"name": "escalate", "scope": "read_write"}),
        ("post", f"/api/v1/teams/{world.alpha.pk}/members/", {"username": "bob", "role": "admin"}),
    ]
    for method, path, body in attempts:
        response = getattr(reader, method)(path, body, format="json")
        assert response.status_code == 403, (method, path, response.status_code)
        assert "scope is read" in response.json()["detail"]
    plan.refresh_from_db()
    assert plan.name == "p" and plan.archived_at is None and not plan.runs.exists()


def test_a_read_token_may_solve(reader: APIClient) -> None:
    """/solve/ stores nothing, so a read token may use it."""
    from tests.api.factories import ECONOMICS, MODEL_DOC, SITE_DOC, TRAINING

    document = {
        "schema_version": 1,
        "model": MODEL_DOC,
        "cluster": CLUSTER_DOC,
        "site": SITE_DOC,
        "training": TRAINING,
        "economics": ECONOMICS,
    }
    assert reader.post("/api/v1/solve/", document, format="json").status_code == 200


def test_scope_is_validated(world: World) -> None:
    response = world.alice.client.post("/api/v1/tokens/", {"name": "x", "scope": "admin"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "scope"
