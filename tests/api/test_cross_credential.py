"""What one credential may reach through another's traces: an Idempotency-Key answer is replayed only to the
credential that was given it and never holds a secret, a feed position (``?after=``) of another team's
event reads as one that does not exist, a team's slug (its price-feed directory) is fixed, and a token makes
no token that outlives it."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken, IdempotencyKey
from scenarios import services
from scenarios.models import Event, Membership
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def token_client(user: Any, **issue: Any) -> APIClient:
    _, secret = ApiToken.issue(user=user, name=issue.pop("name", "another token"), **issue)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_an_answer_is_replayed_only_to_the_credential_that_was_given_it(world: World) -> None:
    """alice's all-teams token makes a cluster of team beta with a key; her token restricted to alpha, sending
    the same body and key, is refused (422 naming the header), not given beta's row; the first token's retry
    is answered as before."""
    Membership.objects.create(team=world.beta, user=world.alice.user, role="editor")
    alpha_only = token_client(world.alice.user, team=world.alpha)
    body = {"team": world.beta.pk, "name": "beta cluster", "document": f.CLUSTER_DOC}
    first = world.alice.client.post("/api/v1/clusters/", body, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert first.status_code == 201
    other = alpha_only.post("/api/v1/clusters/", body, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert other.status_code == 422, other.content[:300]
    assert [e["path"] for e in other.json()["errors"]] == ["Idempotency-Key"]
    assert "credential" in other.json()["errors"][0]["message"]
    retry = world.alice.client.post("/api/v1/clusters/", body, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert retry.status_code == 201 and retry["Idempotent-Replayed"] == "true"
    assert retry.json() == first.json()


def test_an_answer_that_holds_a_secret_is_not_kept_and_its_retry_says_so(world: World) -> None:
    """A new token's secret is shown once: the key's record keeps no part of it, and a retry with the key is a
    409 that says the request was answered (where the token is) instead of a second copy of the secret."""
    made = world.alice.client.post(
        "/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY="ci-token"
    )
    assert made.status_code == 201
    secret = made.json()["token"]
    record = IdempotencyKey.objects.get(user=world.alice.user, key="ci-token")
    assert secret not in str(record.response) and record.status_code == 201
    retry = world.alice.client.post(
        "/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY="ci-token"
    )
    assert retry.status_code == 409 and retry["Idempotent-Replayed"] == "true"
    assert secret not in retry.content.decode()
    message = retry.json()["errors"][0]["message"]
    assert "answered with status 201" in message and "not shown again" in message
    assert ApiToken.objects.filter(user=world.alice.user, name="ci").count() == 1


def test_another_teams_event_is_no_position_in_the_feed(world: World) -> None:
    """``?after=`` with an id of an event the caller cannot read is answered as an id that does not exist."""
    services.price_book_publish(
        team=world.alpha,
        user=None,
        name="alpha",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0}],
        fan_out="none",
    )
    alpha_event = Event.objects.filter(team=world.alpha).latest("id")
    theirs = world.mallory.client.get(f"/api/v1/events/?after={alpha_event.public_id}")
    none = world.mallory.client.get(f"/api/v1/events/?after=evt_{uuid.uuid4().hex}")
    assert none.status_code == 400
    assert (theirs.status_code, theirs.json()) == (none.status_code, none.json())
    own = world.alice.client.get(f"/api/v1/events/?after={alpha_event.public_id}")
    assert own.status_code == 200


def test_a_teams_slug_is_fixed_once_the_team_is_made(world: World) -> None:
    """It names the team's price-feed directory: renamed, the old name (and its files) could go to a new team."""
    url = f"/api/v1/teams/{world.alpha.pk}/"
    moved = world.alice.client.patch(url, {"slug": "alpha-labs"}, format="json")
    assert moved.status_code == 400 and [e["path"] for e in moved.json()["errors"]] == ["slug"]
    renamed = world.alice.client.patch(url, {"name": "Alpha Labs", "slug": "alpha"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["slug"] == "alpha"


def test_a_token_makes_no_token_that_outlives_it(world: World) -> None:
    expiry = timezone.now() + dt.timedelta(hours=1)
    ci = token_client(world.carol.user, name="ci, 1 hour", team=world.alpha, expires_at=expiry)
    later = ci.post(
        "/api/v1/tokens/",
        {"name": "forever", "team": world.alpha.pk, "expires_at": "2099-01-01T00:00:00Z"},
        format="json",
    )
    assert later.status_code == 400 and [e["path"] for e in later.json()["errors"]] == ["expires_at"]
    default = ci.post("/api/v1/tokens/", {"name": "default", "team": world.alpha.pk}, format="json")
    assert default.status_code == 201
    made = dt.datetime.fromisoformat(default.json()["expires_at"].replace("Z", "+00:00"))
    assert made <= expiry
    # the default lifetime (API_TOKEN_DEFAULT_DAYS) is cut to the making token's end
    assert ApiToken.objects.get(name="default").expires_at == expiry
