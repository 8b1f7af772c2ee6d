"""The audit log: every create, change, archive and delete of scenarios, plans, price books, memberships and
tokens appears in GET /audit/ with who acted and through which token; only team admins read it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from api.models import ApiToken
from tests.api.conftest import World, no_broker  # noqa: F401  (fixture)
from tests.api.factories import CLUSTER_DOC, plan_for, scenario_trio

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit/"


def entries(world: World, **params: Any) -> list[dict[str, Any]]:
    response = world.alice.client.get(AUDIT, {"page_size": 200, **params})
    assert response.status_code == 200, response.content[:500]
    return list(response.json()["results"])


def events_of(world: World, object_type: str, object_id: int) -> list[str]:
    """The object's events, oldest first."""
    found = entries(world, object_type=object_type, object_id=object_id)
    return [entry["event"] for entry in reversed(found)]


def alice_token(world: World) -> ApiToken:
    return ApiToken.objects.get(user=world.alice.user, name="alice test token")


def test_scenario_events_with_actor_and_token(world: World) -> None:
    client = world.alice.client
    created = client.post("/api/v1/clusters/", {"name": "c", "document": CLUSTER_DOC}, format="json").json()
    url = f"/api/v1/clusters/{created['id']}/"
    assert client.patch(url, {"name": "c2"}, format="json").status_code == 200
    assert client.post(f"{url}archive/").status_code == 200
    other = client.post(
        "/api/v1/sites/", {"name": "s", "document": {"region": "quebec"}}, format="json"
    ).json()
    assert client.delete(f"/api/v1/sites/{other['id']}/").status_code == 204

    assert events_of(world, "cluster", created["id"]) == ["created", "changed", "archived"]
    assert events_of(world, "site", other["id"]) == ["created", "deleted"]
    newest = entries(world, object_type="cluster", object_id=created["id"])[0]
    token = alice_token(world)
    assert newest["actor"] == "alice" and newest["via"] == "token"
    assert newest["token"] == {"id": token.pk, "prefix": token.prefix}
    assert newest["team"] == world.alpha.pk
    assert newest["changes"]["archived_at"][0] is None
    renamed = entries(world, object_type="cluster", object_id=created["id"], action="update")[-1]
    assert renamed["changes"]["name"] == ["c", "c2"]


def test_plan_events(world: World, no_broker: None) -> None:  # noqa: F811
    client = world.alice.client
    cluster, model, site = scenario_trio(team=world.alpha, user=world.alice.user)
    body = {"name": "p", "cluster": cluster.pk, "model": model.pk, "site": site.pk}
    created = client.post("/api/v1/plans/", body, format="json")
    assert created.status_code == 201, created.content
    plan_id = created.json()["id"]
    assert client.patch(f"/api/v1/plans/{plan_id}/", {"name": "p2"}, format="json").status_code == 200
    assert client.post(f"/api/v1/plans/{plan_id}/archive/").status_code == 200
    doomed = plan_for(team=world.alpha, user=world.alice.user, name="doomed")
    assert client.delete(f"/api/v1/plans/{doomed.pk}/").status_code == 204
    assert events_of(world, "plan", plan_id) == ["created", "changed", "archived"]
    assert events_of(world, "plan", doomed.pk) == ["created", "deleted"]
    deleted = entries(world, object_type="plan", object_id=doomed.pk, action="delete")
    assert deleted[0]["actor"] == "alice" and deleted[0]["object_repr"]


def test_price_book_publish(world: World, no_broker: None) -> None:  # noqa: F811
    entry = {"kind": "accelerator", "key": "h100-sxm", "value": 18000.0}
    book = world.carol.client.post("/api/v1/price-books/", {"name": "b", "entries": [entry]}, format="json")
    assert book.status_code == 201, book.content[:300]
    found = entries(world, object_type="price_book", object_id=book.json()["id"])
    assert [(e["event"], e["actor"], e["via"]) for e in found] == [("created", "carol", "token")]


