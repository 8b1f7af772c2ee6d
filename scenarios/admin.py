"""Admin pages. Revisions, price books and results are written once: their pages are read-only, and price
books are published through ``price_book_publish`` (the API or ``manage.py import_prices``) so that the
fan-out of re-runs happens."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from scenarios.models import (
    ClusterRevision,
    ClusterScenario,
    Membership,
    ModelRevision,
    ModelScenario,
    Plan,
    PriceBook,
    PriceEntry,
    Result,
    Run,
    SiteRevision,
    SiteScenario,
    Team,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """List and inspect; no add, change or delete (the database refuses those too)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    prepopulated_fields = {"slug": ("name",)}  # noqa: RUF012
    inlines = (MembershipInline,)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("team", "user", "role", "created_at")
    list_filter = ("role", "team")
    search_fields = ("team__slug", "user__username")
    autocomplete_fields = ("user",)


class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "latest_revision", "archived_at", "updated_at")
    list_filter = ("team", "archived_at")
    search_fields = ("name", "description")
    readonly_fields = ("latest_revision", "created_at", "updated_at")


class RevisionAdmin(ReadOnlyAdmin):
    list_display = ("scenario", "number", "created_by", "created_at")
    list_filter = ("scenario__team",)
    search_fields = ("scenario__name",)


for scenario_model, revision_model in (
    (ClusterScenario, ClusterRevision),
    (ModelScenario, ModelRevision),
    (SiteScenario, SiteRevision),
):
    admin.site.register(scenario_model, ScenarioAdmin)
    admin.site.register(revision_model, RevisionAdmin)


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "cluster", "model", "site", "auto_rerun", "latest_result", "archived_at")
    list_filter = ("team", "auto_rerun", "archived_at")
    search_fields = ("name", "description")
    readonly_fields = ("latest_result", "created_at", "updated_at")
    raw_id_fields = ("cluster_revision", "model_revision", "site_revision")


class PriceEntryInline(admin.TabularInline):
    model = PriceEntry
    extra = 0
    can_delete = False
    readonly_fields = ("kind", "key", "value", "unit", "source", "effective_date")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PriceBook)
class PriceBookAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "team", "version", "name", "published_at", "created_by")
    list_filter = ("team",)
    search_fields = ("name", "notes")
    inlines = (PriceEntryInline,)


@admin.register(PriceEntry)
class PriceEntryAdmin(ReadOnlyAdmin):
    list_display = ("price_book", "kind", "key", "value", "unit", "effective_date")
    list_filter = ("kind", "price_book__team")
    search_fields = ("key", "source")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are job rows: visible and filterable; their state is owned by the workers."""

    list_display = (
        "id",
        "plan",
        "kind",
        "trigger",
        "status",
        "attempts",
        "queued_at",
        "finished_at",
        "result",
    )
    list_filter = ("status", "kind", "trigger", "team")
    search_fields = ("plan__name", "error")
    readonly_fields = tuple(f.name for f in Run._meta.fields)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Result)
class ResultAdmin(ReadOnlyAdmin):
    list_display = (
        "plan",
        "version",
        "solver_version",
        "price_book",
        "step_s",
        "usd_per_million_tokens",
        "total_kgco2e",
        "created_at",
    )
    list_filter = ("team", "solver_version")
    search_fields = ("plan__name", "input_hash")
