"""Price books: versioned, immutable price sheets; publishing a version triggers re-runs."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.limits import MAX_PRICE_ENTRIES
from api.serializers.fields import FiniteFloatField, TeamField
from scenarios.models import PRICE_KIND_CHOICES, PRICE_UNITS, PriceBook, PriceEntry, Team


@extend_schema_field(
    {
        "type": "string",
        # A pattern rather than an enum: OpenAPI enum components are named by field, and "kind" already
        # names the run kinds.
        "pattern": "^(" + "|".join(value for value, _ in PRICE_KIND_CHOICES) + ")$",
        "description": "; ".join(f"`{value}`: {label}" for value, label in PRICE_KIND_CHOICES),
    }
)
class PriceKindField(serializers.ChoiceField):
    """The kind of a price: accelerator, node, cloud or electricity."""


class PriceEntrySerializer(serializers.ModelSerializer):
    kind = PriceKindField(choices=PRICE_KIND_CHOICES)
    key = serializers.CharField(
        max_length=200,
        help_text="accelerator/node: catalog key; cloud: accelerator key or 'provider:accelerator'; "
        "electricity: region key or 'site:<site name>'.",
    )
    value = FiniteFloatField(
        min_value=0.0, max_value=1e12, help_text="USD, USD/GPU-hour or USD/kWh (see unit)."
    )
    unit = serializers.CharField(max_length=32, required=False, help_text="Defaults to the kind's unit.")
    source = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    effective_date = serializers.DateField(required=False, allow_null=True, default=None)

    class Meta:
        model = PriceEntry
        fields: tuple[str, ...] = ("kind", "key", "value", "unit", "source", "effective_date")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        expected = PRICE_UNITS[attrs["kind"]]
        unit = attrs.setdefault("unit", expected)
        if unit != expected:
            raise serializers.ValidationError({"unit": [f"must be {expected!r} for kind {attrs['kind']!r}"]})
        return attrs


class PriceBookSerializer(serializers.ModelSerializer):
    team = TeamField(
        queryset=Team.objects.all(), required=False, help_text="Owning team; null for the global book."
    )
    entry_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = PriceBook
        fields: tuple[str, ...] = (
            "id",
            "team",
            "version",
            "name",
            "notes",
            "source",
            "published_at",
            "created_by",
            "entry_count",
        )
        read_only_fields: tuple[str, ...] = ("id", "version", "published_at", "created_by", "entry_count")


class PriceBookDetailSerializer(PriceBookSerializer):
    entries = PriceEntrySerializer(many=True, read_only=True)

    class Meta(PriceBookSerializer.Meta):
        fields: tuple[str, ...] = (*PriceBookSerializer.Meta.fields, "entries")
        read_only_fields: tuple[str, ...] = (*PriceBookSerializer.Meta.read_only_fields, "entries")


class PriceBookPublishSerializer(serializers.Serializer):
    team = TeamField(queryset=Team.objects.all(), required=False)
    name = serializers.CharField(max_length=200)
    notes = serializers.CharField(max_length=10_000, required=False, allow_blank=True, default="")
    source = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    entries = PriceEntrySerializer(many=True, allow_empty=False, max_length=MAX_PRICE_ENTRIES)  # type: ignore[call-arg]

    def validate_entries(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[tuple[str, str]] = set()
        for index, entry in enumerate(entries):
            key = (entry["kind"], entry["key"])
            if key in seen:
                raise serializers.ValidationError(
                    {str(index): {"key": [f"duplicate {entry['kind']} entry {entry['key']!r}"]}}
                )
            seen.add(key)
        return entries
