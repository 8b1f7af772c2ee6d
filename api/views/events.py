"""GET /events/: the change feed of the caller's teams, newest first, cursor-paginated; ``?after=`` tails it."""

from __future__ import annotations

import uuid
from typing import Any

import django_filters
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination

from api.filters import MAX_ID, IdFilter, UtcDateTimeFilter
from api.limits import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, is_id_text
from api.permissions import team_roles
from api.serializers.events import EventSerializer
from api.views.base import TeamScopedViewSetMixin
from scenarios.models import EVENT_KIND_CHOICES, Event

PUBLIC_PREFIX = "evt_"
# The header of the feed's pages that says where tailing (``?after=``) may start without skipping an event.
SETTLED_HEADER = "Events-Settled-Through"


def feed_of(request: Any) -> QuerySet[Event]:
    """The events the caller may read: its teams' and the global ones."""
    return Event.objects.filter(Q(team_id__in=list(team_roles(request))) | Q(team__isnull=True))


def event_pk(public_id: str, *, name: str, feed: QuerySet[Event]) -> int:
    """The ordering id of the event with this public id in ``feed`` (400 naming ``name`` when there is none
    there: another team's event is answered as one that does not exist)."""
    raw = public_id[len(PUBLIC_PREFIX) :] if public_id.startswith(PUBLIC_PREFIX) else ""
    try:
        uid = uuid.UUID(hex=raw)
    except ValueError:
        raise serializers.ValidationError({name: ["must be an event id evt_<32 hex digits>"]}) from None
    pk = feed.filter(uid=uid).values_list("pk", flat=True).first()
    if pk is None:
        raise serializers.ValidationError({name: ["no such event"]})
    return int(pk)


# The tail shows an event only once no transaction still open can commit one with a lower id, or a client
# reading forward from the newest event it saw would skip that one for good. Ids are taken when a row is
# written and ``created_at`` is the database clock at that moment; an open transaction that has written
# anything started at or after the oldest ``xact_start`` of such transactions, so every id it holds or will
# take is higher than those of events written before then. One second of margin covers the microseconds
# between a row's clock reading and its id. Only sessions on this database count: a transaction on another
# database of the same server cannot write an event here. (The service's role must see its own sessions in
# pg_stat_activity, which it always does; webhooks use the dispatcher's own horizon instead.)
SETTLED_BEFORE_SQL = (
    "(SELECT COALESCE(MIN(xact_start), clock_timestamp()) FROM pg_stat_activity "
    "WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() AND datname = current_database())"
    " - interval '1 second'"
)


class EventFilter(django_filters.FilterSet):
    plan = IdFilter(field_name="plan_id")
    team = IdFilter(field_name="team_id")
    kind = django_filters.MultipleChoiceFilter(choices=EVENT_KIND_CHOICES)
    since = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label="Events at or after (ISO 8601)."
    )
    until = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", label="Events before (ISO 8601).")
    after = django_filters.CharFilter(
        method="filter_after",
        max_length=40,
        label="Tail the feed: only events newer than this event id (evt_...), oldest first; an event shows "
        "here once no transaction still open could commit an older one (about a second after it is written).",
    )

    class Meta:
        model = Event
        fields: tuple[str, ...] = ()

    def filter_after(self, qs: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        if not value:
            return qs
        after = event_pk(value, name="after", feed=feed_of(self.request))
        return qs.filter(pk__gt=after, created_at__lt=RawSQL(SETTLED_BEFORE_SQL, []))


class EventCursorPagination(CursorPagination):
    """A cursor over the ordering id: rows inserted while a client pages never shift its pages."""

    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_ordering(self, request: Any, queryset: Any, view: Any) -> tuple[str, ...]:
        # Tailing reads forward from a known event; the feed otherwise reads newest first.
        return ("id",) if request.query_params.get("after") else ("-id",)

    def decode_cursor(self, request: Any) -> Any:
        """DRF's cursor, whose position is an event's id: a cursor whose position is not one (a tampered
        ``p=abc``) is DRF's "Invalid cursor" 404, like any other cursor it cannot read (it was a 500)."""
        cursor = super().decode_cursor(request)
        position = None if cursor is None else cursor.position
        if position is not None and not (is_id_text(str(position)) and int(position) <= MAX_ID):
            raise NotFound(self.invalid_cursor_message)
        return cursor


FEED_DESCRIPTION = f"""The change feed of your teams and the global events: results stored (with their headline
deltas), figures that moved past a team threshold, failed runs, finished searches and sweeps, price books
published (entries changed, plans to re-run), solver changes, price feeds refused, webhooks disabled.

Newest first, cursor-paginated (`next`/`previous`); `?after=evt_...` reads forward from an event (oldest
first), for clients that tail the feed: start from the event the `{SETTLED_HEADER}` header names. Filters:
`plan`, `team`, `kind` (repeatable), `since`, `until`."""


@extend_schema_view(
    list=extend_schema(
        tags=["events"],
        description=FEED_DESCRIPTION,
        parameters=[
            OpenApiParameter(
                "cursor", OpenApiTypes.STR, description="The opaque cursor of the next or previous page."
            ),
            OpenApiParameter(
                SETTLED_HEADER,
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                response=True,
                description="The newest of your events that no open transaction can precede (evt_...): "
                "start tailing with ?after= from it, not from the newest event listed, which an event still "
                "committing may precede.",
            ),
        ],
    ),
    retrieve=extend_schema(
        tags=["events"],
        description="One event of your teams (or a global one) by its id (evt_...).",
        parameters=[OpenApiParameter("id", OpenApiTypes.STR, "path")],
    ),
)
class EventViewSet(
    TeamScopedViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The change feed (``FEED_DESCRIPTION``)."""

    serializer_class = EventSerializer
    filterset_class = EventFilter
    pagination_class = EventCursorPagination
    # the feed has one order (newest first, or oldest first after ?after=): no ordering parameter
    filter_backends = (DjangoFilterBackend,)
    lookup_value_regex = r"evt_[0-9a-fA-F]{32}"

    def base_queryset(self) -> QuerySet[Event]:
        return Event.objects.all()

    def get_queryset(self) -> QuerySet[Event]:
        if getattr(self, "swagger_fake_view", False):
            return Event.objects.none()
        return feed_of(self.request)

    def get_object(self) -> Event:
        pk = self.kwargs[self.lookup_url_kwarg or self.lookup_field]
        uid = uuid.UUID(hex=str(pk)[len(PUBLIC_PREFIX) :])
        event = self.get_queryset().filter(uid=uid).first()
        if event is None:
            raise NotFound("No such event among your teams' events.")
        return event

    def check_object_permissions(self, request: Any, obj: Any) -> None:
        return None  # reading: the queryset is already the caller's teams and the global events

    def list(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # The page, and in the SETTLED_HEADER header the newest of the caller's events that no transaction
        # still open can precede: where a client starts tailing with ?after=. The newest event listed may not
        # be that one: an event of a transaction that started earlier can still commit with a smaller id.
        response = super().list(request, *args, **kwargs)
        settled = (
            feed_of(request)
            .filter(created_at__lt=RawSQL(SETTLED_BEFORE_SQL, []))
            .order_by("-id")
            .values_list("uid", flat=True)
            .first()
        )
        if settled is not None:
            response[SETTLED_HEADER] = f"{PUBLIC_PREFIX}{settled.hex}"
        return response
