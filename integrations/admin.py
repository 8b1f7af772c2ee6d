"""Admin: endpoints (the secret is never shown), their deliveries and attempt logs (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from integrations.models import Delivery, DeliveryAttempt, DeliveryEvent, Endpoint


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ("id", "team", "url", "enabled", "consecutive_failures", "failure_limit", "batch_size")
    list_filter = ("enabled",)
    search_fields = ("url", "description", "team__slug")
    exclude = ("secret", "previous_secret")
    readonly_fields = (
        "team",
        "created_by",
        "created_at",
        "updated_at",
        "disabled_at",
        "disabled_reason",
        "consecutive_failures",
        "previous_secret_expires_at",
        "secret_rotated_at",
        "last_event_id",
        "horizon_xid",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the secret is generated and shown once by the API


class DeliveryEventInline(admin.TabularInline):
    model = DeliveryEvent
    fields = ("position", "event")
    readonly_fields = fields
    extra = 0
    can_delete = False


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fields = ("number", "started_at", "status_code", "error", "latency_ms", "manual", "response_excerpt")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("id", "endpoint", "webhook_id", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status",)
    search_fields = ("webhook_id",)
    inlines = (DeliveryEventInline, DeliveryAttemptInline)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in Delivery._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
