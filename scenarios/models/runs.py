"""Runs (mutable job rows claimed with conditional UPDATEs), sweep chunks, and append-only results."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scenarios.models.plans import ClusterRevision, ImmutableModel, ModelRevision, Plan, SiteRevision, Team
from scenarios.models.prices import PriceBook

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
            # and inputs create one automatic run: the second INSERT conflicts and is skipped. A failed run
            # does not count: its inputs still have no result, and the nightly check queues them again
            # (``fanout.AUTOMATIC_FAILURES_PER_INPUT`` bounds how often).
            models.UniqueConstraint(
                fields=["plan", "price_book", "input_hash"],
                condition=Q(trigger__in=AUTOMATIC_TRIGGERS) & ~Q(status=STATUS_FAILED),
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
