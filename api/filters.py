"""Filters for the list endpoints (django-filter), documented in the schema from these classes.

Every list has a filterset here, and a query parameter that is none of its filters, the ordering or the
pagination is refused with 400 naming it (``api.views.base.PlannerViewMixin.check_query_params``), as is
an ordering on a field the list does not offer (``StrictOrderingFilter``): a typo never silently returns
the unfiltered list."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet
from rest_framework import serializers
from rest_framework.filters import OrderingFilter

from api.models import ApiToken
from integrations.models import Endpoint
from scenarios.models import (
    PRICE_MODE_CHOICES,
    ROLE_CHOICES,
    RUN_KIND_CHOICES,
    STATUS_CHOICES,
    TRIGGER_CHOICES,
    ClusterScenario,
    Membership,
    ModelScenario,
    Plan,
    PriceBook,
    PriceFeed,
    Result,
    Run,
    SiteScenario,
    Team,
)

MAX_ID = 2**63 - 1


class IdFilter(django_filters.NumberFilter):
    """An integer id; values outside a database id's range match nothing instead of failing."""

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        if value is not None and (value != int(value) or not 1 <= value <= MAX_ID):
            return qs.none()
        return super().filter(qs, None if value is None else int(value))


class CountFilter(django_filters.NumberFilter):
    """A whole number (a count in a scenario document, compared as JSON: a Decimal is not JSON)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", 2**31)
        super().__init__(*args, **kwargs)


class StrictBooleanField(forms.Field):
    """``true`` or ``false`` (any case), or nothing. django-filter's boolean reads any other value, ``1`` or a
    typo such as ``ture``, as "no filter", so ``?current=1`` listed the stale results too."""

    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        text = str(value).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise forms.ValidationError("must be true or false")


class BooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


_SUB_MICROSECOND = re.compile(r"[.,]\d{7,}")


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 instant, converted to UTC (PostgreSQL refuses offsets beyond ±15:59, which Python accepts
    up to ±24 h); one too close to year 1 or 9999 to convert is refused, under the parameter's own name."""

    def to_python(self, value: Any) -> dt.datetime | None:
        if isinstance(value, str) and _SUB_MICROSECOND.search(value):
            # stored instants are to the microsecond: read as one, 12:00:00.0000005 would move ``until`` back
            raise forms.ValidationError("at most 6 decimals of a second (microseconds)")
        instant = super().to_python(value)
        if instant is None:
            return None
        try:
            return instant.astimezone(dt.UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("the instant is outside the range that can be stored") from None


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 instant, compared in UTC (``UtcDateTimeField``)."""

    field_class = UtcDateTimeField


class ScenarioFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains", max_length=200)
    archived = BooleanFilter(
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


DOCUMENT = "latest_revision__document__"


class ClusterFilter(ScenarioFilter):
    """Clusters by what their latest revision's document says (as written: a ``node`` preset that implies
    the accelerator matches ``accelerator`` too, through the catalog)."""

    accelerator = django_filters.CharFilter(
        method="filter_accelerator", max_length=64, label="Accelerator key (e.g. h100-sxm), exact."
    )
    node = django_filters.CharFilter(
        field_name=f"{DOCUMENT}node", lookup_expr="iexact", max_length=64, label="Node preset key."
    )
    gpus = CountFilter(field_name=f"{DOCUMENT}gpus", label="GPU count, exact.")
    gpus_min = CountFilter(field_name=f"{DOCUMENT}gpus", lookup_expr="gte", label="At least this many GPUs.")
    gpus_max = CountFilter(field_name=f"{DOCUMENT}gpus", lookup_expr="lte", label="At most this many GPUs.")
    gpus_per_node = CountFilter(field_name=f"{DOCUMENT}gpus_per_node", label="GPUs per node, as written.")

    class Meta:
        model = ClusterScenario
        fields: tuple[str, ...] = ()

    def filter_accelerator(self, qs: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        if not value:
            return qs
        from solvers import catalog

        key = value.strip().lower()
        nodes = [node for node, spec in catalog.NODES.items() if spec.get("accelerator") == key]
        return qs.filter(
            Q(**{f"{DOCUMENT}accelerator__iexact": key})
            | Q(**{f"{DOCUMENT}accelerator__preset__iexact": key})  # a preset given its own values or name
            | (Q(**{f"{DOCUMENT}node__in": nodes}) & ~Q(**{f"{DOCUMENT}has_key": "accelerator"}))
        )


class ModelFilter(ScenarioFilter):
    preset = django_filters.CharFilter(
        field_name=f"{DOCUMENT}preset", lookup_expr="iexact", max_length=64, label="Model preset key."
    )

    class Meta:
        model = ModelScenario
        fields: tuple[str, ...] = ()


class SiteFilter(ScenarioFilter):
    region = django_filters.CharFilter(
        field_name=f"{DOCUMENT}region", lookup_expr="iexact", max_length=64, label="Region key (e.g. quebec)."
    )

    class Meta:
        model = SiteScenario
        fields: tuple[str, ...] = ()


class TeamFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", max_length=200)
    slug = django_filters.CharFilter(max_length=100)

    class Meta:
        model = Team
        fields: tuple[str, ...] = ()


class MemberFilter(django_filters.FilterSet):
    role = django_filters.ChoiceFilter(choices=ROLE_CHOICES)
    user = IdFilter(field_name="user_id")
    username = django_filters.CharFilter(field_name="user__username", lookup_expr="icontains", max_length=150)

    class Meta:
        model = Membership
        fields: tuple[str, ...] = ()


class InvitationFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")

    class Meta:
        model = Membership
        fields: tuple[str, ...] = ()


class ApiTokenFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    user = IdFilter(field_name="user_id")
    name = django_filters.CharFilter(lookup_expr="icontains", max_length=100)
    active = BooleanFilter(method="filter_active", label="true: usable now; false: revoked or expired.")

    class Meta:
        model = ApiToken
        fields: tuple[str, ...] = ()

    def filter_active(self, qs: QuerySet[Any], name: str, value: bool | None) -> QuerySet[Any]:
        if value is None:
            return qs
        active = ApiToken.objects.active().values("pk")
        return qs.filter(pk__in=active) if value else qs.exclude(pk__in=active)


class WebhookFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    enabled = BooleanFilter()
    plan = IdFilter(field_name="plan_id")

    class Meta:
        model = Endpoint
        fields: tuple[str, ...] = ()


class PriceFeedFilter(django_filters.FilterSet):
    team = IdFilter(field_name="team_id")
    enabled = BooleanFilter()
    mode = django_filters.ChoiceFilter(choices=PRICE_MODE_CHOICES)
    name = django_filters.CharFilter(lookup_expr="icontains", max_length=200)

    class Meta:
        model = PriceFeed
        fields: tuple[str, ...] = ()


class PlanFilter(ScenarioFilter):
    cluster = IdFilter(field_name="cluster_id")
    model = IdFilter(field_name="model_id")
    site = IdFilter(field_name="site_id")
    auto_rerun = BooleanFilter()
    cloud_provider = django_filters.CharFilter(lookup_expr="iexact", max_length=64)
    has_result = BooleanFilter(
        field_name="latest_result",
        lookup_expr="isnull",
        exclude=True,
        label="true: plans solved at least once.",
    )

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
    latest = BooleanFilter(
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
    kind = django_filters.ChoiceFilter(choices=RUN_KIND_CHOICES)
    current = BooleanFilter(
        method="filter_current",
        label="true: only results a run of their plan today would find again (same solver, inputs and "
        "prices); false: only stale ones.",
    )
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

    def filter_current(self, qs: QuerySet[Any], name: str, value: bool | None) -> QuerySet[Any]:
        """Currency is worked out, not stored (``scenarios.currency``): only a result made by this solver
        can be current, so the check runs on every such result. Not only the newest of each plan and kind: a
        plan whose inputs come back makes an earlier result current again, and two searches of one plan
        over different spaces are both current. Each distinct plan is resolved, and its identity for a kind
        and job options hashed, once; the rows read grow with the results of this solver."""
        if value is None:
            return qs
        from scenarios.currency import results_currency
        from solvers import SOLVER_VERSION

        candidates = list(qs.filter(solver_version=SOLVER_VERSION).values_list("pk", flat=True))
        current = [pk for pk, state in results_currency(candidates).items() if state.current]
        return qs.filter(pk__in=current) if value else qs.exclude(pk__in=current)


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


class StrictOrderingFilter(OrderingFilter):
    """DRF's ordering, except that a field the list does not offer is a 400 naming it (DRF drops it)."""

    def get_ordering(self, request: Any, queryset: QuerySet[Any], view: Any) -> Any:
        raw = request.query_params.get(self.ordering_param)
        if raw:
            fields = [part.strip() for part in raw.split(",")]
            valid = {name for name, _ in self.get_valid_fields(queryset, view, {"request": request})}
            unknown = [
                field for field in fields if (field[1:] if field.startswith("-") else field) not in valid
            ]
            if unknown:
                offered = ", ".join(sorted(valid)) or "none"
                raise serializers.ValidationError(
                    {
                        self.ordering_param: [
                            f"unknown field {', '.join(unknown)}; this list orders by: {offered}"
                        ]
                    }
                )
        ordering = super().get_ordering(request, queryset, view)
        # Ties (results of one fan-out share their created_at, re-priced ones their step_s and mfu) are broken
        # by id, so that paging through the list sees every row once.
        if ordering and not {"id", "-id", "pk", "-pk"} & set(ordering):
            ordering = [*ordering, "-id"]
        return ordering
