"""What members read of their team's settings and of the global books, and no more.

* An endpoint's URL is shown whole to the team's admins only: chat services' incoming-webhook URLs carry their
  credential in the path, and every member (a viewer too) reads the endpoint list and the event feed.
* A global price book, which every team reads, does not name the operator account that published it."""

from __future__ import annotations

from typing import Any

import pytest

from integrations import dispatch
from integrations.models import Endpoint
from scenarios.models import Event
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

SECRET_URL = "http://127.0.0.1:9/services/T000/B000/XXXXXXXXXXXXXXXX?token=abc"


def test_viewers_see_the_scheme_and_host_and_admins_the_whole_url(world: World, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    made = world.alice.client.post(
        "/api/v1/webhooks/", {"team": world.alpha.pk, "url": SECRET_URL}, format="json"
    )
    assert made.status_code == 201, made.content
    hook = made.json()["id"]
    assert made.json()["url"] == SECRET_URL
    assert world.alice.client.get(f"/api/v1/webhooks/{hook}/").json()["url"] == SECRET_URL
    for member in (world.bob.client, world.carol.client):  # viewer, editor
        shown = member.get(f"/api/v1/webhooks/{hook}/").json()["url"]
        assert shown == "http://127.0.0.1:9/…", shown
        listed = member.get("/api/v1/webhooks/").json()["results"]
        assert [row["url"] for row in listed] == ["http://127.0.0.1:9/…"]


def test_the_disabled_event_names_the_host_only(world: World, settings: Any) -> None:
    from django.utils import timezone

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    made = world.alice.client.post(
        "/api/v1/webhooks/", {"team": world.alpha.pk, "url": SECRET_URL}, format="json"
    )
    endpoint = Endpoint.objects.filter(pk=made.json()["id"])
    assert dispatch.disable(endpoint, reason="test", last_error="refused", now=timezone.now()) == 1
    event = Event.objects.get(kind="webhook.disabled", team=world.alpha)
    assert event.payload["url"] == "http://127.0.0.1:9/…"
    assert "XXXX" not in str(world.bob.client.get("/api/v1/events/").json())


def test_url_origin_keeps_scheme_host_and_port() -> None:
    assert dispatch.url_origin("https://hooks.slack.com/services/T0/B0/X") == "https://hooks.slack.com/…"
    assert dispatch.url_origin("https://example.com:8443/a?b=c") == "https://example.com:8443/…"
    assert dispatch.url_origin("not a url") == "…"


def test_a_global_book_does_not_name_the_operator_account_that_published_it(world: World) -> None:
    from scenarios import services

    services.price_book_publish(
        team=None,
        user=world.alice.user,
        name="list prices",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 30000.0}],
        fan_out="none",
    )
    listed = world.mallory.client.get("/api/v1/price-books/").json()["results"]
    assert [book["created_by"] for book in listed if book["team"] is None] == [None]
