"""Price feeds: a team's price source polled on a schedule (``scenarios.feeds``).

The checks of a feed (its source against the SSRF guard or ``PRICE_FEED_DIRS``, its schedule) are the
service's, one copy for the API, the admin and the management command; these serializers check types.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.serializers.fields import TeamField
from api.serializers.price_books import PriceModeField, _pattern_field
from scenarios.feeds import MAX_EVERY_S, MIN_EVERY_S, schedule_of
from scenarios.models import (
    PRICE_FEED_FORMAT_AUTO,
    PRICE_FEED_FORMAT_CHOICES,
    PRICE_FEED_POLL_STATE_FIELDS,
    PRICE_FEED_STATUS_CHOICES,
    PRICE_MODE_CHOICES,
    PRICE_MODE_PATCH,
    PriceFeed,
    Team,
)


@extend_schema_field(_pattern_field(PRICE_FEED_FORMAT_CHOICES))
class PriceFeedFormatField(serializers.ChoiceField):
    """The format of a feed's content: csv, json, or auto."""


class PriceFeedScheduleSerializer(serializers.Serializer):
    """Every ``every_s`` seconds, or at a five-field crontab in UTC; exactly one of the two."""

    every_s = serializers.IntegerField(
        min_value=MIN_EVERY_S,
        max_value=MAX_EVERY_S,
        required=False,
        allow_null=True,
        help_text="Poll every this many seconds.",
    )
    crontab = serializers.CharField(
        max_length=300,
        required=False,
        allow_null=True,
        help_text="Poll at 'minute hour day-of-month month day-of-week' (UTC), e.g. '30 2 * * *'.",
    )
    timezone = serializers.CharField(read_only=True, allow_null=True, help_text="The crontab's time zone.")
    periodic_task = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="The django-celery-beat row (PeriodicTask) that runs the poll; editable in the admin.",
    )


FEED_STATE_FIELDS = PRICE_FEED_POLL_STATE_FIELDS


class PriceFeedSerializer(serializers.ModelSerializer):
    team = TeamField(queryset=Team.objects.all(), required=False, help_text="Owning team.")
    name = serializers.CharField(max_length=200, help_text="Unique in the team; the book's default name.")
    source = serializers.CharField(  # type: ignore[assignment]
        max_length=2000,
        help_text="An http(s) URL (private, loopback and metadata addresses are refused) or an absolute "
        "file path under <dir>/<team slug>/ for a directory <dir> the operator lists in PRICE_FEED_DIRS "
        "(the team's own directory; another team's file is refused).",
    )
    format = PriceFeedFormatField(
        choices=PRICE_FEED_FORMAT_CHOICES,
        default=PRICE_FEED_FORMAT_AUTO,
        help_text="The import_prices CSV or JSON format; auto: by extension, content type, then content.",
    )
    mode = PriceModeField(
        choices=PRICE_MODE_CHOICES,
        default=PRICE_MODE_PATCH,
        help_text="How each new content is published: patch (on top of the book in force) or replace.",
    )
    enabled = serializers.BooleanField(default=True, help_text="A disabled feed is not polled on schedule.")
    schedule = PriceFeedScheduleSerializer(
        allow_null=True,
        help_text='{"every_s": 3600} or {"crontab": "30 2 * * *"}; null when its beat row was deleted.',
    )
    last_status = serializers.CharField(
        read_only=True,
        help_text="The last poll's outcome ('' before the first): "
        + "; ".join(f"`{value}`: {label}" for value, label in PRICE_FEED_STATUS_CHOICES),
    )
    last_hash = serializers.CharField(read_only=True, help_text="sha256 of the content last published.")
    last_book = serializers.PrimaryKeyRelatedField(  # type: ignore[var-annotated]
        read_only=True, allow_null=True, help_text="The last version this feed published."
    )

    class Meta:
        model = PriceFeed
        fields: tuple[str, ...] = (
            "id",
            "team",
            "name",
            "source",
            "format",
            "mode",
            "enabled",
            "schedule",
            *FEED_STATE_FIELDS,
            "created_at",
            "updated_at",
        )
        read_only_fields: tuple[str, ...] = ("id", *FEED_STATE_FIELDS, "created_at", "updated_at")
        # (team, name) uniqueness is the service's rule (it names the field in its 400).
        validators: tuple[Any, ...] = ()

    def validate_schedule(self, value: Any) -> Any:
        if value is None:
            raise serializers.ValidationError('required: {"every_s": seconds} or {"crontab": "..."}')
        return value

    def to_representation(self, instance: PriceFeed) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        data["schedule"] = schedule_of(instance.schedule)
        data["team"] = instance.team_id
        return data


class PriceFeedUpdateSerializer(PriceFeedSerializer):
    team = serializers.IntegerField(read_only=True, source="team_id")  # type: ignore[assignment]
    name = serializers.CharField(max_length=200, required=False)
    source = serializers.CharField(max_length=2000, required=False)
    format = PriceFeedFormatField(choices=PRICE_FEED_FORMAT_CHOICES, required=False)
    mode = PriceModeField(choices=PRICE_MODE_CHOICES, required=False)
    enabled = serializers.BooleanField(required=False)
    schedule = PriceFeedScheduleSerializer(required=False, allow_null=True)


class PriceFeedPollSerializer(serializers.Serializer):
    feed = serializers.IntegerField(help_text="Id of the feed.")
    status = serializers.CharField(help_text="'queued': a worker polls the feed now.")
    url = serializers.URLField(help_text="The feed; its last_* fields show the poll's outcome.")
