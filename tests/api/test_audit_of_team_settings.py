"""The audit log also records what a team changes about itself: its name and alert
thresholds, the webhook endpoints that receive the team's events and the price feeds that publish its price
books (created, re-pointed or removed). GET /audit/ shows each with who acted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import World

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit/"


def all_entries(world: World) -> list[dict[str, Any]]:
    response = world.alice.client.get(AUDIT, {"page_size": 500})
    assert response.status_code == 200, response.content[:500]
    return list(response.json()["results"])


def test_renaming_a_team_and_changing_its_thresholds_are_audited(world: World) -> None:
    url = f"/api/v1/teams/{world.alpha.pk}/"
    body = {"name": "Alpha renamed", "alert_thresholds": {"total_usd": 0.05}}
    assert world.alice.client.patch(url, body, format="json").status_code == 200
    about_team = [
        entry
        for entry in all_entries(world)
        if entry["object_id"] == world.alpha.pk and entry["object_type"] == "team"
    ]
    assert about_team, "no audit entry records the team's change"
    newest = about_team[0]
    assert newest["actor"] == "alice" and newest["event"] == "changed"
    assert newest["changes"]["name"] == ["Alpha", "Alpha renamed"]
    assert "alert_thresholds" in newest["changes"]


def test_a_webhook_endpoint_created_repointed_and_deleted_is_audited(world: World, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    client = world.alice.client
    created = client.post(
        "/api/v1/webhooks/",
        {"team": world.alpha.pk, "url": "http://127.0.0.1:9/hook"},
        format="json",
    )
    assert created.status_code == 201, created.content
    hook = created.json()["id"]
    moved = client.patch(f"/api/v1/webhooks/{hook}/", {"url": "http://127.0.0.1:9/elsewhere"}, format="json")
    assert moved.status_code == 200, moved.content
    assert client.delete(f"/api/v1/webhooks/{hook}/").status_code == 204
    about_hook = [
        entry
        for entry in all_entries(world)
        if entry["object_id"] == hook and entry["object_type"] == "webhook"
    ]
    assert [entry["event"] for entry in reversed(about_hook)] == ["created", "changed", "deleted"]
    assert all(entry["actor"] == "alice" and entry["team"] == world.alpha.pk for entry in about_hook)
    changed = about_hook[1]
    assert changed["changes"]["url"] == ["http://127.0.0.1:9/hook", "http://127.0.0.1:9/elsewhere"]
    assert "secret" not in changed["changes"]


def create_feed(world: World, settings: Any) -> int:
    """Alice's feed "distributor" of team alpha, polled hourly from a loopback URL; its id."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    body = {
        "team": world.alpha.pk,
        "name": "distributor",
        "source": "http://127.0.0.1:9/prices.csv",
        "schedule": {"every_s": 3600},
    }
    created = world.alice.client.post("/api/v1/price-feeds/", body, format="json")
    assert created.status_code == 201, created.content
    return int(created.json()["id"])


def test_a_price_feed_created_repointed_and_deleted_is_audited(world: World, settings: Any) -> None:
    """A feed publishes the team's price books on its own, so where it reads from is an audited setting."""
    client = world.alice.client
    feed = create_feed(world, settings)
    moved = client.patch(
        f"/api/v1/price-feeds/{feed}/", {"source": "http://127.0.0.1:9/other.csv"}, format="json"
    )
    assert moved.status_code == 200, moved.content
    assert client.delete(f"/api/v1/price-feeds/{feed}/").status_code == 204
    about_feed = [
        entry
        for entry in all_entries(world)
        if entry["object_id"] == feed and entry["object_type"] == "price_feed"
    ]
    assert [entry["event"] for entry in reversed(about_feed)] == ["created", "changed", "deleted"]
    assert all(entry["actor"] == "alice" and entry["team"] == world.alpha.pk for entry in about_feed)
