"""Admin: endpoints (the secret is never shown), their deliveries and attempt logs (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils import timezone

from integrations import dispatch, services
from integrations.models import Delivery, DeliveryAttempt, DeliveryEvent, Endpoint


class EndpointAdminForm(forms.ModelForm):
    """An endpoint changed here is held to the API's rules (``services.endpoint_fields_clean``: the URL's
    outbound checks, known event kinds, valid thresholds, a plan of the endpoint's team, the limits)."""

    class Meta:
        model = Endpoint
        fields = ("url", "description", "event_kinds", "thresholds", "plan_id", "batch_size", "failure_limit")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        changed = {name: data.get(name) for name in self.changed_data if name in services.EDITABLE}
        if changed and self.instance.pk is not None:
            try:
                data["_clean"] = services.endpoint_fields_clean(self.instance.team, changed)
            except ValidationError as exc:
                for field, messages in exc.message_dict.items():
                    name = "plan_id" if field == "plan" else field
                    self.add_error(name if name in self.fields else None, messages)
        return data


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointAdminForm
    list_display = ("id", "team", "url", "enabled", "consecutive_failures", "failure_limit", "batch_size")
    list_filter = ("enabled",)
    search_fields = ("url", "description", "team__slug")
    actions = ("enable_again", "disable")
    readonly_fields = (
        # enabled: the actions below, which reset the failure count or say why, as the API does
        "enabled",
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

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        clean = form.cleaned_data.get("_clean") or {}
        if clean:
            services.endpoint_update(endpoint=Endpoint.objects.get(pk=obj.pk), fields=clean)
        obj.refresh_from_db()

    @admin.action(description="Enable again (the failure count starts over)", permissions=["change"])
    def enable_again(self, request: HttpRequest, queryset: Any) -> None:
        for endpoint in queryset:
            services.endpoint_enable(endpoint=endpoint)
        self.message_user(request, f"enabled {queryset.count()} endpoints")

    @admin.action(description="Disable", permissions=["change"])
    def disable(self, request: HttpRequest, queryset: Any) -> None:
        reason = f"disabled in the admin by {request.user}"
        count = dispatch.disable(queryset, reason=reason, last_error=reason, now=timezone.now())
        self.message_user(request, f"disabled {count} endpoints")


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

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # view only: a save would write back every column as read, over a dispatcher's update made meanwhile
        return False
