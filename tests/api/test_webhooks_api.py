"""/api/v1/webhooks/: team admins write, members read, other teams see 404; the secret appears once; private
addresses are refused naming ``url``; rotation, enable, deliveries with attempts, redelivery."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from integrations import dispatch
from integrations.models import Delivery, Endpoint
from scenarios import events
from tests.api import factories as f
from tests.api.conftest import World
from tests.integrations.conftest import Receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhook_settings")]


@pytest.fixture
def webhook_settings(settings: Any) -> Any:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.WEBHOOK_TIMEOUT_S = 0.5
    return settings


@pytest.fixture
def receiver() -> Any:
    rx = Receiver()
    rx.start()
    yield rx
    rx.stop()


def create(world: World, url: str, **body: Any) -> Any:
    return world.alice.client.post(
        "/api/v1/webhooks/", {"team": world.alpha.pk, "url": url, **body}, format="json"
    )


def paths(response: Any) -> set[str]:
    return {e["path"] for e in response.json()["errors"]}


def test_an_admin_subscribes_and_the_secret_is_shown_once(world: World, receiver: Receiver) -> None:
    response = create(world, receiver.url, event_kinds=["result.stored"], thresholds={"total_usd": 0.02})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_")
    assert body["event_kinds"] == ["result.stored"] and body["thresholds"] == {"total_usd": 0.02}
    assert body["enabled"] is True and body["failure_limit"] == 10 and body["batch_size"] == 1
    detail = world.alice.client.get(f"/api/v1/webhooks/{body['id']}/")
    listed = world.bob.client.get("/api/v1/webhooks/")
    assert detail.status_code == 200 and listed.status_code == 200
    assert body["secret"] not in detail.content.decode() and "secret" not in detail.json()
    assert [row["id"] for row in listed.json()["results"]] == [body["id"]]
    assert Endpoint.objects.get(pk=body["id"]).secret == body["secret"]  # stored so that it can sign


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://localhost/", "ftp://x.test/"],
)
def test_private_addresses_are_refused_naming_url(world: World, settings: Any, url: str) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    response = create(world, url)
    assert response.status_code == 400 and "url" in paths(response), response.content
    assert not Endpoint.objects.exists()


def test_bad_filters_are_refused_with_their_path(world: World, receiver: Receiver) -> None:
    other_plan = f.plan_for(team=world.beta, user=world.mallory.user, name="theirs")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"event_kinds": ["nope"]}, "event_kinds"),
        ({"thresholds": {"mfu": 0.1}}, "thresholds"),
        ({"thresholds": {"total_usd": 0}}, "thresholds"),
        ({"plan": other_plan.pk}, "plan"),
        ({"batch_size": 0}, "batch_size"),
        ({"failure_limit": 0}, "failure_limit"),
    ]
    for body, path in cases:
        response = create(world, receiver.url, **body)
        assert response.status_code == 400, (body, response.content)
        assert any(p.startswith(path) for p in paths(response)), (body, response.json())


def test_roles_and_other_teams(world: World, receiver: Receiver) -> None:
    hook = create(world, receiver.url).json()["id"]
    base = f"/api/v1/webhooks/{hook}/"
    writes = [
        ("patch", base, {"description": "x"}),
        ("post", f"{base}rotate-secret/", {}),
        ("post", f"{base}enable/", None),
        ("delete", base, None),
    ]
    for persona, expected in (("bob", 403), ("carol", 403), ("mallory", 404), ("nobody", 404)):
        client = getattr(world, persona).client
        for method, path, body in writes:
            response = getattr(client, method)(path, body, format="json")
            assert response.status_code == expected, (persona, method, path, response.content)
    for persona, expected in (("bob", 200), ("carol", 200), ("mallory", 404), ("nobody", 404)):
        client = getattr(world, persona).client
        assert client.get(base).status_code == expected
        assert client.get(f"{base}deliveries/").status_code == expected
    assert world.anonymous.get(base).status_code == 401
    assert (
        world.carol.client.post(
            "/api/v1/webhooks/", {"team": world.alpha.pk, "url": receiver.url}, format="json"
        ).status_code
        == 403
    )
    refused = world.mallory.client.post(
        "/api/v1/webhooks/", {"team": world.alpha.pk, "url": receiver.url}, format="json"
    )
    assert refused.status_code == 400 and "team" in paths(refused)
    assert world.mallory.client.get("/api/v1/webhooks/").json()["results"] == []
    assert Endpoint.objects.get(pk=hook).description == ""


def test_patch_changes_only_what_it_names_and_rechecks_the_url(
    world: World, receiver: Receiver, settings: Any
) -> None:
    hook = create(world, receiver.url, event_kinds=["run.failed"], batch_size=5).json()["id"]
    response = world.alice.client.patch(f"/api/v1/webhooks/{hook}/", {"description": "ops"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["event_kinds"] == ["run.failed"] and response.json()["batch_size"] == 5
    refused = world.alice.client.patch(
        f"/api/v1/webhooks/{hook}/", {"url": "http://169.254.169.254/"}, format="json"
    )
    assert refused.status_code == 400 and "url" in paths(refused)
    assert Endpoint.objects.get(pk=hook).url == receiver.url


def test_rotate_enable_deliveries_and_redeliver(world: World, receiver: Receiver) -> None:
    created = create(world, receiver.url).json()
    hook, first_secret = created["id"], created["secret"]
    rotated = world.alice.client.post(f"/api/v1/webhooks/{hook}/rotate-secret/", {}, format="json")
    assert rotated.status_code == 200, rotated.content
    new_secret = rotated.json()["secret"]
    assert new_secret.startswith("whsec_") and new_secret != first_secret
    expires = Endpoint.objects.get(pk=hook).previous_secret_expires_at
    assert expires is not None and abs(expires - timezone.now() - timedelta(hours=24)) < timedelta(minutes=1)
    receiver.secrets = [new_secret]

    row = events.event(kind="price_book.published", team_id=world.alpha.pk, payload={"n": 1})
    events.record([row])
    receiver.mode = "error"
    dispatch.run_once()
    listed = world.bob.client.get(f"/api/v1/webhooks/{hook}/deliveries/")
    assert listed.status_code == 200
    [delivery] = listed.json()["results"]
    assert delivery["status"] == "pending" and delivery["webhook_id"] == f"evt_{row.uid.hex}"
    assert delivery["event_ids"] == [f"evt_{row.uid.hex}"]
    [attempt] = delivery["attempt_log"]
    assert attempt["status_code"] == 500 and attempt["error"] == "HTTP 500" and not attempt["succeeded"]
    assert len(attempt["response_excerpt"]) <= 1024

    receiver.mode = "ok"
    redeliver = f"/api/v1/webhooks/{hook}/deliveries/{delivery['id']}/redeliver/"
    assert world.bob.client.post(redeliver).status_code == 403
    assert world.mallory.client.post(redeliver).status_code == 404
    accepted = world.alice.client.post(redeliver)
    assert accepted.status_code == 202, accepted.content
    dispatch.deliver_due()
    assert receiver.accepted[f"evt_{row.uid.hex}"] == 1
    after = world.alice.client.get(f"/api/v1/webhooks/{hook}/deliveries/").json()["results"][0]
    assert after["status"] == "delivered" and [a["manual"] for a in after["attempt_log"]] == [False, True]
    assert world.alice.client.post(f"/api/v1/webhooks/{hook}/deliveries/999999/redeliver/").status_code == 404

    Endpoint.objects.filter(pk=hook).update(enabled=False, consecutive_failures=10, disabled_reason="x")
    conflict = world.alice.client.post(redeliver)
    assert conflict.status_code == 409 and conflict.json()["errors"]
    enabled = world.alice.client.post(f"/api/v1/webhooks/{hook}/enable/")
    assert enabled.status_code == 200
    assert enabled.json()["enabled"] is True and enabled.json()["consecutive_failures"] == 0
    assert world.alice.client.delete(f"/api/v1/webhooks/{hook}/").status_code == 204
    assert not Delivery.objects.exists()


def test_a_plan_filter_names_one_of_the_teams_plans(world: World, receiver: Receiver) -> None:
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="watched")
    response = create(world, receiver.url, plan=plan.pk)
    assert response.status_code == 201, response.content
    assert response.json()["plan"] == plan.pk
    assert Endpoint.objects.get(pk=response.json()["id"]).plan_id == plan.pk
    cleared = world.alice.client.patch(
        f"/api/v1/webhooks/{response.json()['id']}/", {"plan": None}, format="json"
    )
    assert cleared.status_code == 200 and cleared.json()["plan"] is None
