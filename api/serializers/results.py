"""Results: append-only solved reports with their inputs and the delta to the previous version."""

from __future__ import annotations

from rest_framework import serializers

from scenarios.models import Result


class ResultSerializer(serializers.ModelSerializer):
    """A result in a list: provenance and the promoted figures, without the large documents."""

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
        )
        read_only_fields = fields


class ResultDetailSerializer(ResultSerializer):
    """One result in full: the resolved input snapshot, the prices used, the report and the delta."""

    class Meta(ResultSerializer.Meta):
        fields: tuple[str, ...] = (
            *ResultSerializer.Meta.fields,
            "input_snapshot",
            "prices",
            "report",
            "delta",
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
