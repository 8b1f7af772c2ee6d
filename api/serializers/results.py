"""Results: append-only solved reports with their inputs and the delta to the previous version."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scenarios.models import Result


def _currency_table(context: Any) -> dict[int, Any]:
    """Each result's currency, kept in the serializer context so a list works it out once for all rows.
    (DRF's context is the root serializer's own dict, typed as a Mapping.)"""
    table: dict[int, Any] = context.setdefault("currency", {})
    return table


class ResultListSerializer(serializers.ListSerializer):
    """Works out whether every result of the list is current in a few queries for the whole list."""

    def to_representation(self, data: Any) -> Any:
        from scenarios.currency import results_currency

        items = list(data.all() if hasattr(data, "all") else data)
        _currency_table(self.context).update(results_currency([item.pk for item in items]))
        return super().to_representation(items)


class ResultSerializer(serializers.ModelSerializer):
    """A result in a list: provenance, the promoted figures and their ``delta`` against the previous result
    of the same kind, without the large documents.

    ``current`` says whether a run of the plan today would rest on the same inputs (solver, plan edits,
    revisions, prices: ``scenarios.currency``); ``stale_reasons`` says why not."""

    current = serializers.SerializerMethodField(
        help_text="True when the solver, the plan's inputs, its revisions and its prices are all still those "
        "this result used."
    )
    stale_reasons = serializers.SerializerMethodField(
        help_text="Why the result is not current (empty if it is)."
    )

    price_book_version = serializers.IntegerField(
        source="price_book.version", read_only=True, allow_null=True, default=None
    )
    team_price_book_version = serializers.IntegerField(
        source="team_price_book.version", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = Result
        fields: tuple[str, ...] = (
            "id",
            "plan",
            "team",
            "version",
            "kind",
            "input_hash",
            "solver_version",
            "price_book",
            "price_book_version",
            "team_price_book",
            "team_price_book_version",
            "cluster_revision",
            "model_revision",
            "site_revision",
            "previous",
            "created_at",
            "step_s",
            "mfu",
            "total_usd",
            "usd_per_million_tokens",
            "total_kgco2e",
            "wall_clock_days",
            "delta",
            "current",
            "stale_reasons",
        )
        read_only_fields = fields
        list_serializer_class = ResultListSerializer

    def _currency(self, obj: Result) -> Any:
        from scenarios.currency import results_currency

        table = _currency_table(self.context)
        if obj.pk not in table:
            table.update(results_currency([obj.pk]))
        return table[obj.pk]

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_current(self, obj: Result) -> bool:
        return bool(self._currency(obj).current)

    @extend_schema_field({"type": "array", "items": {"type": "string"}})
    def get_stale_reasons(self, obj: Result) -> list[str]:
        return list(self._currency(obj).reasons)


class ResultDetailSerializer(ResultSerializer):
    """One result in full: the resolved input snapshot, the prices used, the report and the delta."""

    class Meta(ResultSerializer.Meta):
        fields: tuple[str, ...] = (
            *ResultSerializer.Meta.fields,
            "input_snapshot",
            "prices",
            "report",
        )
        read_only_fields = fields


class ChangeSerializer(serializers.Serializer):
    path = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    delta = serializers.FloatField(allow_null=True, help_text="after - before, for numbers.")
    delta_pct = serializers.FloatField(
        allow_null=True, help_text="100 * (after - before) / |before|, for numbers."
    )


class ResultDiffSerializer(serializers.Serializer):
    plan = serializers.IntegerField()
    before = ResultSerializer()
    after = ResultSerializer()
    inputs = ChangeSerializer(many=True, help_text="Every input (snapshot) field that differs.")
    prices = ChangeSerializer(many=True, help_text="Every price that differs (value and origin).")
    outputs = ChangeSerializer(many=True, help_text="Every report field that differs.")
