"""Plans: cluster + model + site (each following its latest revision or pinned to one) + training choices."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.serializers.fields import JSONObjectField, TeamField, TeamScopedPrimaryKeyField
from scenarios.models import (
    ClusterRevision,
    ClusterScenario,
    ModelRevision,
    ModelScenario,
    Plan,
    SiteRevision,
    SiteScenario,
    Team,
)


class RevisionPinField(TeamScopedPrimaryKeyField):
    team_field = "scenario__team_id"


PARTS = ("cluster", "model", "site")


class PlanSerializer(serializers.ModelSerializer):
    team = TeamField(queryset=Team.objects.all(), required=False)
    cluster = TeamScopedPrimaryKeyField(queryset=ClusterScenario.objects.filter(archived_at__isnull=True))
    model = TeamScopedPrimaryKeyField(queryset=ModelScenario.objects.filter(archived_at__isnull=True))
    site = TeamScopedPrimaryKeyField(queryset=SiteScenario.objects.filter(archived_at__isnull=True))
    cluster_revision = RevisionPinField(
        queryset=ClusterRevision.objects.all(),
        required=False,
        allow_null=True,
        help_text="Pin a revision (id) of the cluster; null follows the latest.",
    )
    model_revision = RevisionPinField(queryset=ModelRevision.objects.all(), required=False, allow_null=True)
    site_revision = RevisionPinField(queryset=SiteRevision.objects.all(), required=False, allow_null=True)
    training = JSONObjectField(
        required=False, help_text="The 'training' part of a scenario document (seq_len, batch, layout, ...)."
    )
    economics = JSONObjectField(required=False, help_text="The 'economics' part of a scenario document.")
    auto_rerun = serializers.BooleanField(
        required=False,
        help_text="Also re-check nightly: re-run when the plan's inputs (revisions, prices, solver) "
        "have no stored result. Publishing a price book re-runs every plan whose prices it changes.",
    )
    cloud_provider = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        help_text="Provider whose cloud prices apply (price-book key 'provider:accelerator'); blank: any.",
    )
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=10_000)

    class Meta:
        model = Plan
        fields: tuple[str, ...] = (
            "id",
            "team",
            "name",
            "description",
            "cluster",
            "model",
            "site",
            "cluster_revision",
            "model_revision",
            "site_revision",
            "training",
            "economics",
            "auto_rerun",
            "cloud_provider",
            "latest_result",
            "archived_at",
            "created_at",
            "updated_at",
        )
        read_only_fields: tuple[str, ...] = ("id", "latest_result", "archived_at", "created_at", "updated_at")
        # Name uniqueness among live plans is the service's rule (it names the field in its 400).
        validators: tuple[Any, ...] = ()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance: Plan | None = self.instance
        team_id = attrs["team"].pk if attrs.get("team") is not None else getattr(instance, "team_id", None)
        errors: dict[str, list[str]] = {}
        for part in PARTS:
            scenario = attrs.get(part, getattr(instance, part, None) if instance else None)
            if scenario is not None and team_id is not None and scenario.team_id != team_id:
                errors[part] = ["must belong to the plan's team"]
            pin_key = f"{part}_revision"
            pin = attrs.get(pin_key, getattr(instance, pin_key, None) if instance else None)
            if pin is not None and scenario is not None and pin.scenario_id != scenario.pk:
                errors[pin_key] = [f"is a revision of another {part} scenario"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class PlanUpdateSerializer(PlanSerializer):
    """A PATCH may send back the scenarios it read, archived ones included: a plan keeps the scenario it was
    made with after that is archived, and only a newly chosen scenario must be live (``plan_values``, which
    says so naming the field)."""

    team = serializers.IntegerField(read_only=True, source="team_id")  # type: ignore[assignment]
    name = serializers.CharField(max_length=200, required=False)
    cluster = TeamScopedPrimaryKeyField(queryset=ClusterScenario.objects.all(), required=False)
    model = TeamScopedPrimaryKeyField(queryset=ModelScenario.objects.all(), required=False)
    site = TeamScopedPrimaryKeyField(queryset=SiteScenario.objects.all(), required=False)


class RunAcceptedSerializer(serializers.Serializer):
    run = serializers.IntegerField(help_text="Id of the queued run.")
    status = serializers.CharField()
    queue = serializers.ChoiceField(
        choices=["queued", "deferred"],
        help_text=(
            "queued: sent to the workers' broker. deferred: the broker was unreachable; the run is stored "
            "and the sweeper sends it within about 30 s of the broker's return (do not repeat the request)."
        ),
    )
    url = serializers.URLField(help_text="Poll this URL for the run's status and result.")
