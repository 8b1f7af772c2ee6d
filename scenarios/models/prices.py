"""Price books with their entries, the re-runs a published book owes (``PriceFanOut``), and price feeds."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scenarios.models.plans import ImmutableModel, Team
from solvers.prices import (
    PRICE_ACCELERATOR,
    PRICE_CLOUD,
    PRICE_ELECTRICITY,
    PRICE_NODE,
)
from solvers.prices import PRICE_KIND_CHOICES as PRICE_KIND_CHOICES_TABLE

# --- Price books --------------------------------------------------------------------------------------

# One table of price kinds and units: the solver's price resolver (solvers.prices) owns it.
PRICE_KIND_CHOICES = list(PRICE_KIND_CHOICES_TABLE)

# How a version was made from the entries sent: patched onto the previous version of its scope, or replacing
# it. Either way the stored version holds the complete resulting entry set.
PRICE_MODE_PATCH = "patch"
PRICE_MODE_REPLACE = "replace"
PRICE_MODE_CHOICES = [
    (PRICE_MODE_PATCH, "patch: the entries were applied on top of the previous version (based_on)"),
    (PRICE_MODE_REPLACE, "replace: the entries are the whole book"),
]


class PriceBook(ImmutableModel):
    """A published, immutable sheet of prices. ``team`` null is the global book; a team book overrides it
    key by key. ``version`` counts 1..n per team (and for the global books).

    Each version's entries are the complete book in effect from its publication on, whatever its ``mode``
    (a patch stores the previous entries with its changes applied), so readers take the newest version's
    entries as they are."""

    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="price_books"
    )
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    notes = models.TextField(blank=True, default="")
    source = models.CharField(max_length=500, blank=True, default="")
    # PROTECT, not SET_NULL: the row is immutable (the database refuses the UPDATE that SET_NULL is), so its
    # author is deactivated rather than deleted, and the row keeps saying who wrote it.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    published_at = models.DateTimeField(default=timezone.now)
    # The default describes a book created without saying how (and the books published before modes
    # existed): its entries are the whole book. ``price_book_publish`` always states the mode.
    mode = models.CharField(max_length=8, choices=PRICE_MODE_CHOICES, default=PRICE_MODE_REPLACE)
    # The version a patch was applied to (null for a replace or the first version of its scope).
    based_on = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["team_id", "-version"]  # noqa: RUF012
        constraints = (
            # NULLS NOT DISTINCT: global books (team null) also count 1..n without duplicates.
            models.UniqueConstraint(
                fields=["team", "version"], name="price_book_unique_version", nulls_distinct=False
            ),
            models.CheckConstraint(
                condition=Q(mode__in=[PRICE_MODE_PATCH, PRICE_MODE_REPLACE]), name="price_book_mode_valid"
            ),
            # Only a patch rests on a previous version.
            models.CheckConstraint(
                condition=Q(mode=PRICE_MODE_PATCH) | Q(based_on__isnull=True),
                name="price_book_replace_not_based_on",
            ),
        )

    def __str__(self) -> str:
        scope = "global" if self.team_id is None else f"team {self.team_id}"
        return f"{scope} v{self.version} {self.name}"


class PriceEntry(ImmutableModel):
    price_book = models.ForeignKey(PriceBook, on_delete=models.PROTECT, related_name="entries")
    kind = models.CharField(max_length=16, choices=PRICE_KIND_CHOICES)
    # accelerator / node: catalog key; cloud: "<accelerator>" or "<provider>:<accelerator>";
    # electricity: region key or "site:<site scenario name>" (a name has at most 200 characters).
    key = models.CharField(max_length=len("site:") + 200)
    value = models.FloatField()
    unit = models.CharField(max_length=32)
    source = models.CharField(max_length=500, blank=True, default="")
    effective_date = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["price_book_id", "kind", "key"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(fields=["price_book", "kind", "key"], name="price_entry_unique_key"),
            models.CheckConstraint(
                condition=Q(kind__in=[PRICE_ACCELERATOR, PRICE_NODE, PRICE_CLOUD, PRICE_ELECTRICITY]),
                name="price_entry_kind_valid",
            ),
            models.CheckConstraint(condition=Q(value__gte=0), name="price_entry_value_non_negative"),
        )

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}={self.value} {self.unit}"


class PriceFanOut(models.Model):
    """The re-runs a published price book owes, as a row written in the book's own transaction: the work
    exists before any message does, so a broker that is down at publish, or restarts and forgets the
    message, delays the re-runs but cannot lose them. The sweeper sends a pending fan-out again until one
    delivery has created its runs (``done_at``); a delivery takes it with a conditional UPDATE on
    ``lease_expires_at`` (like a run), so two deliveries do not compare the plans twice at the same time, and
    the runs' unique constraint (plan, price book, input hash) keeps a repeated fan-out from duplicating."""

    price_book = models.OneToOneField(
        PriceBook, on_delete=models.CASCADE, primary_key=True, related_name="fan_out"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # When its message was last sent; NULL when the broker was down (the sweeper sends it on its next tick).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Deliveries whose worker was lost holding the lease (it expired): after ``runs.claims.FAN_OUT_MAX_LOST`` the
    # fan-out is given up (``done_at`` with ``error``) rather than sent again every minute for ever.
    lost_deliveries = models.PositiveIntegerField(default=0)
    # The task delivery (its Celery task id, which the task's own retries keep) holding the lease: its retry
    # after a database outage takes the fan-out again, whether or not the lease could be given back.
    holder = models.CharField(max_length=64, blank=True, default="")
    # Attempts that failed with an error the task retries (the database or the broker): past
    # ``runs.claims.FAN_OUT_MAX_FAILED`` (the retries of ``FAN_OUT_MAX_LOST`` messages) it is given up too.
    failed_attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    done_at = models.DateTimeField(null=True, blank=True)
    plans_changed = models.PositiveIntegerField(default=0)
    runs_created = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = (
            models.Index(
                fields=["enqueued_at"], name="price_fan_out_pending", condition=Q(done_at__isnull=True)
            ),
        )

    def __str__(self) -> str:
        state = "done" if self.done_at else "pending"
        return f"fan-out of price book {self.price_book_id} ({state})"


# --- Price feeds --------------------------------------------------------------------------------------

PRICE_FEED_FORMAT_AUTO = "auto"
PRICE_FEED_FORMAT_CSV = "csv"
PRICE_FEED_FORMAT_JSON = "json"
PRICE_FEED_FORMAT_CHOICES = [
    (PRICE_FEED_FORMAT_AUTO, "auto: by the file extension, else the content type, else the content"),
    (PRICE_FEED_FORMAT_CSV, "csv: the import_prices CSV (header kind,key,value[,unit,source,...])"),
    (PRICE_FEED_FORMAT_JSON, "json: the import_prices JSON (a list of entries or {entries: [...]})"),
]
PRICE_FEED_UNCHANGED = "unchanged"
PRICE_FEED_PUBLISHED = "published"
PRICE_FEED_REFUSED = "refused"
PRICE_FEED_UNREACHABLE = "unreachable"
PRICE_FEED_STATUS_CHOICES = [
    (PRICE_FEED_UNCHANGED, "unchanged: the content is the one last published; nothing was published"),
    (PRICE_FEED_PUBLISHED, "published: the content changed and a new version of the book was published"),
    (PRICE_FEED_REFUSED, "refused: the content is malformed or fails validation; the book in force stays"),
    (PRICE_FEED_UNREACHABLE, "unreachable: the source could not be read (connection, HTTP status, guard)"),
]


# What a feed's polls write (the rest is what its editors set): read-only in the API and the admin, left out of
# the audit log.
PRICE_FEED_POLL_STATE_FIELDS = (
    "last_checked_at",
    "last_success_at",
    "last_hash",
    "last_status",
    "last_error",
    "last_book",
)


class PriceFeed(models.Model):
    """A price source polled on a schedule (``scenarios.feeds``): new content publishes the next version of
    the team's book (``team`` null: the global book, registered by the operator only), unchanged content
    publishes nothing, malformed content is refused whole and leaves the book in force.

    ``source`` is an http(s) URL (requested through ``scenarios.outbound``) or a file path under a directory
    of ``settings.PRICE_FEED_DIRS`` (a team's feed: under ``<dir>/<team slug>/``). ``schedule`` is the
    django-celery-beat row that runs ``scenarios.poll_price_feed`` with this feed's id. The ``last_*`` fields are the state of the last poll;
    ``last_hash`` is the sha256 of the content the book in force came from (or that was last confirmed)."""

    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, null=True, blank=True, related_name="price_feeds"
    )
    name = models.CharField(max_length=200)
    source = models.CharField(max_length=2000)
    format = models.CharField(max_length=8, choices=PRICE_FEED_FORMAT_CHOICES, default=PRICE_FEED_FORMAT_AUTO)
    mode = models.CharField(max_length=8, choices=PRICE_MODE_CHOICES, default=PRICE_MODE_PATCH)
    schedule = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="price_feed",
    )
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_hash = models.CharField(max_length=64, blank=True, default="")
    last_status = models.CharField(max_length=12, choices=PRICE_FEED_STATUS_CHOICES, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    last_book = models.ForeignKey(
        PriceBook, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["team_id", "name"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], name="price_feed_unique_name", nulls_distinct=False
            ),
            models.CheckConstraint(
                condition=Q(
                    format__in=[PRICE_FEED_FORMAT_AUTO, PRICE_FEED_FORMAT_CSV, PRICE_FEED_FORMAT_JSON]
                ),
                name="price_feed_format_valid",
            ),
            models.CheckConstraint(
                condition=Q(mode__in=[PRICE_MODE_PATCH, PRICE_MODE_REPLACE]), name="price_feed_mode_valid"
            ),
            models.CheckConstraint(
                condition=Q(
                    last_status__in=[
                        "",
                        PRICE_FEED_UNCHANGED,
                        PRICE_FEED_PUBLISHED,
                        PRICE_FEED_REFUSED,
                        PRICE_FEED_UNREACHABLE,
                    ]
                ),
                name="price_feed_status_valid",
            ),
        )

    def __str__(self) -> str:
        scope = "global" if self.team_id is None else f"team {self.team_id}"
        return f"{scope} feed {self.name}"


def _price_feed_deleted(sender: Any, instance: PriceFeed, **kwargs: Any) -> None:
    """A feed's schedule goes with it, however the feed was deleted (the API, the admin, its team's
    deletion): ``PeriodicTask.delete`` also tells beat that its schedule changed."""
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.filter(pk=instance.schedule_id).first() if instance.schedule_id else None
    if task is not None:
        task.delete()


models.signals.post_delete.connect(_price_feed_deleted, sender=PriceFeed, dispatch_uid="price_feed_deleted")
