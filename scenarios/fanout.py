"""Automatic re-runs: after a price book is published, and nightly for plans marked ``auto_rerun``.

Both create their runs with one bulk INSERT that skips conflicts with the unique constraint on
(plan, price book, input hash) for automatic triggers, so two beat processes, a repeated fan-out message or
a publish followed by the nightly check still produce one re-run per plan and price-book version. Plans
whose current inputs already have a result stored by the current solver (``solvers.SOLVER_VERSION``) get no
run at all; after a solver change they are re-run, so the new solver's numbers are stored.

Which plans a price book re-runs is decided in one place, ``plans_with_price_changes``: the fan-out queues
those plans and the publish answer counts them (``plans_to_rerun``).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, F, PositiveIntegerField, Q, When
from django.utils import timezone

from scenarios import adapters, conf, pricing, queue
from scenarios.models import (
    AUTOMATIC_TRIGGERS,
    DEFAULT_MAX_ATTEMPTS,
    RUN_KIND_SOLVE,
    STATUS_QUEUED,
    TRIGGER_PRICE_CHANGE,
    TRIGGER_SCHEDULE,
    ClusterRevision,
    ModelRevision,
    Plan,
    PriceBook,
    PriceFanOut,
    Result,
    SiteRevision,
)
from scenarios.runs import execute, store
from scenarios.runs.claims import fan_outs_give_up

log = logging.getLogger(__name__)

PLAN_ITERATOR_CHUNK = 2000
FAN_OUT_BATCH = 1000


def _flush(candidates: list[tuple[PlanRow, int | None, str]], trigger: str) -> tuple[int, int]:
    run_ids = _create_runs(candidates=candidates, trigger=trigger)
    return len(run_ids), execute.enqueue_runs(run_ids=run_ids)


@dataclass(frozen=True)
class FanOut:
    price_book_id: int | None
    plans_checked: int
    plans_changed: int
    runs_created: int
    messages: int
    elapsed_s: float


def _mark_fan_out_unsent(price_book_id: int) -> None:
    PriceFanOut.objects.filter(pk=price_book_id, done_at__isnull=True).update(enqueued_at=None)


def enqueue_price_fan_out(*, price_book_id: int) -> queue.Sending:
    """Send the book's fan-out once the publishing transaction commits. The ``PriceFanOut`` row written
    with the book is the work; with the broker down the publish still succeeds and the sweeper sends it."""
    return queue.on_commit(
        lambda: queue.send(queue.FAN_OUT_PRICES, [price_book_id]),
        on_broker_down=lambda: _mark_fan_out_unsent(price_book_id),
    )


def _fan_out_take(*, price_book_id: int, delivery: bool, holder: str = "") -> bool:
    """Take the book's fan-out row for this process with one conditional UPDATE (not done, no live lease),
    creating it for a book published before fan-outs were rows; a lease that expired counts a lost delivery,
    and the fan-out whose losses reach ``FAN_OUT_MAX_LOST`` is given up instead. A task delivery that does
    not get it stops; a direct call (management command, ``fan_out="sync"``) goes on regardless: repeating
    the work creates no duplicate run. ``holder`` (the task id, kept by the task's retries) takes its own lease
    again, live or expired, without counting a loss."""
    now = timezone.now()
    lease = now + dt.timedelta(seconds=conf.run_lease_s())
    PriceFanOut.objects.get_or_create(price_book_id=price_book_id, defaults={"enqueued_at": now})
    fan_outs_give_up(now=now, price_book_id=price_book_id, holder=holder)
    own = Q(holder=holder) & ~Q(holder="")
    taken = (
        PriceFanOut.objects.filter(pk=price_book_id, done_at__isnull=True)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now) | own)
        .update(
            lease_expires_at=lease,
            holder=holder,
            attempts=F("attempts") + 1,
            lost_deliveries=Case(
                When(Q(lease_expires_at__isnull=False) & ~own, then=F("lost_deliveries") + 1),
                default=F("lost_deliveries"),
                output_field=PositiveIntegerField(),
            ),
        )
    )
    return bool(taken) or not delivery


def _fan_out_renew(price_book_id: int) -> None:
    lease = timezone.now() + dt.timedelta(seconds=conf.run_lease_s())
    PriceFanOut.objects.filter(pk=price_book_id, done_at__isnull=True).update(lease_expires_at=lease)


def _fan_out_done(outcome: FanOut) -> None:
    PriceFanOut.objects.filter(pk=outcome.price_book_id).update(
        done_at=timezone.now(),
        lease_expires_at=None,
        error="",  # a delivery given up for lost that finished after all did the work
        plans_changed=outcome.plans_changed,
        runs_created=F("runs_created") + outcome.runs_created,
    )


def previous_book(book: PriceBook) -> PriceBook | None:
    """The version before ``book`` in its scope (the team's books, or the global books)."""
    books = PriceBook.objects.filter(version__lt=book.version)
    books = books.filter(team__isnull=True) if book.team is None else books.filter(team=book.team)
    return books.order_by("-version").first()


def book_in_force(*, team_id: int | None, published_before: PriceBook) -> PriceBook | None:
    """The newest book of a scope (a team's, or the global books for None) published before
    ``published_before`` (book ids grow with publication)."""
    books = PriceBook.objects.filter(pk__lt=published_before.pk)
    books = books.filter(team__isnull=True) if team_id is None else books.filter(team_id=team_id)
    return books.order_by("-version").first()


@dataclass(frozen=True)
class PlanRow:
    """What pricing a plan needs, read without building eight model instances per plan."""

    pk: int
    team_id: int
    site_name: str
    cloud_provider: str
    training: dict[str, Any]
    economics: dict[str, Any]
    revisions: adapters.PlanRevisions

    def document(self) -> dict[str, Any]:
        return adapters.document_from_parts(
            revisions=self.revisions, training=self.training, economics=self.economics
        )

    def price_key(self) -> tuple[Any, ...]:
        """Prices depend on the cluster and site documents, the site's name, the provider and an explicit
        cloud price in the plan: plans that share these share their prices."""
        return (
            self.team_id,
            self.revisions.cluster.pk,
            self.revisions.site.pk,
            self.site_name,
            self.cloud_provider,
            self.economics.get("cloud_usd_per_gpu_hour") if isinstance(self.economics, dict) else None,
        )


_PLAN_COLUMNS = (
    "pk",
    "team_id",
    "cloud_provider",
    "training",
    "economics",
    "cluster_revision_id",
    "model_revision_id",
    "site_revision_id",
    "cluster__latest_revision_id",
    "model__latest_revision_id",
    "site__latest_revision_id",
    "site__name",
)


def _plan_rows(*, team_ids: Iterable[int] | None = None, auto_rerun_only: bool = False) -> Iterator[PlanRow]:
    """Live plans in id order, with their revisions (pinned, else latest) loaded once per revision."""
    plans = Plan.objects.filter(archived_at__isnull=True)
    if team_ids is not None:
        plans = plans.filter(team__in=list(team_ids))
    if auto_rerun_only:
        plans = plans.filter(auto_rerun=True)
    cache: dict[type[Any], dict[int, Any]] = {ClusterRevision: {}, ModelRevision: {}, SiteRevision: {}}
    rows = plans.order_by("pk").values_list(*_PLAN_COLUMNS)
    batch: list[tuple[Any, ...]] = []

    def emit(batch: list[tuple[Any, ...]]) -> Iterator[PlanRow]:
        wanted: dict[type[Any], set[int]] = {model: set() for model in cache}
        for row in batch:
            for model, pinned, latest in (
                (ClusterRevision, row[5], row[8]),
                (ModelRevision, row[6], row[9]),
                (SiteRevision, row[7], row[10]),
            ):
                rev_id = pinned or latest
                if rev_id is not None and rev_id not in cache[model]:
                    wanted[model].add(rev_id)
        for model, ids in wanted.items():
            if ids:
                cache[model].update(model._default_manager.in_bulk(list(ids)))
        for row in batch:
            cluster = cache[ClusterRevision].get(row[5] or row[8])
            model_rev = cache[ModelRevision].get(row[6] or row[9])
            site = cache[SiteRevision].get(row[7] or row[10])
            if cluster is None or model_rev is None or site is None:
                continue  # a scenario without a revision cannot be priced; nothing to re-run
            yield PlanRow(
                pk=row[0],
                team_id=row[1],
                cloud_provider=row[2],
                training=row[3] or {},
                economics=row[4] or {},
                revisions=adapters.PlanRevisions(cluster=cluster, model=model_rev, site=site),
                site_name=row[11],
            )

    for row in rows.iterator(chunk_size=PLAN_ITERATOR_CHUNK):
        batch.append(row)
        if len(batch) >= PLAN_ITERATOR_CHUNK:
            yield from emit(batch)
            batch = []
    yield from emit(batch)


def _document_key(document: dict[str, Any]) -> str:
    """The canonical hash of the priced scenario document and the solver version (not resolved: cheap
    enough for 10,000 plans). Equal documents solve to equal results with the same solver, so it identifies
    "this plan with these inputs and this solver" for the deduplication of automatic runs; a new solver
    gets a run of its own instead of conflicting with the run the previous solver answered."""
    from solvers import canonical_hash

    return str(canonical_hash({"document": document, "solver_version": _solver_version()}))


def _solver_version() -> str:
    """The version of the solver this process runs: only its results count as current."""
    import solvers

    return str(solvers.SOLVER_VERSION)


def _resolved_hash_or_blank(document: dict[str, Any]) -> str:
    """The result's input hash, or "" for a document the solver refuses (its run fails with the reason)."""
    from solvers import ScenarioError

    try:
        return store.input_hash_of(document)
    except ScenarioError:
        return ""


# How many automatic runs of one plan's inputs may fail before no automatic run is queued for them again (a
# user's run, an edit or a price change still runs them): a failure of the machine (lost workers, the time
# limit) gets more chances, a scenario that cannot be solved does not fail every night for ever.
AUTOMATIC_FAILURES_PER_INPUT = 3

_INSERT_RUNS_SQL = """
INSERT INTO scenarios_run (
    plan_id, team_id, price_book_id, input_hash, kind, trigger, status, params, attempts, max_attempts,
    error, queued_at, enqueued_at, points_done, points_total, claim_task_id, claim_retries, worker
)
SELECT plan_id, team_id, price_book_id, input_hash, %(kind)s, %(trigger)s, %(status)s, '{}'::jsonb, 0,
       %(max_attempts)s, '', %(now)s, %(now)s, 0, 0, '', 0, ''
FROM unnest(%(plans)s::bigint[], %(teams)s::bigint[], %(books)s::bigint[], %(keys)s::text[])
     AS candidate(plan_id, team_id, price_book_id, input_hash)
WHERE NOT EXISTS (
    SELECT 1 FROM scenarios_run AS active
    WHERE active.plan_id = candidate.plan_id AND active.input_hash = candidate.input_hash
      AND active.status = %(status)s::varchar AND active.trigger = ANY(%(automatic)s)
)
AND (
    SELECT count(*) FROM scenarios_run AS failed
    WHERE failed.plan_id = candidate.plan_id AND failed.input_hash = candidate.input_hash
      AND failed.status = 'failed' AND failed.trigger = ANY(%(automatic)s)
) < %(failures)s
ON CONFLICT DO NOTHING
RETURNING id
"""


def _create_runs(*, candidates: list[tuple[PlanRow, int | None, str]], trigger: str) -> list[int]:
    """Insert one automatic run per (plan, price book, document key) unless one exists that did not fail (a
    failed one is tried again, up to ``AUTOMATIC_FAILURES_PER_INPUT`` failures of the document key), or an automatic run of
    the plan with the same document key is still queued (whichever book queued it: that run reads the plan's
    inputs when a worker takes it, so it solves these very inputs; a running one has read them already,
    perhaps under another book), in one statement; return the ids this call inserted (rows a concurrent beat
    inserted first conflict and are skipped)."""
    import psycopg

    if not candidates:
        return []
    params = {
        "kind": RUN_KIND_SOLVE,
        "trigger": trigger,
        "status": STATUS_QUEUED,
        "max_attempts": DEFAULT_MAX_ATTEMPTS,
        "now": timezone.now(),
        "plans": [plan.pk for plan, _, _ in candidates],
        "teams": [plan.team_id for plan, _, _ in candidates],
        "books": [book_id for _, book_id, _ in candidates],
        "keys": [key for _, _, key in candidates],
        "automatic": list(AUTOMATIC_TRIGGERS),
        "failures": AUTOMATIC_FAILURES_PER_INPUT,
    }
    connection.ensure_connection()
    # Server-side binding: four arrays of 10,000 items are sent as parameters, not escaped in Python.
    with transaction.atomic(), psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(_INSERT_RUNS_SQL, params)
        return sorted(int(row[0]) for row in cursor.fetchall())


def plans_with_price_changes(*, book: PriceBook) -> Iterator[tuple[PlanRow, pricing.PriceSheet | None]]:
    """Every live plan ``book`` concerns, with the sheet in effect once it is published when the book
    changes the plan's resolved prices, else None: the one rule of which plans a publication re-runs (the
    fan-out queues these plans; the publish answer counts them).

    Resolved prices differ when the numbers ``apply_prices`` gives the plan under the book's predecessor
    and under the book differ. A global book is compared per team under that team's own override book, so
    a team that overrides the changed price sees no change; a team book concerns that team's plans only.
    The other scope's book is the one in force when ``book`` was published (``book_in_force``), not the
    newest: each fan-out compares the two sheets on either side of its own publication, so fan-outs that run
    late or out of order (a global and a team book published close together) still cover every change
    between them, and none is judged against a book published after it."""
    previous = previous_book(book)
    global_new: PriceBook | None
    global_old: PriceBook | None
    if book.team_id is None:
        global_new, global_old = book, previous
        team_ids = None
    else:
        global_new = global_old = book_in_force(team_id=None, published_before=book)
        team_ids = [book.team_id]
    new_quotes = pricing.book_quotes(book=global_new, origin=pricing.ORIGIN_GLOBAL_BOOK)
    old_quotes = (
        new_quotes
        if global_old == global_new
        else pricing.book_quotes(book=global_old, origin=pricing.ORIGIN_GLOBAL_BOOK)
    )
    sheets: dict[int, tuple[pricing.PriceSheet, pricing.PriceSheet]] = {}
    price_changed: dict[tuple[Any, ...], bool] = {}
    for plan in _plan_rows(team_ids=team_ids):
        pair = sheets.get(plan.team_id)
        if pair is None:
            if book.team_id is None:
                team_book = book_in_force(team_id=plan.team_id, published_before=book)
                team_new = team_old = team_book
            else:
                team_new, team_old = book, previous
            pair = sheets[plan.team_id] = (
                pricing.compose_sheet(global_book=global_new, team_book=team_new, global_quotes=new_quotes),
                pricing.compose_sheet(global_book=global_old, team_book=team_old, global_quotes=old_quotes),
            )
        new_sheet, old_sheet = pair
        key = plan.price_key()
        if key not in price_changed:
            document = plan.document()
            new_prices = _prices(plan, document, new_sheet)
            price_changed[key] = new_prices != _prices(plan, document, old_sheet)
        yield plan, new_sheet if price_changed[key] else None


def _prices(plan: PlanRow, document: dict[str, Any], sheet: pricing.PriceSheet) -> dict[str, float | None]:
    _, used = pricing.apply_prices(
        document=document, sheet=sheet, site_name=plan.site_name, cloud_provider=plan.cloud_provider
    )
    return pricing.price_values(used)


def plans_to_rerun(*, book: PriceBook) -> int:
    """How many live plans publishing ``book`` re-runs (those whose resolved prices it changes)."""
    return sum(1 for _, sheet in plans_with_price_changes(book=book) if sheet is not None)


def price_book_fan_out(*, price_book_id: int, delivery: bool = False, holder: str = "") -> FanOut:
    """Re-run every live plan whose resolved prices differ between the book's predecessor and the book
    (``plans_with_price_changes``), then mark the book's ``PriceFanOut`` done. ``delivery``: called for a
    broker message, which skips a fan-out that is done or that another delivery holds (returns
    ``plans_checked=0``); the lease is renewed per batch, so a dead worker's fan-out is sent again.
    ``holder``: the delivering task's id, which holds the lease across the task's own retries."""
    started = time.perf_counter()
    book = PriceBook.objects.get(pk=price_book_id)
    if not _fan_out_take(price_book_id=book.pk, delivery=delivery, holder=holder):
        log.info("price fan-out of book %s: done or held by another delivery", book.pk)
        return FanOut(book.pk, 0, 0, 0, 0, time.perf_counter() - started)
    try:
        return _fan_out_work(book=book, started=started)
    except queue.TRANSIENT_ERRORS:
        # The task retries a database or broker error: the lease is given back (best effort while the database
        # is down; the retry, the same holder, takes it again either way) and the failure is counted, so one
        # that repeats through every retry of ``FAN_OUT_MAX_LOST`` messages gives the fan-out up. Any other
        # failure (the soft time limit, a bug) leaves the lease to expire, as a worker killed holding it would:
        # the next delivery's take counts a lost delivery.
        try:
            PriceFanOut.objects.filter(pk=book.pk, done_at__isnull=True).update(
                lease_expires_at=None, failed_attempts=F("failed_attempts") + 1
            )
        except Exception:  # the original error is the one to report
            log.warning("price fan-out of book %s: its lease could not be released", book.pk)
        raise


def _fan_out_work(*, book: PriceBook, started: float) -> FanOut:
    checked = changed = runs_created = messages = 0
    candidates: list[tuple[PlanRow, int | None, str]] = []
    renewed_at = time.monotonic()
    for plan, new_sheet in plans_with_price_changes(book=book):
        checked += 1
        if time.monotonic() - renewed_at > conf.run_lease_s() / 3:
            _fan_out_renew(book.pk)  # a long comparison keeps its lease, or the sweeper would send it again
            renewed_at = time.monotonic()
        if new_sheet is None:
            continue
        priced, _ = pricing.apply_prices(
            document=plan.document(),
            sheet=new_sheet,
            site_name=plan.site_name,
            cloud_provider=plan.cloud_provider,
        )
        candidates.append((plan, book.pk, _document_key(priced)))
        changed += 1
        if len(candidates) >= FAN_OUT_BATCH:
            # Workers start on the first batch while the rest of the plans are still being compared.
            created, sent = _flush(candidates, TRIGGER_PRICE_CHANGE)
            runs_created, messages = runs_created + created, messages + sent
            candidates = []
    created, sent = _flush(candidates, TRIGGER_PRICE_CHANGE)
    runs_created, messages = runs_created + created, messages + sent
    outcome = FanOut(
        price_book_id=book.pk,
        plans_checked=checked,
        plans_changed=changed,
        runs_created=runs_created,
        messages=messages,
        elapsed_s=time.perf_counter() - started,
    )
    _fan_out_done(outcome)
    log.info("price fan-out %s", outcome)
    return outcome


def plans_recheck(*, trigger: str = TRIGGER_SCHEDULE) -> FanOut:
    """Queue a run for every live ``auto_rerun`` plan whose current inputs (revisions, prices) have no result
    stored by the current solver; unchanged plans produce no rows."""
    started = time.perf_counter()
    global_book = pricing.latest_book(team_id=None)
    global_quotes = pricing.book_quotes(book=global_book, origin=pricing.ORIGIN_GLOBAL_BOOK)
    sheets: dict[int, pricing.PriceSheet] = {}
    checked = 0
    candidates: list[tuple[PlanRow, int | None, str]] = []
    resolved: dict[int, str] = {}
    for plan in _plan_rows(auto_rerun_only=True):
        checked += 1
        sheet = sheets.get(plan.team_id)
        if sheet is None:
            sheet = sheets[plan.team_id] = pricing.compose_sheet(
                global_book=global_book,
                team_book=pricing.latest_book(team_id=plan.team_id),
                global_quotes=global_quotes,
            )
        priced, _ = pricing.apply_prices(
            document=plan.document(),
            sheet=sheet,
            site_name=plan.site_name,
            cloud_provider=plan.cloud_provider,
        )
        candidates.append((plan, sheet.newest_book_id, _document_key(priced)))
        resolved[plan.pk] = _resolved_hash_or_blank(priced)
    # Plans whose current inputs already have a result stored by this solver need nothing; a result of
    # another solver version does not count (a solver change re-runs them and stores its own numbers).
    solved: set[tuple[int, str]] = set()
    for start in range(0, len(candidates), 5000):
        part = candidates[start : start + 5000]
        solved.update(
            Result.objects.filter(
                plan_id__in=[plan.pk for plan, _, _ in part],
                input_hash__in={resolved[plan.pk] for plan, _, _ in part},
                solver_version=_solver_version(),
            ).values_list("plan_id", "input_hash")
        )
    candidates = [c for c in candidates if (c[0].pk, resolved[c[0].pk]) not in solved]
    run_ids = _create_runs(candidates=candidates, trigger=trigger)
    messages = execute.enqueue_runs(run_ids=run_ids)
    outcome = FanOut(
        price_book_id=None,
        plans_checked=checked,
        plans_changed=len(run_ids),
        runs_created=len(run_ids),
        messages=messages,
        elapsed_s=time.perf_counter() - started,
    )
    log.info("nightly re-check %s", outcome)
    return outcome
