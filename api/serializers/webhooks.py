"""Webhook endpoints (the signing secret appears once, in the response that creates or rotates it) and their
deliveries with the attempt log."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.permissions import has_role
from api.serializers.fields import FiniteFloatField, TeamField, TeamScopedPrimaryKeyField
from integrations.dispatch import url_origin
from integrations.models import (
    DEFAULT_FAILURE_LIMIT,
    DELIVERY_STATUS_CHOICES,
    MAX_BATCH_SIZE,
    MAX_FAILURE_LIMIT,
    Delivery,
    DeliveryAttempt,
    Endpoint,
)
from scenarios.events import THRESHOLD_FIGURES
from scenarios.models import EVENT_KIND_CHOICES, Plan, Team


def _pattern(choices: list[tuple[str, str]]) -> dict[str, Any]:
    # A pattern rather than an enum: OpenAPI enum components are named by field and would collide.
    return {
        "type": "string",
        "pattern": "^(" + "|".join(value.replace(".", r"\.") for value, _ in choices) + ")$",
        "description": "; ".join(f"`{value}`: {label}" for value, label in choices),
    }


@extend_schema_field(_pattern(EVENT_KIND_CHOICES))
class EventKindField(serializers.ChoiceField):
    """One kind of event of the change feed."""


@extend_schema_field(_pattern(DELIVERY_STATUS_CHOICES))
class DeliveryStatusField(serializers.ChoiceField):
    """pending, delivered or failed."""


class PlanFilterField(TeamScopedPrimaryKeyField):
    """A plan of the caller's teams, stored as its id."""

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(data).pk

    def to_representation(self, value: Any) -> Any:
        return getattr(value, "pk", value)


THRESHOLDS_HELP = (
    "{figure: fraction}: a `result.stored` event is delivered only when one of these figures moved by at "
    f"least that fraction of the previous result (|change_fraction| >= fraction). Figures: "
    f"{', '.join(THRESHOLD_FIGURES)}; fractions > 0 and <= 10 (0.02 is 2%). Empty: every result."
)


class WebhookSerializer(serializers.ModelSerializer):
    team = TeamField(
        queryset=Team.objects.all(),
        required=False,
        help_text="The owning team (you must be its admin); defaults to your only team.",
    )
    url = serializers.URLField(
        max_length=2000,
        help_text="Where events are POSTed. Private, loopback, link-local and metadata addresses are refused. "
        "Shown whole to the team's admins; other members see its scheme and host only.",
    )
    description = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    event_kinds = serializers.ListField(
        child=EventKindField(choices=EVENT_KIND_CHOICES),
        required=False,
        default=list,
        max_length=len(EVENT_KIND_CHOICES),
        help_text="Only these kinds of events; empty: every kind.",
    )
    thresholds = serializers.DictField(
        child=FiniteFloatField(min_value=0, max_value=10),
        required=False,
        default=dict,
        help_text=THRESHOLDS_HELP,
    )
    plan = PlanFilterField(
        source="plan_id",
        queryset=Plan.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text="Only events about this plan (events about no plan are then not delivered).",
    )
    batch_size = serializers.IntegerField(
        min_value=1,
        max_value=MAX_BATCH_SIZE,
        required=False,
        default=1,
        help_text='1: one event per request; N > 1: up to N events per request, body {"events": [...]}.',
    )
    failure_limit = serializers.IntegerField(
        min_value=1,
        max_value=MAX_FAILURE_LIMIT,
        required=False,
        default=DEFAULT_FAILURE_LIMIT,
        help_text="Disabled after this many consecutive failed attempts (a webhook.disabled event).",
    )

    def to_representation(self, instance: Any) -> Any:
        data = super().to_representation(instance)
        request = self.context.get("request")
        if request is not None and not has_role(request, instance.team_id, "admin"):
            data["url"] = url_origin(instance.url)  # the path may hold a chat service's credential
        return data

    class Meta:
        model = Endpoint
        fields: tuple[str, ...] = (
            "id",
            "team",
            "url",
            "description",
            "event_kinds",
            "thresholds",
            "plan",
            "batch_size",
            "enabled",
            "consecutive_failures",
            "failure_limit",
            "disabled_at",
            "disabled_reason",
            "secret_rotated_at",
            "previous_secret_expires_at",
            "created_at",
            "updated_at",
        )
        read_only_fields: tuple[str, ...] = (
            "id",
            "enabled",
            "consecutive_failures",
            "disabled_at",
            "disabled_reason",
            "secret_rotated_at",
            "previous_secret_expires_at",
            "created_at",
            "updated_at",
        )


class WebhookUpdateSerializer(WebhookSerializer):
    """The same fields; the team cannot change."""

    team: Any = serializers.PrimaryKeyRelatedField(read_only=True)


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text="The signing secret (whsec_...). Shown only in this response: store it now.",
    )

    class Meta(WebhookSerializer.Meta):
        fields: tuple[str, ...] = (*WebhookSerializer.Meta.fields, "secret")


class RotateSecretSerializer(serializers.Serializer):
    overlap_hours = FiniteFloatField(
        min_value=0,
        max_value=168,
        required=False,
        default=24,
        help_text="For this long the old secret signs too (several signatures in webhook-signature).",
    )


class RotatedSecretSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    secret = serializers.CharField(help_text="The new signing secret. Shown only in this response.")
    previous_secret_expires_at = serializers.DateTimeField(
        help_text="Until then the previous secret signs as well."
    )


class DeliveryAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DeliveryAttempt
        fields: tuple[str, ...] = (
            "number",
            "started_at",
            "status_code",
            "error",
            "latency_ms",
            "response_excerpt",
            "manual",
            "succeeded",
        )
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    status = DeliveryStatusField(choices=DELIVERY_STATUS_CHOICES, read_only=True)
    event_ids = serializers.SerializerMethodField(help_text="The public ids of the events it carries.")
    attempt_log = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields: tuple[str, ...] = (
            "id",
            "webhook_id",
            "status",
            "attempts",
            "next_attempt_at",
            "expires_at",
            "last_error",
            "created_at",
            "delivered_at",
            "event_ids",
            "attempt_log",
        )
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_event_ids(self, obj: Delivery) -> list[str]:
        return [link.event.public_id for link in obj.links.all()]
