"""Cluster, model and site scenarios: the current document plus the revision history."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.serializers.fields import JSONObjectField, TeamField
from scenarios.models import Team


class ScenarioSerializer(serializers.Serializer):
    """Fields shared by the three kinds; ``document`` is the scenario part (CONTRACT.md)."""

    id = serializers.IntegerField(read_only=True)
    team = TeamField(queryset=Team.objects.all(), required=False)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="")
    document = JSONObjectField(
        help_text="The scenario part (the 'cluster', 'model' or 'site' object of a scenario document). "
        "Changing it creates a new immutable revision."
    )
    revision = serializers.IntegerField(
        source="latest_revision.number",
        read_only=True,
        allow_null=True,
        help_text="The current revision number.",
    )
    archived_at = serializers.DateTimeField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["team"] = instance.team_id
        rev = instance.latest_revision
        data["document"] = rev.document if rev is not None else {}
        return data


class ScenarioUpdateSerializer(ScenarioSerializer):
    team = serializers.IntegerField(read_only=True, source="team_id")  # type: ignore[assignment]
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    document = JSONObjectField(required=False, help_text="A new document makes a new revision.")


class RevisionSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    number = serializers.IntegerField(read_only=True)
    document = serializers.JSONField(read_only=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )
    created_at = serializers.DateTimeField(read_only=True)
