"""Runs: the job rows (status, attempts, error, timings). Read-only."""

from __future__ import annotations

from rest_framework import serializers

from scenarios.models import Run


class RunSerializer(serializers.ModelSerializer):
    price_book_version = serializers.IntegerField(
        source="price_book.version", read_only=True, allow_null=True, default=None
    )

    class Meta:
        model = Run
        fields: tuple[str, ...] = (
            "id",
            "plan",
            "team",
            "kind",
            "trigger",
            "status",
            "attempts",
            "max_attempts",
            "error",
            "queued_at",
            "started_at",
            "finished_at",
            "points_done",
            "points_total",
            "price_book",
            "price_book_version",
            "result",
        )
        read_only_fields = fields
