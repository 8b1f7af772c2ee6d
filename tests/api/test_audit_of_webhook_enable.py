"""Enabling a webhook endpoint again (POST /webhooks/{id}/enable/) is a team admin's change to where the team's
events go, like creating or re-pointing it: the audit log records who did it."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from integrations import dispatch
from integrations.models import Endpoint
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_enabling_a_disabled_webhook_endpoint_is_audited(world: World, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    client = world.alice.client
    created = client.post(
        "/api/v1/webhooks/", {"team": world.alpha.pk, "url": "http://127.0.0.1:9/hook"}, format="json"
    )
    assert created.status_code == 201, created.content
    hook = created.json()["id"]
    dispatch.disable(
        Endpoint.objects.filter(pk=hook), reason="by the operator", last_error="", now=timezone.now()
    )
    enabled = client.post(f"/api/v1/webhooks/{hook}/enable/")
    assert enabled.status_code == 200, enabled.content
    assert enabled.json()["enabled"] is True

    response = client.get("/api/v1/audit/", {"object_type": "webhook", "object_id": hook, "page_size": 50})
    assert response.status_code == 200, response.content[:500]
    changed = [entry for entry in response.json()["results"] if entry["event"] == "changed"]
    assert any(entry["actor"] == "alice" and "enabled" in (entry["changes"] or {}) for entry in changed), (
        f"no audit entry says alice enabled webhook {hook}: {response.json()['results']}"
    )
