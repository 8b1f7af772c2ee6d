"""Entries of the audit log (``GET /audit/``): who did what to which object, through which token."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

# django-auditlog's action numbers.
ACTIONS = {0: "create", 1: "update", 2: "delete"}
# The content types the API shows, by model name, and the name the API gives them.
OBJECT_TYPES = {
    "clusterscenario": "cluster",
    "modelscenario": "model",
    "sitescenario": "site",
    "plan": "plan",
    "pricebook": "price_book",
    "membership": "membership",
    "apitoken": "token",
    "team": "team",
    "endpoint": "webhook",
    "pricefeed": "price_feed",
}
# The apps whose models those are.
OBJECT_APPS = ("scenarios", "api", "integrations")


def event_of(action: int, changes: dict[str, Any] | None) -> str:
    """What happened in words: created, changed, archived, restored, revoked or deleted."""
    if action == 0:
        return "created"
    if action == 2:
        return "deleted"
    changes = changes or {}
    for field, (became, undone) in (
        ("archived_at", ("archived", "restored")),
        ("revoked_at", ("revoked", "")),
    ):
        if field in changes:
            before, after = changes[field]
            if before is None and after is not None:
                return became
            if before is not None and after is None and undone:
                return undone
    return "changed"


class AuditEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    timestamp = serializers.DateTimeField()
    action = serializers.SerializerMethodField(help_text="create, update or delete.")
    event = serializers.SerializerMethodField(
        help_text="created, changed, archived, restored, revoked or deleted."
    )
    object_type = serializers.SerializerMethodField(
        help_text="cluster, model, site, plan, price_book, membership, token, team, webhook or price_feed."
    )
    object_id = serializers.IntegerField(allow_null=True)
    object_repr = serializers.CharField()
    team = serializers.SerializerMethodField(help_text="The team the object belongs to (null: none).")
    actor = serializers.SerializerMethodField(help_text="User name of who acted; null outside a request.")
    via = serializers.SerializerMethodField(help_text="token, session, or null (a worker or a command).")
    token = serializers.SerializerMethodField(help_text="The API token used: {id, prefix}; null otherwise.")
    remote_addr = serializers.CharField(allow_null=True)
    changes = serializers.JSONField(help_text="{field: [before, after]} for each changed field.")

    def get_action(self, entry: Any) -> str:
        return ACTIONS.get(entry.action, str(entry.action))

    def get_event(self, entry: Any) -> str:
        return event_of(entry.action, entry.changes)

    def get_object_type(self, entry: Any) -> str:
        return OBJECT_TYPES.get(entry.content_type.model, entry.content_type.model)

    def get_team(self, entry: Any) -> int | None:
        if entry.content_type.model == "team":  # a team's own entry belongs to the team
            return int(entry.object_id) if entry.object_id is not None else None
        fields = (entry.serialized_data or {}).get("fields") or {}
        team = fields.get("team")
        return int(team) if isinstance(team, int) else None

    def get_actor(self, entry: Any) -> str | None:
        return entry.actor.get_username() if entry.actor is not None else None

    def get_via(self, entry: Any) -> str | None:
        data = entry.additional_data or {}
        return data.get("via") if isinstance(data, dict) else None

    def get_token(self, entry: Any) -> dict[str, Any] | None:
        data = entry.additional_data or {}
        if not isinstance(data, dict) or data.get("via") != "token":
            return None
        return {"id": data.get("token"), "prefix": data.get("token_prefix")}
