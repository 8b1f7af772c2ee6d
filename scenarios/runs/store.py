"""Storing results exactly once: under a row lock on the plan (version numbering), INSERT the result unless
(plan, input_hash, solver_version) exists, and mark the run succeeded only if this delivery still holds the
claim, in one transaction. A repeat finds the existing result and creates nothing."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from scenarios import adapters, events, pricing
from scenarios.models import (
    RUN_KIND_SOLVE,
    STATUS_FAILED,
    STATUS_RUNNING,
    STATUS_SUCCEEDED,
    Plan,
    Result,
    Run,
    Team,
)
from scenarios.runs.claims import Claim

log = logging.getLogger(__name__)


def input_hash_of(document: dict[str, Any]) -> str:
    """The canonical hash of the resolved scenario (the same as the report's ``input_hash``)."""
    from solvers import canonical_hash, resolve

    return str(canonical_hash(resolve(document, step=False).document))


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


def _plans_keeping_current(
    *, last_solve: dict[int, tuple[str, dict[str, Any]]], current_ids: dict[int, int]
) -> set[int]:
    """The plans whose current result the new solves do not replace: where the plan's current result holds the
    inputs the plan has now and the plan's last new solve does not (its run read the plan before an edit, or a
    price book, that a run stored first already solved: it is a version of the plan, not its current result).
    Decided before any event is made, so a result that does not become current raises no ``figure.moved`` and
    moves no current result back. A plan whose inputs of now cannot be resolved is replaced, as before.

    ``last_solve`` holds each plan's last new solve: its result's input hash and the priced document its run
    solved. A plan whose priced document now is that very document needs no resolve (the common case: a price
    change's re-run stores what it read); only one whose inputs moved since its run read them is resolved."""
    from scenarios.inputs import plan_inputs
    from solvers import SOLVER_VERSION

    contested = [plan_id for plan_id in last_solve if plan_id in current_ids]
    if not contested:
        return set()
    existing = dict(
        Result.objects.filter(
            pk__in=[current_ids[plan_id] for plan_id in contested], solver_version=SOLVER_VERSION
        ).values_list("pk", "input_hash")
    )
    contested = [
        plan_id
        for plan_id in contested
        if existing.get(current_ids[plan_id]) not in (None, last_solve[plan_id][0])
    ]
    if not contested:
        return set()
    plans = list(Plan.objects.filter(pk__in=contested).select_related(*adapters.PLAN_RELATED, "site"))
    team_ids = {plan.team_id for plan in plans}
    sheets = pricing.sheets_for_teams(books=pricing.newest_books(team_ids=team_ids), team_ids=team_ids)
    keep: set[int] = set()
    for plan in plans:
        try:
            now = plan_inputs(plan=plan, sheet=sheets[plan.team_id]).document
            if now == last_solve[plan.pk][1]:
                continue  # the run solved the plan's inputs of now: its result is the current one
            now_hash = input_hash_of(now)
        except (SoftTimeLimitExceeded, DatabaseError):
            raise  # the task's time limit or the database: the store stops, as anywhere else
        except Exception:  # cannot tell which inputs are current: the new solve replaces it, as before
            log.warning("plan %s: its inputs of now could not be resolved at store", plan.pk, exc_info=True)
            continue
        if existing[current_ids[plan.pk]] == now_hash:
            keep.add(plan.pk)
    return keep


def results_store(*, solved: Sequence[Solved], claim: Claim | None) -> dict[int, Stored]:
    """Store the reports of many runs in one transaction; returns {run id: Stored}.

    Under row locks on the plans (taken in id order, so two workers cannot deadlock): a report whose
    (plan, input_hash, solver_version) is stored already returns that result (a solve's becomes the plan's
    current result again, with a ``figure.moved`` event per figure over the team's threshold against the
    result it replaces: prices that came back move the figures back); the others become version n+1 of
    their plan, with ``previous`` and ``delta`` against the plan's current result for a solve (never a sweep
    or a search), against the newest result of the same kind for the others. Runs are marked succeeded
    only where ``claim`` still holds them. A run of the same plan later in ``solved`` is numbered after an
    earlier one. With a ``claim``, runs this delivery no longer holds are left out (neither stored nor in the
    answer)."""
    from solvers import SOLVER_VERSION

    if not solved:
        return {}
    now = timezone.now()
    stored: dict[int, Stored] = {}
    with transaction.atomic():
        if claim is not None:
            # Only the runs this delivery still holds are stored: one whose lease ran out meanwhile (the
            # sweeper re-queued or capped it) leaves no result, no current result and no event behind. The
            # row locks keep them held until the final UPDATE marks them succeeded.
            held = set(
                Run.objects.select_for_update()
                .filter(
                    pk__in=[item.run.pk for item in solved],
                    status=STATUS_RUNNING,
                    claim_task_id=claim.task_id,
                )
                .order_by("pk")
                .values_list("pk", flat=True)
            )
            solved = [item for item in solved if item.run.pk in held]
            if not solved:
                return {}
        plan_ids = sorted({item.run.plan_id for item in solved})
        hashes = {item.run.pk: item.input_hash for item in solved}
        solvers_of = {
            item.run.pk: str(item.report.get("solver_version") or SOLVER_VERSION) for item in solved
        }
        locked = list(
            Plan.objects.select_for_update()
            .filter(pk__in=plan_ids)
            .order_by("pk")
            .values_list("pk", "team_id", "latest_result_id", "archived_at")
        )
        archived = {plan_id for plan_id, _, _, archived_at in locked if archived_at is not None}
        if archived:
            # Archived while the run solved: an archived plan no longer runs, so nothing is stored for it.
            gone = [item.run.pk for item in solved if item.run.plan_id in archived]
            Run.objects.filter(pk__in=gone, status=STATUS_RUNNING).update(
                status=STATUS_FAILED,
                finished_at=now,
                lease_expires_at=None,
                error="the plan is archived: an archived plan no longer runs",
            )
            solved = [item for item in solved if item.run.plan_id not in archived]
            plan_ids = [plan_id for plan_id in plan_ids if plan_id not in archived]
            locked = [row for row in locked if row[0] not in archived]
            if not solved:
                return {}
        teams = {plan_id: team_id for plan_id, team_id, _, _ in locked}
        current_ids = {plan_id: result_id for plan_id, _, result_id, _ in locked if result_id is not None}
        known_rows = {
            row["pk"]: row
            for row in Result.objects.filter(
                plan_id__in=plan_ids,
                input_hash__in=set(hashes.values()),
                solver_version__in=set(solvers_of.values()),
            ).values("plan_id", "input_hash", "solver_version", "kind", *_PREVIOUS_FIELDS)
        }
        known: dict[tuple[int, str, str], Stored] = {
            (row["plan_id"], row["input_hash"], row["solver_version"]): Stored(
                result_id=pk, version=row["version"], created=False
            )
            for pk, row in known_rows.items()
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
            .values("plan_id", "kind", "solver_version", *_PREVIOUS_FIELDS)
        }
        # A solve is compared with the plan's current result, which is not the newest solve when prices came
        # back to ones solved before (the current result went back to that earlier version).
        for row in Result.objects.filter(pk__in=list(current_ids.values()), kind=RUN_KIND_SOLVE).values(
            "plan_id", "kind", "solver_version", *_PREVIOUS_FIELDS
        ):
            latest[(row["plan_id"], RUN_KIND_SOLVE)] = row
        keeping = _plans_keeping_current(
            last_solve={
                item.run.plan_id: (hashes[item.run.pk], item.inputs.document)
                for item in solved
                if item.run.kind == RUN_KIND_SOLVE
            },
            current_ids=current_ids,
        )
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
                    reused = known_rows.get(known[identity].result_id)
                    before = latest.get((plan_id, kind))
                    if (
                        kind == RUN_KIND_SOLVE
                        and reused is not None
                        and reused["kind"] == RUN_KIND_SOLVE
                        and plan_id not in keeping
                    ):
                        if before is not None and before["pk"] != reused["pk"]:
                            new_events += events.current_result_events(
                                result=reused,
                                before=before,
                                team_id=teams[plan_id],
                                run_id=item.run.pk,
                                thresholds=thresholds.get(teams[plan_id]) or {},
                            )
                        latest[(plan_id, kind)] = reused
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
                    # a result that does not become current moves no figure of the plan
                    thresholds={} if plan_id in keeping else thresholds.get(result.team_id) or {},
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
                    "solver_version": result.solver_version,
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
        current = {plan_id: result_id for plan_id, result_id in current.items() if plan_id not in keeping}
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
