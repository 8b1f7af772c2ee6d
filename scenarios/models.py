"""Persistence of teams, scenarios with revisions, plans, price books, runs and append-only results.

Postgres is the source of truth; Redis only carries run ids. Rows that other rows are computed from
(revisions, published price books and their entries, results) are immutable: the model refuses to re-save
them and the database refuses UPDATE (and DELETE for results and price books) with triggers installed by
the migrations.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scenarios.errors import ImmutableRowError
from solvers.prices import (
    PRICE_ACCELERATOR,
    PRICE_CLOUD,
    PRICE_ELECTRICITY,
    PRICE_NODE,
    PRICE_UNITS,  # noqa: F401  (re-exported: services and serializers read units here)
)
from solvers.prices import PRICE_KIND_CHOICES as PRICE_KIND_CHOICES_TABLE

ROLE_VIEWER = "viewer"
ROLE_EDITOR = "editor"
ROLE_ADMIN = "admin"
ROLE_CHOICES = [(ROLE_VIEWER, "viewer"), (ROLE_EDITOR, "editor"), (ROLE_ADMIN, "admin")]
# Higher rank includes the permissions of lower ranks.
ROLE_RANK = {ROLE_VIEWER: 0, ROLE_EDITOR: 1, ROLE_ADMIN: 2}


class Team(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # {headline figure: fraction}: a stored result whose figure moved by at least that fraction of the
    # previous result of the same kind raises a ``figure.moved`` event (scenarios.events.THRESHOLD_FIGURES).
    alert_thresholds = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]  # noqa: RUF012

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=ROLE_CHOICES, default=ROLE_VIEWER)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user"),
            models.CheckConstraint(
                condition=Q(role__in=[ROLE_VIEWER, ROLE_EDITOR, ROLE_ADMIN]), name="membership_role_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.user_id}@{self.team_id}:{self.role}"

    def allows(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


# --- Scenarios and their revisions --------------------------------------------------------------------


class ImmutableModel(models.Model):
    """A row that is written once. ``save()`` on an existing row and ``delete()`` raise."""

    immutable_delete: ClassVar[bool] = True

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ImmutableRowError(f"{type(self).__name__} {self.pk} is immutable")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self.immutable_delete:
            raise ImmutableRowError(f"{type(self).__name__} {self.pk} cannot be deleted")
        return super().delete(*args, **kwargs)


class RevisionBase(ImmutableModel):
    """One immutable version of a scenario part's document; ``number`` counts 1..n per scenario."""

    # A scenario nobody depends on may be deleted with its history (services.scenario_delete).
    immutable_delete = False

    number = models.PositiveIntegerField()
    document = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        abstract = True
        ordering = ["scenario_id", "-number"]  # noqa: RUF012

    def __str__(self) -> str:
        return f"{self.scenario_id} r{self.number}"  # type: ignore[attr-defined]


class ScenarioBase(models.Model):
    """A named, team-owned part of a scenario document; the current content is ``latest_revision``."""

    kind: ClassVar[str] = ""
    part: ClassVar[str] = ""  # the key of the scenario document this scenario fills

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["name"]  # noqa: RUF012

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def document(self) -> dict[str, Any]:
        rev = self.latest_revision  # type: ignore[attr-defined]
        return dict(rev.document) if rev is not None else {}


class ClusterScenario(ScenarioBase):
    kind = "cluster"
    part = "cluster"
    latest_revision = models.ForeignKey(
        "ClusterRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=Q(archived_at__isnull=True),
                name="cluster_unique_live_name",
            ),
        )


class ClusterRevision(RevisionBase):
    scenario = models.ForeignKey(ClusterScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="cluster_revision_unique_number"),
        )


class ModelScenario(ScenarioBase):
    kind = "model"
    part = "model"
    latest_revision = models.ForeignKey(
        "ModelRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="model_unique_live_name"
            ),
        )


class ModelRevision(RevisionBase):
    scenario = models.ForeignKey(ModelScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="model_revision_unique_number"),
        )


class SiteScenario(ScenarioBase):
    kind = "site"
    part = "site"
    latest_revision = models.ForeignKey(
        "SiteRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="site_unique_live_name"
            ),
        )


class SiteRevision(RevisionBase):
    scenario = models.ForeignKey(SiteScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="site_revision_unique_number"),
        )


SCENARIO_MODELS: dict[str, type[ScenarioBase]] = {
    "cluster": ClusterScenario,
    "model": ModelScenario,
    "site": SiteScenario,
}


# --- Plans --------------------------------------------------------------------------------------------