def test_membership_events(world: World) -> None:
    get_user_model().objects.create_user(username="dave", password="dave-password-1234")
    members = f"/api/v1/teams/{world.alpha.pk}/members/"
    client = world.alice.client
    added = client.post(members, {"user": "dave", "role": "viewer"}, format="json")
    assert added.status_code == 201, added.content
    member_id = added.json()["id"]
    assert client.patch(f"{members}{member_id}/", {"role": "editor"}, format="json").status_code == 200
    assert client.delete(f"{members}{member_id}/").status_code == 204
    assert events_of(world, "membership", member_id) == ["created", "changed", "deleted"]
    changed = entries(world, object_type="membership", object_id=member_id, action="update")[0]
    assert changed["changes"]["role"] == ["viewer", "editor"]


def test_token_events_and_secrets_stay_out(world: World) -> None:
    client = world.alice.client
    created = client.post("/api/v1/tokens/", {"name": "ci", "team": world.alpha.pk}, format="json").json()
    assert client.delete(f"/api/v1/tokens/{created['id']}/").status_code == 204
    assert events_of(world, "token", created["id"]) == ["created", "revoked"]
    for entry in entries(world, object_type="token"):
        assert "key_hash" not in entry["changes"]
    from auditlog.models import LogEntry

    stored = LogEntry.objects.filter(object_id=created["id"], content_type__model="apitoken")
    assert all("key_hash" not in str(row.serialized_data) for row in stored)
    # A token acting on all of alice's teams is shown to alice herself.
    mine = client.post("/api/v1/tokens/", {"name": "all teams"}, format="json").json()
    assert events_of(world, "token", mine["id"]) == ["created"]


def test_dashboard_changes_are_logged_with_the_session_user(world: World) -> None:
    browser = Client()
    browser.force_login(world.alice.user)
    assert (
        browser.post("/tokens/", {"name": "from the page", "team": "", "expires_in_days": ""}).status_code
        == 302
    )
    token = ApiToken.objects.get(name="from the page")
    found = entries(world, object_type="token", object_id=token.pk)
    assert [(e["event"], e["actor"], e["via"], e["token"]) for e in found] == [
        ("created", "alice", "session", None)
    ]


def test_only_team_admins_read_their_teams_entries(world: World) -> None:
    world.alice.client.post("/api/v1/clusters/", {"name": "c", "document": CLUSTER_DOC}, format="json")
    assert world.carol.client.get(AUDIT).status_code == 403  # editor
    assert world.bob.client.get(AUDIT).status_code == 403  # viewer
    assert world.nobody.client.get(AUDIT).status_code == 403
    assert world.anonymous.get(AUDIT).status_code == 401
    beta_view = world.mallory.client.get(AUDIT).json()["results"]
    assert all(entry["team"] != world.alpha.pk for entry in beta_view)
    assert any(entry["object_type"] == "cluster" for entry in entries(world, team=world.alpha.pk))
    assert world.alice.client.get(AUDIT, {"team": world.beta.pk}).json()["results"] == []


@pytest.mark.django_db(transaction=True)
def test_entries_survive_a_flush_of_the_test_database(world: World) -> None:
    """Audit rows reference users (actor) and content types: a committed test's flush must still work."""
    world.alice.client.post("/api/v1/clusters/", {"name": "c", "document": CLUSTER_DOC}, format="json")
    from auditlog.models import LogEntry

    assert LogEntry.objects.filter(actor=world.alice.user).exists()


def test_requests_leave_no_audit_receiver_behind(world: World) -> None:
    """Each request's audit context disconnects its signal receiver when it ends (none accumulate)."""
    from django.db.models.signals import pre_save

    browser = Client()
    browser.force_login(world.alice.user)
    world.alice.client.get("/api/v1/plans/")
    browser.get("/tokens/")
    before = len(pre_save.receivers)
    for number in range(3):
        world.alice.client.post(
            "/api/v1/clusters/", {"name": f"c{number}", "document": CLUSTER_DOC}, format="json"
        )
        browser.post("/tokens/", {"name": f"t{number}", "team": "", "expires_in_days": ""})
    assert len(pre_save.receivers) == before
