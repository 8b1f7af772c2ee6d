"""Run execution: claim, solve, store the result exactly once, and recover runs the broker or a worker lost.

Every step is safe to repeat, because the broker may deliver a message twice (redelivery after a worker
died, a sweeper re-send) and a worker may die at any instruction:

* claim    one conditional UPDATE (queued -> running, attempts + 1, lease); a delivery that changes no
           row stops. The attempt count lives in Postgres, so a run whose worker dies on every attempt ends
           ``failed`` with the reason after ``max_attempts``, however often the broker redelivers it.
* solve    pure; repeating it costs only time.
* store    under a row lock on the plan (version numbering), INSERT the result unless (plan, input_hash,
           solver_version) exists, and mark the run succeeded only if this delivery still holds the claim, in one
           transaction. A repeat finds the existing result and creates nothing.
* sweep    queued runs whose message went out long ago are sent again; running runs whose lease expired
           are put back to queued (or failed at the attempt cap) and sent again.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q, Value
from django.utils import timezone

from scenarios import adapters, conf, events, pricing, queue
from scenarios.models import (
    RUN_KIND_SOLVE,
    STATUS_FAILED,
    STATUS_QUEUED,
    STATUS_RUNNING,
    STATUS_SUCCEEDED,
    Plan,
    PriceFanOut,
    Result,
    Run,
    Team,
)

log = logging.getLogger(__name__)

CLAIMED = "claimed"
RESUMED = "resumed"
CAPPED = "capped"
BUSY = "busy"


@dataclass(frozen=True)
class Claim:
    """Who holds a run: the Celery task id and its retry count (see ``Run.claim_task_id``)."""

    task_id: str
    retries: int
    worker: str = ""


_TAKEABLE_SQL = (
    "(status = 'queued'"
    " OR (status = 'running' AND lease_expires_at < %(now)s)"
    " OR (status = 'running' AND claim_task_id = %(task_id)s AND claim_retries = %(retries)s))"
)
_GAVE_UP_SQL = (
    "'gave up after ' || attempts || ' attempts: the worker running this run was lost each time "
    "(killed, out of memory, or over the hard time limit) before it finished'"
)


def claim_rows(
    *, table: str, ids: Sequence[int], claim: Claim, gave_up: str, now: dt.datetime | None = None
) -> dict[int, str]:
    """Try to take each row of ``table`` (runs, sweep chunks: the same claim columns) for this delivery,
    with three conditional UPDATEs over the whole set:

    1. takeable and out of attempts -> failed with the reason ``gave_up`` (SQL) (CAPPED);
    2. takeable (queued, lease expired, or running under this very delivery: the broker redelivered it
       because its worker died, which was an attempt) -> running, attempts + 1 (CLAIMED);
    3. running under this task with another retry count (our own retry after a database or broker
       error) -> keep going without counting an attempt (RESUMED).
    Rows in none of these (done, or held by a live delivery) are BUSY: this delivery must not touch them.
    The order matters: a row claimed in step 2 is not capped by step 1 in the same call."""
    now = now or timezone.now()
    params: dict[str, Any] = {
        "ids": list(ids),
        "now": now,
        "lease": now + dt.timedelta(seconds=conf.run_lease_s()),
        "task_id": claim.task_id,
        "retries": claim.retries,
        "worker": claim.worker[:255],
    }
    states = dict.fromkeys(ids, BUSY)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = 'failed', finished_at = %(now)s, lease_expires_at = NULL, "
            f"error = {gave_up} "
            f"WHERE id = ANY(%(ids)s) AND attempts >= max_attempts AND {_TAKEABLE_SQL} RETURNING id",
            params,
        )
        states.update({row[0]: CAPPED for row in cursor.fetchall()})
        cursor.execute(
            f"UPDATE {table} SET status = 'running', attempts = attempts + 1, started_at = %(now)s, "
            "lease_expires_at = %(lease)s, claim_task_id = %(task_id)s, claim_retries = %(retries)s, "
            f"worker = %(worker)s WHERE id = ANY(%(ids)s) AND attempts < max_attempts AND {_TAKEABLE_SQL} "
            "RETURNING id",
            params,
        )
        states.update({row[0]: CLAIMED for row in cursor.fetchall()})
        cursor.execute(
            f"UPDATE {table} SET claim_retries = %(retries)s, lease_expires_at = %(lease)s, "
            "worker = %(worker)s WHERE id = ANY(%(ids)s) AND status = 'running' "
            "AND claim_task_id = %(task_id)s AND claim_retries <> %(retries)s RETURNING id",
            params,
        )
        states.update({row[0]: RESUMED for row in cursor.fetchall()})
    return states


def runs_claim(*, run_ids: Sequence[int], claim: Claim, now: dt.datetime | None = None) -> dict[int, str]:
    """``claim_rows`` for runs: CLAIMED/RESUMED (go on), CAPPED (just failed, with the reason) or BUSY."""
    return claim_rows(table="scenarios_run", ids=run_ids, claim=claim, gave_up=_GAVE_UP_SQL, now=now)


def run_claim(*, run_id: int, claim: Claim, now: dt.datetime | None = None) -> str:
    """``runs_claim`` for one run: CLAIMED/RESUMED (go on), CAPPED (just failed) or BUSY (stop)."""
    return runs_claim(run_ids=[run_id], claim=claim, now=now)[run_id]


def _gave_up_error() -> Any:
    """'gave up after N attempts: ...' built in SQL, so the message carries the stored attempt count."""
    from django.db.models import CharField
    from django.db.models.functions import Cast, Concat

    return Concat(
        Value("gave up after "),
        Cast(F("attempts"), output_field=CharField()),
        Value(
            " attempts: the worker running this run was lost each time (killed, out of memory, or over the "
            "hard time limit) before it finished"
        ),
        output_field=CharField(),
    )


def _holding(run_id: int, claim: Claim) -> Q:
    return Q(pk=run_id, status=STATUS_RUNNING, claim_task_id=claim.task_id)


def run_fail(*, run_id: int, claim: Claim, error: str) -> bool:
    """Mark a run this delivery holds as failed (bad input, time limit). False if it no longer holds it."""
    return (
        Run.objects.filter(_holding(run_id, claim)).update(
            status=STATUS_FAILED, finished_at=timezone.now(), lease_expires_at=None, error=error[:10_000]
        )
        == 1
    )


def runs_renew_lease(*, run_ids: Sequence[int], claim: Claim) -> int:
    """Extend the lease of the runs this delivery still holds; returns how many it holds."""
    lease = timezone.now() + dt.timedelta(seconds=conf.run_lease_s())
    return Run.objects.filter(
        pk__in=list(run_ids), status=STATUS_RUNNING, claim_task_id=claim.task_id
    ).update(lease_expires_at=lease)


class LeaseKeeper:
    """Renews a lease from a daemon thread every third of ``RUN_LEASE_S`` while the work it guards executes
    (``with LeaseKeeper(renew): ...``), so leases can be short: a live worker keeps its runs however long a
    solve takes, and a dead worker's runs expire within one lease and are taken back by the sweeper.

    ``renew`` runs in the thread, on the thread's own database connection (closed when the keeper stops);
    a failed renewal (database briefly unreachable) is logged and tried again on the next period."""

    def __init__(self, renew: Callable[[], Any], *, period_s: float | None = None) -> None:
        self.renew = renew
        self.period_s = period_s if period_s is not None else conf.run_lease_s() / 3
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0

    def _loop(self) -> None:
        from django.db import DatabaseError
        from django.db import connection as thread_connection

        try:
            while not self._stop.wait(self.period_s):
                try:
                    self.renew()
                    self.renewals += 1
                except DatabaseError as exc:
                    log.warning("lease renewal failed, trying again in %.1f s: %s", self.period_s, exc)
        finally:
            thread_connection.close()

    def __enter__(self) -> LeaseKeeper:
        self._thread = threading.Thread(target=self._loop, name="lease-keeper", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def keep_runs_leased(*, run_ids: Sequence[int], claim: Claim) -> LeaseKeeper:
    """A ``LeaseKeeper`` for the runs this delivery holds."""
    ids = list(run_ids)
    return LeaseKeeper(lambda: runs_renew_lease(run_ids=ids, claim=claim))


def keep_run_leased(*, run_id: int) -> LeaseKeeper:
    """A ``LeaseKeeper`` for a running run whatever delivery claimed it (a sweep's chunks run under other
    task ids than the sweep's claim)."""
    return LeaseKeeper(
        lambda: Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(
            lease_expires_at=timezone.now() + dt.timedelta(seconds=conf.run_lease_s())
        )
    )


def runs_release(*, run_ids: Sequence[int], claim: Claim) -> list[int]:
    """Put the runs this delivery holds back to queued (their attempt stays counted); returns their ids."""
    held = list(
        Run.objects.filter(
            pk__in=list(run_ids), status=STATUS_RUNNING, claim_task_id=claim.task_id
        ).values_list("pk", flat=True)
    )
    Run.objects.filter(pk__in=held, status=STATUS_RUNNING, claim_task_id=claim.task_id).update(
        status=STATUS_QUEUED, enqueued_at=timezone.now(), lease_expires_at=None, claim_task_id="", worker=""
    )
    return held


def run_progress(*, run_id: int, claim: Claim, points_done: int, points_total: int | None = None) -> bool:
    """Record progress of a search or sweep and extend its lease (a long run is not taken for lost)."""
    values: dict[str, Any] = {
        "points_done": points_done,
        "lease_expires_at": timezone.now() + dt.timedelta(seconds=conf.run_lease_s()),
    }
    if points_total is not None:
        values["points_total"] = points_total
    return Run.objects.filter(_holding(run_id, claim)).update(**values) == 1


# --- Executors by run kind ----------------------------------------------------------------------------

# (the plan's inputs: a services.PlanInputs, the run, the claim) -> the report document.
Executor = Callable[[Any, Run, Claim], dict[str, Any]]


def _solve(inputs: Any, run: Run, claim: Claim) -> dict[str, Any]:
    """A plain solve of the plan's priced document; the assumptions of book prices name their book."""
    from solvers import solve

    return label_book_prices(solve(inputs.document), inputs.prices)


def label_book_prices(report: dict[str, Any], prices: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report with the assumption entries of book prices naming their book (its own list, or a
    search's best report's); numbers are untouched."""
    for holder in (report, report.get("best")):
        if isinstance(holder, dict) and isinstance(holder.get("assumptions"), list):
            holder["assumptions"] = pricing.label_price_sources(holder["assumptions"], prices)
    return report


# Search and sweep register their executors here (kind -> callable returning the report document).
EXECUTORS: dict[str, Executor] = {RUN_KIND_SOLVE: _solve}


def register_executor(kind: str, executor: Executor) -> None:
    EXECUTORS[kind] = executor


# --- Storing results ----------------------------------------------------------------------------------


def input_hash_of(document: dict[str, Any]) -> str:
    """The canonical hash of the resolved scenario (the same as the report's ``input_hash``)."""
    from solvers import canonical_hash, resolve

    return str(canonical_hash(resolve(document).document))


@dataclass(frozen=True)
class Solved:
    """A solved run waiting to be stored: ``inputs`` is a ``services.PlanInputs``."""

    run: Run
    inputs: Any
    report: dict[str, Any]

    @property
    def input_hash(self) -> str:
        return str(self.report.get("input_hash") or input_hash_of(self.inputs.document))


@dataclass(frozen=True)
class Stored:
    result_id: int
    version: int
    created: bool


_PREVIOUS_FIELDS = ("pk", "version", *adapters.DELTA_FIELDS)


def _insert_results(results: list[Result]) -> None:
    """INSERT results with server-side parameter binding, in the current transaction, and set their pks.

    Django's psycopg backend binds parameters on the client by default, which escapes each ~25 KB report
    in Python; handing the JSON to the server as a parameter is several times faster for bulk stores."""
    import psycopg

    if not results:
        return
    fields = [f for f in Result._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {Result._meta.db_table} ({columns}) VALUES ({placeholders}) RETURNING id"
    rows = [[f.get_db_prep_save(getattr(r, f.attname), connection) for f in fields] for r in results]
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.executemany(sql, rows, returning=True)
        ids: list[int] = []
        while True:
            row = cursor.fetchone()
            if row is not None:
                ids.append(int(row[0]))
            if not cursor.nextset():
                break
    for result, pk in zip(results, ids, strict=True):
        result.pk = pk
        result._state.adding = False
        result._state.db = connection.alias


def results_store(*, solved: Sequence[Solved], claim: Claim | None) -> dict[int, Stored]:
    """Store the reports of many runs in one transaction; returns {run id: Stored}.

    Under row locks on the plans (taken in id order, so two workers cannot deadlock): a report whose
    (plan, input_hash, solver_version) is stored already returns that result; the others become version
    n+1 of their plan, with ``previous`` and ``delta`` against the plan's newest result of the same kind
    (a solve is compared with the last solve, never with a sweep or a search). Runs are marked succeeded
    only where ``claim`` still holds them. A run of the same plan later in ``solved`` is numbered after an
    earlier one."""
    from solvers import SOLVER_VERSION

    if not solved:
        return {}
    now = timezone.now()
    plan_ids = sorted({item.run.plan_id for item in solved})
    hashes = {item.run.pk: item.input_hash for item in solved}
    solvers_of = {item.run.pk: str(item.report.get("solver_version") or SOLVER_VERSION) for item in solved}
    stored: dict[int, Stored] = {}
    with transaction.atomic():
        teams = dict(
            Plan.objects.select_for_update()
            .filter(pk__in=plan_ids)
            .order_by("pk")
            .values_list("pk", "team_id")
        )
        known: dict[tuple[int, str, str], Stored] = {
            (plan_id, input_hash, solver): Stored(result_id=pk, version=version, created=False)
            for plan_id, input_hash, solver, pk, version in Result.objects.filter(
                plan_id__in=plan_ids,
                input_hash__in=set(hashes.values()),
                solver_version__in=set(solvers_of.values()),
            ).values_list("plan_id", "input_hash", "solver_version", "pk", "version")
        }
        newest: dict[int, tuple[int, str]] = {
            plan_id: (version, solver)
            for plan_id, version, solver in Result.objects.filter(plan_id__in=plan_ids)
            .order_by("plan_id", "-version")
            .distinct("plan_id")
            .values_list("plan_id", "version", "solver_version")
        }
        newest_version = {plan_id: version for plan_id, (version, _) in newest.items()}
        thresholds = dict(
            Team.objects.filter(pk__in=set(teams.values())).values_list("pk", "alert_thresholds")
        )
        new_events: list[Any] = []
        latest: dict[tuple[int, str], dict[str, Any]] = {
            (row["plan_id"], row["kind"]): row
            for row in Result.objects.filter(plan_id__in=plan_ids)
            .order_by("plan_id", "kind", "-version")
            .distinct("plan_id", "kind")
            .values("plan_id", "kind", *_PREVIOUS_FIELDS)
        }
        pending = list(solved)
        while pending:
            # One new result per plan per pass, so each knows the primary key of its predecessor.
            batch: dict[int, tuple[Solved, Result]] = {}
            later: list[Solved] = []
            for item in pending:
                plan_id, kind = item.run.plan_id, item.run.kind
                identity = (plan_id, hashes[item.run.pk], solvers_of[item.run.pk])
                if identity in known:
                    stored[item.run.pk] = known[identity]
                    continue
                if plan_id in batch:
                    later.append(item)  # numbered (or found, if its inputs are the same) in the next pass
                    continue
                previous = latest.get((plan_id, kind))
                columns = adapters.promoted_columns(item.report)
                before = {name: previous[name] for name in adapters.DELTA_FIELDS} if previous else None
                result = Result(
                    plan_id=plan_id,
                    team_id=teams[plan_id],
                    version=newest_version.get(plan_id, 0) + 1,
                    kind=kind,
                    input_snapshot=item.inputs.snapshot(),
                    prices=item.inputs.prices,
                    input_hash=identity[1],
                    solver_version=identity[2],
                    price_book_id=item.inputs.sheet.global_book.id if item.inputs.sheet.global_book else None,
                    team_price_book_id=item.inputs.sheet.team_book.id
                    if item.inputs.sheet.team_book
                    else None,
                    cluster_revision=item.inputs.revisions.cluster,
                    model_revision=item.inputs.revisions.model,
                    site_revision=item.inputs.revisions.site,
                    report=item.report,
                    previous_id=previous["pk"] if previous else None,
                    delta=adapters.result_delta(
                        current=columns,
                        previous=before,
                        previous_version=previous["version"] if previous else None,
                    ),
                    created_at=now,
                    **columns,
                )
                batch[plan_id] = (item, result)
            _insert_results([result for _, result in batch.values()])
            for plan_id, (item, result) in batch.items():
                new_events += events.result_events(
                    result=result,
                    thresholds=thresholds.get(result.team_id) or {},
                    previous_solver=newest[plan_id][1] if plan_id in newest else None,
                )
                newest[plan_id] = (result.version, result.solver_version)
                entry = Stored(result_id=result.pk, version=result.version, created=True)
                known[(plan_id, hashes[item.run.pk], solvers_of[item.run.pk])] = entry
                stored[item.run.pk] = entry
                newest_version[plan_id] = result.version
                latest[(plan_id, result.kind)] = {
                    "plan_id": plan_id,
                    "kind": result.kind,
                    "pk": result.pk,
                    "version": result.version,
                } | {name: getattr(result, name) for name in adapters.DELTA_FIELDS}
            pending = later
        events.record(new_events)
        # The plan's current result is the one of its last solve in this call. Search and sweep results
        # are versions of the plan too, but compare reads a single report's step/TCO/carbon sections.
        current = {
            item.run.plan_id: stored[item.run.pk].result_id
            for item in solved
            if item.run.kind == RUN_KIND_SOLVE
        }
        with connection.cursor() as cursor:
            # Joined to arrays rather than CASE WHEN per row: one short statement whatever the chunk size.
            cursor.execute(
                "UPDATE scenarios_plan AS p SET latest_result_id = v.result_id "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, result_id) WHERE p.id = v.id",
                [list(current), list(current.values())],
            )
            run_ids = [item.run.pk for item in solved]
            cursor.execute(
                "UPDATE scenarios_run AS r SET status = %s, result_id = v.result_id, finished_at = %s, "
                "lease_expires_at = NULL, error = '', points_done = r.points_total "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, result_id) "
                "WHERE r.id = v.id AND r.status = %s AND (%s::text IS NULL OR r.claim_task_id = %s::text)",
                [
                    STATUS_SUCCEEDED,
                    now,
                    run_ids,
                    [stored[run_id].result_id for run_id in run_ids],
                    STATUS_RUNNING,
                    claim.task_id if claim else None,
                    claim.task_id if claim else None,
                ],
            )
    return stored


def result_store(*, run: Run, claim: Claim | None, inputs: Any, report: dict[str, Any]) -> Stored:
    """``results_store`` for one run."""
    return results_store(solved=[Solved(run=run, inputs=inputs, report=report)], claim=claim)[run.pk]


@dataclass(frozen=True)
class Outcome:
    run_id: int
    status: str  # claim state (BUSY, CAPPED) or the run's final status
    result_id: int | None = None
    created: bool = False


_RUN_RELATED = (*(f"plan__{path}" for path in adapters.PLAN_RELATED), "plan__site")


def _solve_held(
    *, held: list[int], claim: Claim, sheets: dict[int, pricing.PriceSheet], outcomes: dict[int, Outcome]
) -> list[Solved]:
    """Solve the runs this delivery holds; a run the solver or the plan refuses fails with the reason."""
    from django.core.exceptions import ValidationError

    from scenarios.services import plan_inputs
    from solvers import ScenarioError

    solved: list[Solved] = []
    for run in Run.objects.filter(pk__in=held).select_related(*_RUN_RELATED).order_by("pk"):
        executor = EXECUTORS.get(run.kind)
        if executor is None:
            run_fail(
                run_id=run.pk, claim=claim, error=f"run kind '{run.kind}' cannot be executed by this worker"
            )
            outcomes[run.pk] = Outcome(run_id=run.pk, status=STATUS_FAILED)
            continue
        try:
            sheet = sheets.get(run.plan.team_id)
            if sheet is None:
                sheet = sheets[run.plan.team_id] = pricing.sheet_for_team(team_id=run.plan.team_id)
            inputs = plan_inputs(plan=run.plan, sheet=sheet)
            report = executor(inputs, run, claim)
        except ScenarioError as exc:
            detail = "; ".join(str(e) for e in exc.errors) or str(exc)
            run_fail(run_id=run.pk, claim=claim, error=f"the scenario cannot be solved: {detail}")
            outcomes[run.pk] = Outcome(run_id=run.pk, status=STATUS_FAILED)
            continue
        except ValidationError as exc:
            run_fail(
                run_id=run.pk, claim=claim, error=f"the plan cannot be resolved: {'; '.join(exc.messages)}"
            )
            outcomes[run.pk] = Outcome(run_id=run.pk, status=STATUS_FAILED)
            continue
        solved.append(Solved(run=run, inputs=inputs, report=report))
    return solved


def runs_execute(
    *, run_ids: Sequence[int], claim: Claim, sheets: dict[int, pricing.PriceSheet] | None = None
) -> list[Outcome]:
    """Claim, solve and store runs (a chunk from the fan-out, or one run). Database and broker errors
    propagate so the task retries; a run whose input the solver refuses fails with the field paths."""
    states = runs_claim(run_ids=run_ids, claim=claim)
    outcomes = {run_id: Outcome(run_id=run_id, status=state) for run_id, state in states.items()}
    held = [run_id for run_id, state in states.items() if state in (CLAIMED, RESUMED)]
    sheets = sheets if sheets is not None else {}
    if not held:
        return [outcomes[run_id] for run_id in run_ids]
    # The claimed runs stay leased while they solve: a dead worker's runs expire within one lease. The
    # store runs after the keeper stopped (its transaction locks the run rows the keeper would update; a
    # lease renewed at most a third of a lease ago outlasts a store by far).
    with keep_runs_leased(run_ids=held, claim=claim):
        solved = _solve_held(held=held, claim=claim, sheets=sheets, outcomes=outcomes)
    for run_id, entry in results_store(solved=solved, claim=claim).items():
        outcomes[run_id] = Outcome(
            run_id=run_id, status=STATUS_SUCCEEDED, result_id=entry.result_id, created=entry.created
        )
    return [outcomes[run_id] for run_id in run_ids]


def run_execute(*, run_id: int, claim: Claim, sheets: dict[int, pricing.PriceSheet] | None = None) -> Outcome:
    """``runs_execute`` for one run."""
    return runs_execute(run_ids=[run_id], claim=claim, sheets=sheets)[0]


# --- Enqueueing ---------------------------------------------------------------------------------------


def enqueue_runs(*, run_ids: Sequence[int], chunk_size: int | None = None) -> int:
    """Send runs to the broker now, ``chunk_size`` run ids per message over one connection. Returns the
    number of messages; raises when the broker is down (a caller inside a task retries). A lost message is
    harmless: the sweeper sends the run again."""
    if not run_ids:
        return 0
    return queue.send_many(queue.run_messages(run_ids, chunk_size=chunk_size or conf.run_chunk_size()))


def runs_mark_unsent(run_ids: Sequence[int]) -> None:
    """The broker refused these runs' messages: the sweeper's next tick sends them (enqueued_at NULL)."""
    Run.objects.filter(pk__in=list(run_ids), status=STATUS_QUEUED).update(enqueued_at=None)


def enqueue_runs_on_commit(*, run_ids: Sequence[int], chunk_size: int | None = None) -> queue.Sending:
    """Send runs once the current transaction commits; with the broker down they are left to the sweeper
    (the returned ``Sending`` says ``deferred``) instead of failing the caller."""
    ids = list(run_ids)
    return queue.on_commit(
        lambda: enqueue_runs(run_ids=ids, chunk_size=chunk_size), on_broker_down=lambda: runs_mark_unsent(ids)
    )


# --- Sweeper ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepReport:
    resent: int
    expired: int
    failed: int
    fan_outs: int = 0


def _fan_outs_due(*, now: dt.datetime, stale: dt.datetime, limit: int) -> list[int]:
    """Price fan-outs not done whose message is unsent or old, and that no delivery holds: marked as sent
    now (in the caller's transaction) and returned, so the caller sends them after commit."""
    due = list(
        PriceFanOut.objects.select_for_update(skip_locked=True)
        .filter(Q(enqueued_at__lt=stale) | Q(enqueued_at__isnull=True), done_at__isnull=True)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    PriceFanOut.objects.filter(pk__in=due).update(enqueued_at=now)
    return due


def runs_sweep(*, now: dt.datetime | None = None, send: bool = True) -> SweepReport:
    """Re-send queued runs whose message went out ``sweep_queued_after_s`` ago (or never: the broker was
    down), recover running runs whose lease expired, and re-send price fan-outs that have not created their
    runs yet. Rows are picked with FOR UPDATE SKIP LOCKED, so two sweepers split the work. With the broker
    still down the rows are marked unsent again and the next tick tries once more."""
    now = now or timezone.now()
    limit = conf.sweep_batch_limit()
    stale = now - dt.timedelta(seconds=conf.sweep_queued_after_s())
    with transaction.atomic():
        lost = list(
            Run.objects.select_for_update(skip_locked=True)
            .filter(Q(enqueued_at__lt=stale) | Q(enqueued_at__isnull=True), status=STATUS_QUEUED)
            .order_by("queued_at")
            .values_list("pk", flat=True)[:limit]
        )
        Run.objects.filter(pk__in=lost).update(enqueued_at=now)
        expired_rows = list(
            Run.objects.select_for_update(skip_locked=True)
            .filter(status=STATUS_RUNNING, lease_expires_at__lt=now)
            .order_by("lease_expires_at")
            .values_list("pk", "attempts", "max_attempts")[:limit]
        )
        capped = [pk for pk, attempts, cap in expired_rows if attempts >= cap]
        retry = [pk for pk, attempts, cap in expired_rows if attempts < cap]
        if capped:
            Run.objects.filter(pk__in=capped, status=STATUS_RUNNING).update(
                status=STATUS_FAILED, finished_at=now, lease_expires_at=None, error=_gave_up_error()
            )
        if retry:
            Run.objects.filter(pk__in=retry, status=STATUS_RUNNING).update(
                status=STATUS_QUEUED, enqueued_at=now, lease_expires_at=None, claim_task_id="", worker=""
            )
        fan_outs = _fan_outs_due(now=now, stale=stale, limit=limit)
        to_send = [*lost, *retry]
        if send and to_send:
            enqueue_runs_on_commit(run_ids=to_send)
        if send and fan_outs:
            queue.on_commit(
                lambda: queue.send_many((queue.FAN_OUT_PRICES, [book_id]) for book_id in fan_outs),
                on_broker_down=lambda: PriceFanOut.objects.filter(
                    pk__in=fan_outs, done_at__isnull=True
                ).update(enqueued_at=None),
            )
    if lost or expired_rows or fan_outs:
        log.info(
            "sweeper: resent %d queued, %d expired (%d failed at the attempt cap), %d price fan-outs",
            len(lost),
            len(retry),
            len(capped),
            len(fan_outs),
        )
    return SweepReport(resent=len(lost), expired=len(retry), failed=len(capped), fan_outs=len(fan_outs))