class Plan(models.Model):
    """Cluster + model + site (each pinned to a revision, or following the latest) + training choices."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="plans")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    cluster = models.ForeignKey(ClusterScenario, on_delete=models.PROTECT, related_name="plans")
    model = models.ForeignKey(ModelScenario, on_delete=models.PROTECT, related_name="plans")
    site = models.ForeignKey(SiteScenario, on_delete=models.PROTECT, related_name="plans")
    # Null: follow the scenario's latest revision.
    cluster_revision = models.ForeignKey(
        ClusterRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    model_revision = models.ForeignKey(
        ModelRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    site_revision = models.ForeignKey(
        SiteRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    training = models.JSONField(default=dict, blank=True)
    economics = models.JSONField(default=dict, blank=True)
    auto_rerun = models.BooleanField(default=False)
    # Selects "<provider>:<accelerator>" cloud prices in the price book (empty: the accelerator's price).
    cloud_provider = models.CharField(max_length=64, blank=True, default="")
    # The newest stored result, kept here so lists and the price fan-out need no per-plan subquery.
    latest_result = models.ForeignKey(
        "Result", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="plan_unique_live_name"
            ),
        )
        indexes = (
            models.Index(
                fields=["auto_rerun"], condition=Q(archived_at__isnull=True), name="plan_auto_rerun"
            ),
        )

    def __str__(self) -> str:
        return self.name


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
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
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
    # electricity: region key or "site:<site scenario name>".
    key = models.CharField(max_length=200)
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


# --- Runs and results ---------------------------------------------------------------------------------

RUN_KIND_SOLVE = "solve"
RUN_KIND_SEARCH = "search"
RUN_KIND_SWEEP = "sweep"
RUN_KIND_CHOICES = [(RUN_KIND_SOLVE, "solve"), (RUN_KIND_SEARCH, "search"), (RUN_KIND_SWEEP, "sweep")]

TRIGGER_USER = "user"
TRIGGER_API = "api"
TRIGGER_PRICE_CHANGE = "price_change"
TRIGGER_SCHEDULE = "schedule"
TRIGGER_CHOICES = [
    (TRIGGER_USER, "user"),
    (TRIGGER_API, "api"),
    (TRIGGER_PRICE_CHANGE, "price change"),
    (TRIGGER_SCHEDULE, "schedule"),
]
AUTOMATIC_TRIGGERS = [TRIGGER_PRICE_CHANGE, TRIGGER_SCHEDULE]

STATUS_QUEUED = "queued"
STATUS_RUNNING = "running"
STATUS_SUCCEEDED = "succeeded"
STATUS_FAILED = "failed"
STATUS_CHOICES = [
    (STATUS_QUEUED, "queued"),
    (STATUS_RUNNING, "running"),
    (STATUS_SUCCEEDED, "succeeded"),
    (STATUS_FAILED, "failed"),
]
ACTIVE_STATUSES = [STATUS_QUEUED, STATUS_RUNNING]
DEFAULT_MAX_ATTEMPTS = 3


class Run(models.Model):
    """A mutable job row. The worker claims it with a conditional UPDATE; ``attempts`` is stored here, not in
    the broker, so a task that kills its worker every time still ends ``failed`` after ``max_attempts``."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="runs")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=16, choices=RUN_KIND_CHOICES, default=RUN_KIND_SOLVE)
    trigger = models.CharField(max_length=16, choices=TRIGGER_CHOICES, default=TRIGGER_API)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=STATUS_QUEUED)
    # Search and sweep parameters (objective, axes); empty for a plain solve.
    params = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=DEFAULT_MAX_ATTEMPTS)
    error = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    queued_at = models.DateTimeField(default=timezone.now)
    # Last time a message for this run was handed to the broker (the sweeper re-sends after a while).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The Celery delivery that holds the claim: a redelivery of the same message after its worker died
    # (same task id, same retry count) counts a new attempt; the task's own retry (retry count + 1) after
    # a database or broker error resumes the claim without counting one.
    claim_task_id = models.CharField(max_length=64, blank=True, default="")
    claim_retries = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, default="")
    points_done = models.PositiveIntegerField(default=0)
    points_total = models.PositiveIntegerField(default=0)
    # The newest price book in effect for the plan when an automatic run was created.
    price_book = models.ForeignKey(
        PriceBook, on_delete=models.PROTECT, null=True, blank=True, related_name="runs"
    )
    # For automatic runs: the canonical hash of the priced scenario document the run was created for
    # (with plan and price book, the deduplication key of automatic runs; not the result's input_hash,
    # which is the hash of the resolved document).
    input_hash = models.CharField(max_length=64, blank=True, default="")
    result = models.ForeignKey("Result", on_delete=models.PROTECT, null=True, blank=True, related_name="runs")

    class Meta:
        ordering = ["-queued_at", "-id"]  # noqa: RUF012
        constraints = (
            models.CheckConstraint(
                condition=Q(status__in=[STATUS_QUEUED, STATUS_RUNNING, STATUS_SUCCEEDED, STATUS_FAILED]),
                name="run_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(trigger__in=[TRIGGER_USER, TRIGGER_API, TRIGGER_PRICE_CHANGE, TRIGGER_SCHEDULE]),
                name="run_trigger_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[RUN_KIND_SOLVE, RUN_KIND_SEARCH, RUN_KIND_SWEEP]), name="run_kind_valid"
            ),
            # Two beat processes (or a publish and the nightly check) racing for the same plan, price book
            # and inputs create one automatic run: the second INSERT conflicts and is skipped.
            models.UniqueConstraint(
                fields=["plan", "price_book", "input_hash"],
                condition=Q(trigger__in=AUTOMATIC_TRIGGERS),
                nulls_distinct=False,
                name="run_one_automatic_per_plan_price_book",
            ),
        )
        indexes = (
            # The sweeper scans only active runs.
            models.Index(
                fields=["status", "queued_at"], condition=Q(status__in=ACTIVE_STATUSES), name="run_active"
            ),
            models.Index(fields=["plan", "-queued_at"], name="run_plan_recent"),
            models.Index(fields=["team", "-queued_at"], name="run_team_recent"),
        )

    def __str__(self) -> str:
        return f"run {self.pk} {self.kind} {self.status}"

    @property
    def finished(self) -> bool:
        return self.status in (STATUS_SUCCEEDED, STATUS_FAILED)


