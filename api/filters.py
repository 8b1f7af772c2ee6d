"""Filters for the list endpoints (django-filter), documented in the schema from these classes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django.db.models import Exists, OuterRef, QuerySet
from rest_framework import serializers

from scenarios.models import RUN_KIND_CHOICES, STATUS_CHOICES, TRIGGER_CHOICES, Plan, PriceBook, Result, Run

MAX_ID = 2**63 - 1


class IdFilter(django_filters.NumberFilter):
    """An integer id; values outside a database id's range match nothing instead of failing."""

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        if value is not None and (value != int(value) or not 1 <= value <= MAX_ID):
            return qs.none()
        return super().filter(qs, None if value is None else int(value))


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 instant, compared in UTC.

    Python accepts UTC offsets up to ±24 h; PostgreSQL refuses beyond ±15:59, so the instant is converted to
    UTC before it reaches the query (and one too close to year 1 or 9999 to convert is a 400).
    """

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        if value is not None:
            try:
                value = value.astimezone(dt.UTC)
            except (OverflowError, ValueError):
                raise serializers.ValidationError(
                    {self.field_name: ["the instant is outside the range that can be stored"]}
                ) from None
        return super().filter(qs, value)


class ScenarioFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains", max_length=200)
    archived = django_filters.BooleanFilter(
        method="filter_archived", label="true: only archived; false (default): only live ones."
    )

    def filter_archived(self, qs: QuerySet[Any], name: str, value: bool | None) -> QuerySet[Any]:
        return qs if value is None else qs.filter(archived_at__isnull=not value)

    @property
    def qs(self) -> QuerySet[Any]:
        queryset = super().qs
        if self.form.cleaned_data.get("archived") is None:
            queryset = queryset.filter(archived_at__isnull=True)
        return queryset


def scenario_filter_for(model: type[Any]) -> type[ScenarioFilter]:
    meta = type("Meta", (), {"model": model, "fields": []})
    return type(f"{model.__name__}Filter", (ScenarioFilter,), {"Meta": meta})


class PlanFilter(ScenarioFilter):
    cluster = IdFilter(field_name="cluster_id")
    model = IdFilter(field_name="model_id")
    site = IdFilter(field_name="site_id")
    auto_rerun = django_filters.BooleanFilter()

    class Meta:
        model = Plan
        fields: tuple[str, ...] = ()


class RunFilter(django_filters.FilterSet):
    plan = IdFilter(field_name="plan_id")
    team = IdFilter(field_name="team_id")
    status = django_filters.ChoiceFilter(choices=STATUS_CHOICES)
    trigger = django_filters.ChoiceFilter(choices=TRIGGER_CHOICES)
    kind = django_filters.ChoiceFilter(choices=RUN_KIND_CHOICES)

    class Meta:
        model = Run
        fields: tuple[str, ...] = ()


class ResultFilter(django_filters.FilterSet):
    plan = IdFilter(field_name="plan_id")
    team = IdFilter(field_name="team_id")
    latest = django_filters.BooleanFilter(
        method="filter_latest", label="true: only each plan's latest result; false: only earlier versions."
    )
    trigger = django_filters.ChoiceFilter(
        choices=TRIGGER_CHOICES, method="filter_trigger", label="Results produced by a run with this trigger."
    )
    price_book_version = IdFilter(
        field_name="price_book__version", label="Version of the (global) price book the result used."
    )
    team_price_book_version = IdFilter(
        field_name="team_price_book__version", label="Version of the team's price book the result used."
    )
    solver_version = django_filters.CharFilter(max_length=64)
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Result
        fields: tuple[str, ...] = ()

    def filter_latest(self, qs: QuerySet[Any], name: str, value: bool | None) -> QuerySet[Any]:
        if value is None:
            return qs
        latest = Exists(Plan.objects.filter(pk=OuterRef("plan_id"), latest_result_id=OuterRef("pk")))
        return qs.filter(latest) if value else qs.exclude(latest)

    def filter_trigger(self, qs: QuerySet[Any], name: str, value: str | None) -> QuerySet[Any]:
        if not value:
            return qs
        return qs.filter(Exists(Run.objects.filter(result_id=OuterRef("pk"), trigger=value)))


class PriceBookFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    scope = django_filters.ChoiceFilter(
        choices=[("team", "team books"), ("global", "global books")], method="filter_scope"
    )
    version = IdFilter(field_name="version")

    class Meta:
        model = PriceBook
        fields: tuple[str, ...] = ()

    def filter_scope(self, qs: QuerySet[Any], name: str, value: str | None) -> QuerySet[Any]:
        if not value:
            return qs
        return qs.filter(team__isnull=value == "global")
