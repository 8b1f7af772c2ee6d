"""Events of the change feed (``scenarios.events``): read-only."""

from __future__ import annotations

from rest_framework import serializers

from scenarios.models import EVENT_KIND_CHOICES, Event


class EventSerializer(serializers.ModelSerializer):
    """One event. ``id`` is its stable public id (``evt_...``), the one a webhook delivery carries in
    ``webhook-id``; ``team`` is null for a global event (the global price book)."""

    id = serializers.CharField(source="public_id", read_only=True, help_text="Stable public id: evt_<hex>.")
    # A string with the kinds in its description rather than an enum: OpenAPI enum components are named by
    # field, and "kind" already names the run kinds.
    kind = serializers.CharField(
        read_only=True, help_text="; ".join(f"`{value}`: {label}" for value, label in EVENT_KIND_CHOICES)
    )
    plan = serializers.IntegerField(source="plan_id", read_only=True, allow_null=True)
    run = serializers.IntegerField(source="run_id", read_only=True, allow_null=True)
    result = serializers.IntegerField(source="result_id", read_only=True, allow_null=True)
    payload = serializers.JSONField(read_only=True)

    class Meta:
        model = Event
        fields: tuple[str, ...] = ("id", "kind", "team", "plan", "run", "result", "payload", "created_at")
        read_only_fields = fields
