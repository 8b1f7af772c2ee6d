"""Price books: versioned, immutable price sheets; publishing a version triggers re-runs.

A price's range is the solver's own (``solvers.prices.price_limits``): the field bounds below, the per-kind
check and the OpenAPI text are all derived from it, so the API cannot accept a price the solver refuses.
Keys are checked against the solver's catalog and the team's sites by the publish service (one copy).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.limits import MAX_PRICE_ENTRIES
from api.serializers.fields import FiniteFloatField, TeamField
from scenarios.models import (
    PRICE_KIND_CHOICES,
    PRICE_MODE_CHOICES,
    PRICE_MODE_PATCH,
    PRICE_UNITS,
    PriceBook,
    PriceEntry,
    Team,
)
from scenarios.services import price_limit_text, price_value_problem
from solvers.prices import price_limits

# The widest range any kind allows: a first bound on the field; each kind's own range is checked in
# ``PriceEntryInputSerializer.validate`` (a field's bounds cannot depend on another field).
PRICE_VALUE_MIN = min(price_limits(kind)[0] for kind, _ in PRICE_KIND_CHOICES)
PRICE_VALUE_MAX = max(price_limits(kind)[1] for kind, _ in PRICE_KIND_CHOICES)
PRICE_VALUE_HELP = (
    "The price, in the kind's unit; its range is the solver's limit of the field it fills: "
    + ("; ".join(f"{kind} {price_limit_text(kind)}" for kind, _ in PRICE_KIND_CHOICES) + ".")
)


def _pattern_field(choices: list[tuple[str, str]]) -> dict[str, Any]:
    # A pattern rather than an enum: OpenAPI enum components are named by field, and "kind" already names
    # the run kinds ("mode" the search modes).
    return {
        "type": "string",
        "pattern": "^(" + "|".join(value for value, _ in choices) + ")$",
        "description": "; ".join(f"`{value}`: {label}" for value, label in choices),
    }


@extend_schema_field(_pattern_field(PRICE_KIND_CHOICES))
class PriceKindField(serializers.ChoiceField):
    """The kind of a price: accelerator, node, cloud or electricity."""


@extend_schema_field(_pattern_field(PRICE_MODE_CHOICES))
class PriceModeField(serializers.ChoiceField):
    """How a version was made from the entries sent: patch or replace."""


class PriceEntrySerializer(serializers.ModelSerializer):
    kind = PriceKindField(choices=PRICE_KIND_CHOICES)
    key = serializers.CharField(
        max_length=PriceEntry._meta.get_field("key").max_length,
        help_text="accelerator/node: catalog key; cloud: accelerator key or 'provider:accelerator'; "
        "electricity: region key or 'site:<site name>' (team books only).",
    )
    value = FiniteFloatField(min_value=PRICE_VALUE_MIN, max_value=PRICE_VALUE_MAX, help_text=PRICE_VALUE_HELP)
    unit = serializers.CharField(max_length=32, required=False, help_text="Defaults to the kind's unit.")
    source = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    effective_date = serializers.DateField(required=False, allow_null=True, default=None)

    class Meta:
        model = PriceEntry
        fields: tuple[str, ...] = ("kind", "key", "value", "unit", "source", "effective_date")


class PriceEntryInputSerializer(PriceEntrySerializer):
    """One entry of a publish: a price, or (in a patch) ``{"kind", "key", "remove": true}``."""

    value = FiniteFloatField(
        min_value=PRICE_VALUE_MIN,
        max_value=PRICE_VALUE_MAX,
        required=False,
        help_text=PRICE_VALUE_HELP + " Required unless remove is true.",
    )
    remove = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Patch only: delete this key from the book (the previous version must hold it); "
        "a removal takes no value.",
    )

    class Meta(PriceEntrySerializer.Meta):
        fields: tuple[str, ...] = (*PriceEntrySerializer.Meta.fields, "remove")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = attrs["kind"]
        if attrs.get("remove"):
            # Anything sent beside the key would be dropped unseen: refused instead (as the service does).
            sent = [
                name
                for name in ("value", "unit", "source", "effective_date")
                if attrs.get(name) not in (None, "")
            ]
            if sent:
                raise serializers.ValidationError(
                    {name: ["a removal takes only kind and key"] for name in sent}
                )
            return {"kind": kind, "key": attrs["key"], "remove": True}
        attrs.pop("remove", None)
        if attrs.get("value") is None:
            raise serializers.ValidationError({"value": ["required (unless remove is true)"]})
        # A node price is checked against THAT node's accelerators (the service's rule, one copy).
        problem = price_value_problem(kind, attrs["value"], attrs.get("key"))
        if problem is not None:
            raise serializers.ValidationError({"value": [problem]})
        expected = PRICE_UNITS[kind]
        unit = attrs.setdefault("unit", expected)
        if unit != expected:
            raise serializers.ValidationError({"unit": [f"must be {expected!r} for kind {kind!r}"]})
        return attrs


class PriceBookSerializer(serializers.ModelSerializer):
    team = TeamField(
        queryset=Team.objects.all(), required=False, help_text="Owning team; null for the global book."
    )
    entry_count = serializers.IntegerField(read_only=True)
    mode = PriceModeField(
        choices=PRICE_MODE_CHOICES,
        read_only=True,
        help_text="How this version was made; either way its entries are the complete book.",
    )
    based_on: serializers.PrimaryKeyRelatedField[PriceBook] = serializers.PrimaryKeyRelatedField(
        read_only=True,
        allow_null=True,
        help_text="The version a patch was applied to; null for a replace or a first version.",
    )

    class Meta:
        model = PriceBook
        fields: tuple[str, ...] = (
            "id",
            "team",
            "version",
            "name",
            "notes",
            "source",
            "mode",
            "based_on",
            "published_at",
            "created_by",
            "entry_count",
        )
        read_only_fields: tuple[str, ...] = (
            "id",
            "version",
            "mode",
            "based_on",
            "published_at",
            "created_by",
            "entry_count",
        )

    def to_representation(self, instance: Any) -> Any:
        data = super().to_representation(instance)
        if instance.team_id is None:
            data["created_by"] = None  # the operator's account is not every team's to read
        return data


class PriceBookDetailSerializer(PriceBookSerializer):
    entries = PriceEntrySerializer(many=True, read_only=True)

    class Meta(PriceBookSerializer.Meta):
        fields: tuple[str, ...] = (*PriceBookSerializer.Meta.fields, "entries")
        read_only_fields: tuple[str, ...] = (*PriceBookSerializer.Meta.read_only_fields, "entries")


class PriceKeyValueSerializer(serializers.Serializer):
    kind = serializers.CharField()
    key = serializers.CharField()
    value = serializers.FloatField()


class PriceChangeSerializer(serializers.Serializer):
    kind = serializers.CharField()
    key = serializers.CharField()
    before = serializers.FloatField()
    after = serializers.FloatField()


class PriceBookChangesSerializer(serializers.Serializer):
    added = PriceKeyValueSerializer(many=True)
    changed = PriceChangeSerializer(many=True)
    removed = PriceKeyValueSerializer(many=True)
    unchanged = serializers.IntegerField(help_text="Keys whose value stayed the same.")


class PriceBookPublishedSerializer(PriceBookDetailSerializer):
    """The answer to a publish: the new version, what it changed against the previous version of its
    scope, and how many live plans it re-runs (those whose resolved prices it changes)."""

    changes = PriceBookChangesSerializer(read_only=True)
    plans_to_rerun = serializers.IntegerField(read_only=True)
    fan_out = serializers.ChoiceField(
        choices=["queued", "deferred", "none"],
        read_only=True,
        help_text=(
            "The re-runs are recorded with the book either way. queued: sent to the workers' broker. "
            "deferred: the broker was unreachable; the sweeper sends them once it is back. none: a book "
            "published without re-runs (not through this endpoint)."
        ),
    )

    class Meta(PriceBookDetailSerializer.Meta):
        fields: tuple[str, ...] = (
            *PriceBookDetailSerializer.Meta.fields,
            "changes",
            "plans_to_rerun",
            "fan_out",
        )


class PriceBookPublishSerializer(serializers.Serializer):
    team = TeamField(queryset=Team.objects.all(), required=False)
    name = serializers.CharField(max_length=200)
    notes = serializers.CharField(max_length=10_000, required=False, allow_blank=True, default="")
    source = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    mode = PriceModeField(
        choices=PRICE_MODE_CHOICES,
        default=PRICE_MODE_PATCH,
        help_text="patch (default): the entries change the previous version (other keys are kept; "
        "{kind, key, remove: true} deletes a key); replace: the entries are the whole book.",
    )
    entries = PriceEntryInputSerializer(many=True, allow_empty=False, max_length=MAX_PRICE_ENTRIES)  # type: ignore[call-arg]

    def validate_entries(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: dict[tuple[str, str], int] = {}
        for index, entry in enumerate(entries):
            key = (entry["kind"], entry["key"])
            if key in seen:
                raise serializers.ValidationError(
                    {
                        f"[{index}].key": [
                            f"duplicate of entries[{seen[key]}] ({entry['kind']} {entry['key']!r})"
                        ]
                    }
                )
            seen[key] = index
        return entries

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            raise serializers.ValidationError(_entry_paths(exc.detail)) from None


def _entry_paths(detail: Any) -> Any:
    """Entry errors under the paths the publish service uses, ``entries[3].value`` (DRF nests them as
    entries -> 3 -> value), so a client reads one path style whichever layer refused the entry."""
    if not isinstance(detail, dict) or "entries" not in detail:
        return detail
    nested = detail["entries"]
    flat: dict[str, Any] = {key: value for key, value in detail.items() if key != "entries"}
    if isinstance(nested, list) and nested and all(isinstance(item, dict) for item in nested):
        for index, item in enumerate(nested):
            for field, messages in item.items():
                flat[f"entries[{index}].{field}"] = messages
    elif isinstance(nested, dict):
        for field, messages in nested.items():
            path = f"entries{field}" if str(field).startswith("[") else f"entries[{field}]"
            flat[path] = messages
    else:
        flat["entries"] = nested
    return flat