class SweepChunk(models.Model):
    """One chunk of a sweep's points: a row claimed like a run (``execution.claim_rows``: the same claim
    columns and the same three conditional UPDATEs), so a chunk delivered twice is solved once while its
    holder lives, its attempts are counted in Postgres (a chunk that kills its worker every time fails the
    sweep after ``max_attempts``), and its rows are recorded once (``status`` done, conditional UPDATE).
    Rows belong to one set of frozen inputs (``input_hash``); freezing other inputs replaces the chunks."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="sweep_chunks")
    index = models.PositiveIntegerField()
    input_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=STATUS_QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=DEFAULT_MAX_ATTEMPTS)
    error = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claim_task_id = models.CharField(max_length=64, blank=True, default="")
    claim_retries = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True, default="")
    # The chunk's sweep rows (one per point) once recorded; kept until the sweep's result stores them all.
    rows = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "index"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(fields=["run", "index"], name="sweep_chunk_unique_index"),
            models.CheckConstraint(
                condition=Q(status__in=[STATUS_QUEUED, STATUS_RUNNING, STATUS_SUCCEEDED, STATUS_FAILED]),
                name="sweep_chunk_status_valid",
            ),
            # A recorded chunk has its rows.
            models.CheckConstraint(
                condition=~Q(status=STATUS_SUCCEEDED) | Q(rows__isnull=False),
                name="sweep_chunk_done_has_rows",
            ),
        )

    def __str__(self) -> str:
        return f"run {self.run_id} chunk {self.index} {self.status}"


class Result(ImmutableModel):
    """An append-only solved report with its provenance. Unique on (plan, input_hash, solver_version):
    solving unchanged inputs again with the same solver returns this row; a new solver stores new numbers.
    ``version`` counts 1..n per plan without gaps, across kinds; ``previous`` and ``delta`` refer to the
    previous result of the same kind (a solve is compared with the last solve, not with a sweep)."""

    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="results")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="results")
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=RUN_KIND_CHOICES, default=RUN_KIND_SOLVE)
    input_snapshot = models.JSONField()
    # Which price came from where: {"<path>": {"value", "unit", "origin": "scenario|team_book|global_book|
    # catalog", "price_book": id|null, "price_book_version": n|null, "key", "source"}}.
    prices = models.JSONField(default=dict)
    input_hash = models.CharField(max_length=64)
    solver_version = models.CharField(max_length=64)
    # The price books in effect when the inputs were resolved (global and the team's override).
    price_book = models.ForeignKey(
        PriceBook, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    team_price_book = models.ForeignKey(
        PriceBook, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    cluster_revision = models.ForeignKey(ClusterRevision, on_delete=models.PROTECT, related_name="results")
    model_revision = models.ForeignKey(ModelRevision, on_delete=models.PROTECT, related_name="results")
    site_revision = models.ForeignKey(SiteRevision, on_delete=models.PROTECT, related_name="results")
    report = models.JSONField()
    previous = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    delta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Promoted from the report for lists, filters and compare.
    step_s = models.FloatField(null=True, blank=True)
    mfu = models.FloatField(null=True, blank=True)
    total_usd = models.FloatField(null=True, blank=True)
    usd_per_million_tokens = models.FloatField(null=True, blank=True)
    total_kgco2e = models.FloatField(null=True, blank=True)
    wall_clock_days = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "-version"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(
                fields=["plan", "input_hash", "solver_version"], name="result_unique_plan_input_solver"
            ),
            models.UniqueConstraint(fields=["plan", "version"], name="result_unique_plan_version"),
            models.CheckConstraint(condition=Q(version__gte=1), name="result_version_positive"),
        )
        indexes = (
            models.Index(fields=["team", "-created_at"], name="result_team_recent"),
            models.Index(fields=["usd_per_million_tokens"], name="result_usd_per_mtok"),
            models.Index(fields=["total_kgco2e"], name="result_kgco2e"),
            models.Index(fields=["step_s"], name="result_step_s"),
        )

    def __str__(self) -> str:
        return f"plan {self.plan_id} v{self.version}"


# --- Events -------------------------------------------------------------------------------------------

EVENT_RESULT_STORED = "result.stored"
EVENT_FIGURE_MOVED = "figure.moved"
EVENT_RUN_FAILED = "run.failed"
EVENT_JOB_FINISHED = "job.finished"
EVENT_PRICE_BOOK_PUBLISHED = "price_book.published"
EVENT_SOLVER_CHANGED = "solver.changed"
EVENT_PRICE_FEED_FAILED = "price_feed.failed"
EVENT_WEBHOOK_DISABLED = "webhook.disabled"
EVENT_KIND_CHOICES = [
    (EVENT_RESULT_STORED, "a result was stored (with its headline deltas)"),
    (EVENT_FIGURE_MOVED, "a headline figure moved past a team threshold"),
    (EVENT_RUN_FAILED, "a run failed"),
    (EVENT_JOB_FINISHED, "a search or sweep finished"),
    (EVENT_PRICE_BOOK_PUBLISHED, "a price book was published (entries changed, plans to re-run)"),
    (EVENT_SOLVER_CHANGED, "a new solver version stored its first result for the team"),
    (EVENT_PRICE_FEED_FAILED, "a price feed could not be read or was refused"),
    (EVENT_WEBHOOK_DISABLED, "a webhook endpoint was disabled after consecutive failures"),
]
EVENT_KINDS = tuple(kind for kind, _ in EVENT_KIND_CHOICES)


class ClockTimestamp(models.Func):
    """PostgreSQL's ``clock_timestamp()``: the time the statement reaches the row, not the transaction's start."""

    template = "clock_timestamp()"
    output_field = models.DateTimeField()


class Event(ImmutableModel):
    """Something a team may want to hear about, written in the same transaction as its cause (an outbox):
    a committed cause always has its event and a rolled-back one never does. ``uid`` is the stable public
    id (``evt_<hex>``) a receiver deduplicates by; ``id`` orders the feed. ``team`` null: a global event
    (the global price book), visible to every team. ``dedupe_key`` makes an event that two paths could
    raise (a retried store, a second fan-out) exist once."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=40, choices=EVENT_KIND_CHOICES)
    # Plain ids, not foreign keys: an event outlives what it speaks of and is never updated.
    plan_id = models.BigIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)
    result_id = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField(default=dict)
    dedupe_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    # The database's clock when the row is written (not the transaction's start, not an app server's clock):
    # the feed's tail shows an event only once no transaction still open could hold a lower id (api.views.events).
    created_at = models.DateTimeField(db_default=ClockTimestamp())

    class Meta:
        ordering = ["-id"]  # noqa: RUF012
        constraints = (models.CheckConstraint(condition=Q(kind__in=EVENT_KINDS), name="event_kind_valid"),)
        indexes = (
            models.Index(fields=["team", "-id"], name="event_team_recent"),
            models.Index(fields=["team", "kind", "-id"], name="event_team_kind_recent"),
            models.Index(fields=["plan_id", "-id"], name="event_plan_recent"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.public_id}"

    @property
    def public_id(self) -> str:
        return f"evt_{self.uid.hex}"


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
