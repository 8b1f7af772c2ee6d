"""Cluster, model and site scenarios: the current document plus the revision history."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
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


class FieldErrorSerializer(serializers.Serializer):
    path = serializers.CharField(
        help_text="The field path of the scenario document, e.g. training.layout.tp."
    )
    message = serializers.CharField(help_text="The rule the value breaks.")


class UnsolvablePlanSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="plan.pk")
    name = serializers.CharField(source="plan.name")
    # DRF's metaclass moves declared fields out of the class, so this does not hide Serializer.errors
    errors = serializers.SerializerMethodField()  # type: ignore[assignment]

    @extend_schema_field(FieldErrorSerializer(many=True))
    def get_errors(self, row: Any) -> list[dict[str, str]]:
        return [{"path": path, "message": message} for path, message in row.errors]


class FollowingPlansSerializer(serializers.Serializer):
    """What a new revision of a scenario did to the live plans that follow it."""

    following = serializers.IntegerField(
        help_text="Live plans that follow this scenario's latest revision (pinned plans are not moved)."
    )
    checked = serializers.IntegerField(
        help_text="How many of them were checked, in name order (at most SCENARIO_EDIT_PLAN_CHECKS, and none "
        "begun after SCENARIO_EDIT_PLAN_CHECK_S seconds of checking)."
    )
    unsolvable = UnsolvablePlanSerializer(
        many=True,
        help_text="The checked plans that a run would now refuse, each with the rules its document breaks. "
        "The revision is kept: change these plans, or pin them to an earlier revision.",
    )


class ScenarioUpdateSerializer(ScenarioSerializer):
    team = serializers.IntegerField(read_only=True, source="team_id")  # type: ignore[assignment]
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    document = JSONObjectField(required=False, help_text="A new document makes a new revision.")
    following_plans = serializers.SerializerMethodField(
        help_text="Present when this change made a new revision (null otherwise): the live plans that follow "
        "the scenario, checked as a plan is checked when it is stored."
    )

    @extend_schema_field(FollowingPlansSerializer(allow_null=True))
    def get_following_plans(self, instance: Any) -> dict[str, Any] | None:
        check = self.context.get("following_plans")
        return None if check is None else dict(FollowingPlansSerializer(check).data)


class RevisionSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    number = serializers.IntegerField(read_only=True)
    document = serializers.JSONField(read_only=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )
    created_at = serializers.DateTimeField(read_only=True)
