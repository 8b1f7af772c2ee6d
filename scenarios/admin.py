"""Admin pages. Revisions, price books and results are written once: their pages are read-only, and price
books are published through ``price_book_publish`` (the API or ``manage.py import_prices``) so that the
fan-out of re-runs happens."""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance
from django.http import HttpRequest

from scenarios import services
from scenarios.models import (
    PRICE_FEED_POLL_STATE_FIELDS,
    ClusterRevision,
    ClusterScenario,
    Membership,
    ModelRevision,
    ModelScenario,
    Plan,
    PriceBook,
    PriceEntry,
    PriceFeed,
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


class TeamAdminForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ("name", "slug", "alert_thresholds")

    def clean_alert_thresholds(self) -> dict[str, float]:
        from scenarios import events

        try:  # the API's rule (``events.validate_thresholds``)
            return events.validate_thresholds(self.cleaned_data.get("alert_thresholds") or {})
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    form = TeamAdminForm
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    prepopulated_fields = {"slug": ("name",)}  # noqa: RUF012
    inlines = (MembershipInline,)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # the slug names the team's price-feed directory: fixed once the team exists (as in the API)
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if obj is None else (*fields, "slug")

    def get_prepopulated_fields(self, request: HttpRequest, obj: Any = None) -> dict[str, Any]:
        return {} if obj is not None else dict(self.prepopulated_fields)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("team", "user", "role", "created_at", "accepted_at")
    list_filter = ("role", "team")
    search_fields = ("team__slug", "user__username")
    autocomplete_fields = ("user",)


class ScenarioAdminForm(forms.ModelForm):
    """A name or an un-archive is held to the live-name rule of the API (``services.check_live_name``), with
    the form's error instead of the database's (a 500)."""

    class Meta:
        fields = ("name", "description", "archived_at")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        instance = self.instance
        live = data.get("archived_at", instance.archived_at) is None
        if "name" in self.changed_data:
            problem = services.site_rename_problem(instance, data.get("name") or "")
            if problem is not None:
                self.add_error("name", problem)
        if live and {"name", "archived_at"} & set(self.changed_data):
            try:
                services.check_live_name(
                    type(instance), team=instance.team, name=data.get("name") or "", exclude_pk=instance.pk
                )
            except ValidationError as exc:
                self.add_error("name", exc.message_dict.get("name", exc.messages))
        return data


class ScenarioAdmin(admin.ModelAdmin):
    """Scenarios are made through the API or the dashboard (a checked document, the first revision); here a
    name, a description and the archive are changed, through the services (a site's renamed team price is
    carried to its new name, ``services.scenario_update``)."""

    form = ScenarioAdminForm
    list_display = ("name", "team", "latest_revision", "archived_at", "updated_at")
    list_filter = ("team", "archived_at")
    search_fields = ("name", "description")
    # A scenario's team is chosen when it is made: moved later, it would leave the plans and results of its
    # first team on another team's scenario (the API has no way to move one either).
    readonly_fields = ("team", "latest_revision", "created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        manager = type(obj)._default_manager
        data = form.cleaned_data
        # renamed first, as the form checked it (a live site's price is carried), then archived or not
        services.scenario_update(
            scenario=manager.get(pk=obj.pk),
            user=request.user,
            name=data["name"],
            description=data["description"],
        )
        if "archived_at" in form.changed_data and data["archived_at"] is not None:
            services.scenario_archive(scenario=manager.get(pk=obj.pk), user=request.user)
        elif "archived_at" in form.changed_data:
            live = manager.get(pk=obj.pk)
            live.archived_at = None
            live.save(
                update_fields=["archived_at", "updated_at"]
            )  # a save, not an UPDATE: the audit log sees it
        obj.refresh_from_db()


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


class PlanAdminForm(forms.ModelForm):
    """A plan changed here is held to the rules of the API and the dashboard: its fields to
    ``services.plan_values`` (its scenarios and pinned revisions are its team's), and a change to what it
    solves must give a document that a solve accepts (``services.validate_plan_document``), or the form says
    why."""

    class Meta:
        model = Plan
        # the fields a plan's services take (in the model's order), and the admin's own
        fields = (
            "team",
            *(f.name for f in Plan._meta.get_fields() if f.name in services.PLAN_FIELDS),
            "created_by",
            "archived_at",
        )

    def clean(self) -> dict[str, Any]:
        from solvers import ScenarioError

        data = super().clean() or {}
        if self.errors:
            return data
        # The services' own field rules: a plan's scenarios and pinned revisions are its team's (the admin can
        # change the team, which would otherwise leave a plan on another team's scenarios).
        fields = {name: data[name] for name in services.PLAN_FIELDS if name in data}
        try:
            services.plan_values(
                team=data["team"], fields=fields, current=self.instance if self.instance.pk else None
            )
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                self.add_error(name if name in self.fields else None, messages)
            return data
        if not set(self.changed_data) - services.PLAN_LABEL_FIELDS:
            return data
        plan = construct_instance(self, copy.copy(self.instance))  # the form's plan, the row left as it is
        try:
            services.validate_plan_document(plan)
        except ScenarioError as exc:
            self.add_error(None, "; ".join(str(e) for e in exc.errors))
        except ValidationError as exc:
            self.add_error(None, "; ".join(exc.messages))
        return data


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    form = PlanAdminForm
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

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # view only: a save would write back every column as read, over a worker's update made meanwhile
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


# --- Price feeds ----------------------------------------------------------------------------------------


class PriceFeedForm(forms.ModelForm):
    """A feed and its schedule: the source is checked by ``scenarios.feeds.check_source`` (the SSRF guard,
    ``PRICE_FEED_DIRS``: a team's feed under ``<dir>/<team slug>/``), the schedule becomes the feed's
    django-celery-beat row (editable there too)."""

    every_s = forms.IntegerField(required=False, help_text="Poll every this many seconds.")
    crontab = forms.CharField(
        required=False, max_length=300, help_text="Or: 'minute hour day-of-month month day-of-week' (UTC)."
    )

    class Meta:
        model = PriceFeed
        fields = ("team", "name", "source", "format", "mode", "enabled")

    def clean_source(self) -> str:
        from scenarios import feeds

        # The team is cleaned first (the fields' order); a feed keeps its team (read-only once created).
        team = self.instance.team if self.instance.pk is not None else self.cleaned_data.get("team")
        try:
            return feeds.check_source(self.cleaned_data.get("source") or "", team=team)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict.get("source", exc.messages)) from None

    def clean(self) -> dict[str, Any]:
        from scenarios import feeds

        data = super().clean() or {}
        # The service's name rule, here so that it is the form's error, not a 500 (on the change page the team
        # is read-only, so the form's own unique check leaves the team out).
        team = self.instance.team if self.instance.pk is not None else data.get("team")
        name = data.get("name")
        if name and PriceFeed.objects.filter(team=team, name=name).exclude(pk=self.instance.pk).exists():
            self.add_error("name", f"a feed named {name!r} exists already")
        every_s, spec = data.get("every_s"), (data.get("crontab") or "").strip() or None
        if every_s is None and spec is None:
            if self.instance.pk is None:
                self.add_error("every_s", "give every_s or a crontab")
            data["schedule"] = None
            return data
        try:
            data["schedule"] = feeds.schedule_clean({"every_s": every_s, "crontab": spec})
        except ValidationError as exc:
            self.add_error(None, "; ".join(f"{k}: {'; '.join(v)}" for k, v in exc.message_dict.items()))
        return data


@admin.register(PriceFeed)
class PriceFeedAdmin(admin.ModelAdmin):
    """Feeds through the same service as the API and ``manage.py price_feed`` (a global feed: no team)."""

    form = PriceFeedForm
    list_display = ("name", "team", "source", "mode", "enabled", "schedule", "last_status", "last_checked_at")
    list_filter = ("last_status", "enabled", "team")
    search_fields = ("name", "source")
    readonly_fields = (
        "schedule",
        *PRICE_FEED_POLL_STATE_FIELDS,
        "created_by",
        "created_at",
        "updated_at",
    )
    actions = ("poll_now",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A feed stays in its scope: its team's book (or the global book) is the one it publishes.
        return (*self.readonly_fields, "team") if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        from scenarios import feeds

        data = form.cleaned_data
        fields = {name: data[name] for name in ("name", "source", "format", "mode", "enabled")}
        if change:
            saved = feeds.feed_update(feed=obj, schedule=data.get("schedule"), **fields)
        else:
            saved = feeds.feed_create(
                team=data.get("team"), user=request.user, schedule=data["schedule"], **fields
            )
        obj.pk = saved.pk
        obj.refresh_from_db()

    @admin.action(description="Poll the selected feeds now", permissions=["change"])
    def poll_now(self, request: HttpRequest, queryset: Any) -> None:
        from scenarios import feeds

        outcomes = [feeds.poll(feed_id=feed.pk, force=True).status for feed in queryset]
        self.message_user(request, f"polled {len(outcomes)} feeds: {', '.join(outcomes) or 'none'}")
