"""Sweep jobs: a sweep's inputs frozen on its run, its points solved in ``SweepChunk`` rows (claimed like
runs, recorded once), and the final aggregation stored as a versioned result."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from scenarios import adapters, conf, execution, pricing, queue
from scenarios import inputs as plan_inputs_module
from scenarios.inputs import PlanInputs
from scenarios.jobs.requests import _chunk_size, _plan_of, _sweep_hash
from scenarios.models import (
    RUN_KIND_SWEEP,
    STATUS_FAILED,
    STATUS_RUNNING,
    STATUS_SUCCEEDED,
    ClusterRevision,
    ModelRevision,
    Plan,
    Run,
    SiteRevision,
    SweepChunk,
)
from solvers.prices import Pricing

log = logging.getLogger(__name__)

CHUNK_GONE = "gone"  # the run no longer exists (deleted with its plan)
CHUNK_FINISHED = "finished"  # the run is done (succeeded or failed) or not running
CHUNK_STALE = "stale"  # the run's inputs were frozen again since this chunk was sent
CHUNK_DONE = "done"  # the chunk's rows are recorded already
CHUNK_GO = "go"  # this delivery solves the chunk
CHUNK_CAPPED = "capped"  # the chunk lost its worker too often: the run failed


# --- Sweep: the job state in Run.params["job"], the chunks in SweepChunk rows ------------------------
#
# {"input_hash": key of the frozen inputs, "inputs": PlanInputs.snapshot(), "document", "pricing",
#  "chunk_points": n, "chunks_total": k}; chunk k is the SweepChunk (run, k) of that input_hash: claimed like a
#  run, its rows recorded once.

_CHUNK_GAVE_UP_SQL = (
    "'gave up after ' || attempts || ' attempts: the worker solving this chunk was lost each time "
    "(killed, out of memory, or over the hard time limit) before it finished'"
)


def _lease() -> Any:
    import datetime as dt

    return timezone.now() + dt.timedelta(seconds=conf.run_lease_s())


@dataclass(frozen=True)
class SweepJob:
    """A sweep's frozen inputs and chunking, read from ``Run.params``."""

    run_id: int
    input_hash: str
    document: dict[str, Any]  # the plan's unpriced document: each point is priced after it is set
    pricing: Pricing
    chunk_points: int
    chunks_total: int
    points_total: int

    def bounds(self, chunk: int) -> tuple[int, int]:
        start = chunk * self.chunk_points
        return start, min(self.points_total, start + self.chunk_points)


def _job_of(run_id: int, params: Mapping[str, Any], points_total: int) -> SweepJob | None:
    job = params.get("job") or {}
    if not job.get("input_hash"):
        return None
    return SweepJob(
        run_id=run_id,
        input_hash=str(job["input_hash"]),
        document=dict(job.get("document") or {}),
        pricing=Pricing.from_json(job.get("pricing")),
        chunk_points=int(job["chunk_points"]),
        chunks_total=int(job["chunks_total"]),
        points_total=points_total,
    )


def _freeze(
    *, run: Run, claim: execution.Claim, inputs: PlanInputs, snapshot: dict[str, Any]
) -> SweepJob | None:
    """Freeze the sweep's inputs on the run (only while ``claim`` holds it): the plan's unpriced document
    and the pricing every point is priced with once its fields are set. Recorded chunks are dropped
    because they belong to other inputs. None when the claim was lost."""
    document = inputs.base_document
    planned = _plan_of(document, run.params)
    points = len(planned.points)
    chunk_points = int(run.params.get("chunk_points") or _chunk_size(points=points, layouts_per_point=1))
    key = _sweep_hash(document=document, planned=planned, prices_for=inputs.pricing)
    chunks_total = math.ceil(points / chunk_points)
    job: dict[str, Any] = {
        "input_hash": key,
        "document": document,
        "pricing": inputs.pricing.to_json(),
        "inputs": snapshot,
        "chunk_points": chunk_points,
        "chunks_total": chunks_total,
    }
    params = {**run.params, "job": job}
    with transaction.atomic():
        held = Run.objects.filter(pk=run.pk, status=STATUS_RUNNING, claim_task_id=claim.task_id).update(
            params=params, points_done=0, points_total=points, lease_expires_at=_lease()
        )
        if held != 1:
            return None
        SweepChunk.objects.filter(run_id=run.pk).delete()
        SweepChunk.objects.bulk_create(
            SweepChunk(run_id=run.pk, index=k, input_hash=key, max_attempts=run.max_attempts)
            for k in range(chunks_total)
        )
    return _job_of(run.pk, params, points)


def _chunks_of(job: SweepJob) -> Any:
    return SweepChunk.objects.filter(run_id=job.run_id, input_hash=job.input_hash)


def _missing_chunks(run_id: int, job: SweepJob) -> list[int]:
    return list(
        _chunks_of(job).exclude(status=STATUS_SUCCEEDED).order_by("index").values_list("index", flat=True)
    )


def _recorded(run_id: int, chunk: int) -> bool:
    return SweepChunk.objects.filter(run_id=run_id, index=chunk, status=STATUS_SUCCEEDED).exists()


def _chunk_record(*, job: SweepJob, chunk: int, rows: list[dict[str, Any]]) -> bool:
    """Record a chunk's rows and count its points, once: the conditional UPDATE matches only while the run
    is running, the chunk belongs to the same frozen inputs and is not recorded yet. True if this call
    recorded it."""
    with transaction.atomic():
        updated = (
            _chunks_of(job)
            .filter(index=chunk, run__status=STATUS_RUNNING)
            .exclude(status=STATUS_SUCCEEDED)
            .update(
                status=STATUS_SUCCEEDED,
                rows=rows,
                finished_at=timezone.now(),
                lease_expires_at=None,
                error="",
            )
        )
        if updated == 1:
            Run.objects.filter(pk=job.run_id).update(
                points_done=F("points_done") + len(rows), lease_expires_at=_lease()
            )
    return updated == 1


def _solve_chunk(job: SweepJob, planned: Any, chunk: int) -> list[dict[str, Any]]:
    from solvers.search.envelope import load_envelope
    from solvers.sweep import sweep_point

    start, stop = job.bounds(chunk)
    envelope = load_envelope()  # once a chunk: every point is judged against the same file
    return [
        sweep_point(planned, index, pricing=job.pricing, envelope=envelope) for index in range(start, stop)
    ]


def fail_running(*, run_id: int, error: str) -> bool:
    """Fail a running sweep whichever delivery holds it (a chunk over its time limit or attempt cap)."""
    return (
        Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(
            status=STATUS_FAILED, finished_at=timezone.now(), lease_expires_at=None, error=error[:10_000]
        )
        == 1
    )


# --- Sweep: start, chunks, finish ---------------------------------------------------------------------


def _inputs_from_snapshot(*, plan: Plan, snapshot: Mapping[str, Any]) -> PlanInputs:
    """The ``PlanInputs`` a sweep froze, rebuilt from its snapshot (so the stored result's provenance is
    exactly the inputs its points were solved with, even if prices or revisions changed since)."""
    revisions = snapshot["revisions"]
    books = snapshot.get("price_books") or {}

    def book(ref: Mapping[str, Any] | None, team_id: int | None) -> pricing.BookRef | None:
        if not ref:
            return None
        return pricing.BookRef(
            id=int(ref["id"]), version=int(ref["version"]), team_id=team_id, name=str(ref["name"])
        )

    return PlanInputs(
        document=dict(snapshot["document"]),
        prices=dict(snapshot.get("prices") or {}),
        revisions=adapters.PlanRevisions(
            cluster=ClusterRevision.objects.get(pk=revisions["cluster"]["revision_id"]),
            model=ModelRevision.objects.get(pk=revisions["model"]["revision_id"]),
            site=SiteRevision.objects.get(pk=revisions["site"]["revision_id"]),
        ),
        sheet=pricing.PriceSheet(
            global_book=book(books.get("global"), None), team_book=book(books.get("team"), plan.team_id)
        ),
    )


def sweep_begin(*, run_id: int, claim: execution.Claim) -> str:
    """Claim a queued sweep (attempt cap, lease), freeze its inputs (first attempt only) and send a group
    of chunk tasks for the chunks not recorded yet. Returns what happened."""
    from solvers import ScenarioError

    state = execution.run_claim(run_id=run_id, claim=claim)
    if state not in (execution.CLAIMED, execution.RESUMED):
        return state
    run = Run.objects.select_related(*(f"plan__{p}" for p in adapters.PLAN_RELATED), "plan__site").get(
        pk=run_id
    )
    job = _job_of(run.pk, run.params, run.points_total)
    if job is None or "revisions" not in ((run.params.get("job") or {}).get("inputs") or {}):
        try:
            inputs = plan_inputs_module.plan_inputs(plan=run.plan)
            job = _freeze(run=run, claim=claim, inputs=inputs, snapshot=inputs.snapshot())
        except ScenarioError as exc:
            detail = "; ".join(str(e) for e in exc.errors) or str(exc)
            execution.run_fail(run_id=run_id, claim=claim, error=f"the sweep cannot be solved: {detail}")
            return STATUS_FAILED
        except ValidationError as exc:
            execution.run_fail(
                run_id=run_id, claim=claim, error=f"the plan cannot be resolved: {'; '.join(exc.messages)}"
            )
            return STATUS_FAILED
        if job is None:
            return execution.BUSY
    missing = _missing_chunks(run_id, job)
    if not missing:
        return sweep_finish(run_id=run_id)
    send_chunks(run_id=run_id, chunks=missing, input_hash=job.input_hash)
    log.info("sweep run %s: %d chunks of %d points sent", run_id, len(missing), job.chunk_points)
    return "started"


def chunk_claim(*, run_id: int, chunk: int, input_hash: str, claim: execution.Claim) -> str:
    """Take a chunk for this delivery with the run claim's conditional UPDATEs (``execution.claim_rows``):
    a new delivery or a redelivery of the same message (its worker died) is an attempt; our own retry after
    a database or broker error (same task, another retry count) is not; a chunk that a live delivery holds
    is BUSY. Past ``max_attempts`` the chunk and its run fail with the reason."""
    run = Run.objects.filter(pk=run_id).values_list("status", "params__job__input_hash").first()
    if run is None:
        return CHUNK_GONE
    if run[0] != STATUS_RUNNING:
        return CHUNK_FINISHED
    if run[1] != input_hash:
        return CHUNK_STALE
    row = (
        SweepChunk.objects.filter(run_id=run_id, index=chunk, input_hash=input_hash)
        .values_list("pk", "status")
        .first()
    )
    if row is None:
        return CHUNK_STALE
    if row[1] == STATUS_SUCCEEDED:
        return CHUNK_DONE
    state = execution.claim_rows(
        table=SweepChunk._meta.db_table, ids=[row[0]], claim=claim, gave_up=_CHUNK_GAVE_UP_SQL
    )[row[0]]
    if state == execution.CAPPED:
        error = SweepChunk.objects.values_list("error", flat=True).get(pk=row[0])
        fail_running(run_id=run_id, error=f"points chunk {chunk}: {error}")
        return CHUNK_CAPPED
    if state == execution.BUSY:
        return CHUNK_DONE if _recorded(run_id, chunk) else execution.BUSY
    Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(lease_expires_at=_lease())
    return CHUNK_GO


def chunk_execute(*, run_id: int, chunk: int, input_hash: str, claim: execution.Claim) -> str:
    """Solve and record one chunk of a sweep, then finish the sweep if every chunk is recorded."""
    verdict = chunk_claim(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=claim)
    if verdict not in (CHUNK_GO, CHUNK_DONE):
        return verdict
    if verdict == CHUNK_GO:
        run = Run.objects.only("pk", "params", "points_total").get(pk=run_id)
        job = _job_of(run.pk, run.params, run.points_total)
        if job is None or job.input_hash != input_hash:
            return CHUNK_STALE
        try:
            # The sweep's run stays leased while this chunk solves (chunks run under their own task ids).
            with execution.keep_run_leased(run_id=run_id):
                rows = _solve_chunk(job, _plan_of(job.document, run.params), chunk)
        except SoftTimeLimitExceeded:
            raise  # not a solver error: ``sweep_chunk`` fails the run saying the chunk timed out
        except Exception as exc:  # the solver is pure: a failure here repeats on every delivery
            log.exception("sweep run %s: points chunk %s failed", run_id, chunk)
            fail_running(
                run_id=run_id,
                error=f"points chunk {chunk}: internal solver error: {type(exc).__name__}: {exc}",
            )
            return STATUS_FAILED
        if not _chunk_record(job=job, chunk=chunk, rows=rows):
            verdict = CHUNK_DONE
    if sweep_complete(run_id=run_id, input_hash=input_hash):
        sweep_finish(run_id=run_id)
    return "recorded" if verdict == CHUNK_GO else verdict


def sweep_complete(*, run_id: int, input_hash: str) -> bool:
    """True while the run is running on these inputs and every chunk is recorded."""
    run = (
        Run.objects.filter(pk=run_id)
        .values_list("status", "params__job__input_hash", "params__job__chunks_total")
        .first()
    )
    if run is None or run[0] != STATUS_RUNNING or run[1] != input_hash:
        return False
    recorded = SweepChunk.objects.filter(
        run_id=run_id, input_hash=input_hash, status=STATUS_SUCCEEDED
    ).count()
    return recorded >= int(run[2] or 0) > 0


def _best_point(rows: Sequence[Mapping[str, Any]], objective: str) -> dict[str, Any] | None:
    """The point whose best layout ranks first by the objective (ties: step time, then point order), with
    its figures also under the report sections that results promote to columns (step, tco, carbon,
    schedule)."""
    solved = [row for row in rows if "best" in row]
    if not solved:
        return None
    row = min(
        solved,
        key=lambda r: (
            float(r["best"]["metrics"][objective]),
            float(r["best"]["metrics"]["step_s"]),
            int(r["index"]),
        ),
    )
    metrics = row["best"]["metrics"]
    return {
        "index": row["index"],
        "point": row["point"],
        "layout": row["best"]["layout"],
        "metrics": metrics,
        "step": {"step_s": metrics.get("step_s")},
        "tco": {
            "total_usd": metrics.get("total_usd"),
            "usd_per_million_tokens": metrics.get("usd_per_million_tokens"),
        },
        "carbon": {"total_kgco2e": metrics.get("total_kgco2e")},
        "schedule": {"wall_clock_days": metrics.get("wall_clock_days")},
    }


def sweep_report(
    *, job: SweepJob, planned: Any, rows: list[dict[str, Any]], elapsed_s: float
) -> dict[str, Any]:
    """The stored sweep document: ``solvers.sweep.sweep_document``'s fields (one row per point, in order;
    the Pareto front as row indices) plus the best point, the result key and how the job was chunked."""
    from solvers import SOLVER_VERSION
    from solvers.errors import SolverInternalError
    from solvers.sweep import MAX_AXES, MAX_SWEEP_POINTS, sweep_front

    if [row["index"] for row in rows] != list(range(len(planned.points))):
        raise SolverInternalError(
            f"sweep run {job.run_id} has rows for {len(rows)} of {len(planned.points)} points"
        )
    return {
        "schema_version": adapters.SCHEMA_VERSION,
        "solver_version": SOLVER_VERSION,
        "kind": RUN_KIND_SWEEP,
        "input_hash": job.input_hash,
        "objective": planned.request.objective,
        "mode": planned.mode,
        "axes": [{"field": a.field, "values": list(a.values)} for a in planned.axes],
        "points": len(planned.points),
        "solved": sum(1 for row in rows if "best" in row),
        "failed": sum(1 for row in rows if "error" in row),
        "elapsed_s": elapsed_s,
        "compute_s": sum(float(row.get("elapsed_s") or 0.0) for row in rows),
        "rows": rows,
        "pareto_objectives": list(planned.pareto),
        "pareto": sweep_front(rows, planned.pareto),
        "best": _best_point(rows, planned.request.objective),
        "chunks": {"points_per_chunk": job.chunk_points, "count": job.chunks_total},
        "limits": {"max_points": MAX_SWEEP_POINTS, "max_axes": MAX_AXES},
    }


def _rows_of(run_id: int) -> list[dict[str, Any]]:
    recorded = SweepChunk.objects.filter(run_id=run_id, status=STATUS_SUCCEEDED).order_by("index")
    return [row for rows in recorded.values_list("rows", flat=True) for row in rows or []]


def sweep_finish(*, run_id: int) -> str:
    """The final aggregation of a sweep whose chunks are all recorded: rows in point order, the Pareto
    front and the best point, stored with ``execution.results_store`` (the solve's store: versioned, unique
    on (plan, input hash), the run marked succeeded only while it is running). Safe to run twice or
    concurrently: the second finds the stored result and changes nothing."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return CHUNK_GONE
    if run.status != STATUS_RUNNING:
        return run.status
    job = _job_of(run.pk, run.params, run.points_total)
    snapshot = (run.params.get("job") or {}).get("inputs") or {}
    if job is None or not sweep_complete(run_id=run_id, input_hash=job.input_hash):
        return "incomplete"
    if "revisions" not in snapshot:
        return "incomplete"  # inputs frozen without their provenance: ``sweep_begin`` freezes them again
    planned = _plan_of(job.document, run.params)
    started = run.started_at or run.queued_at
    report = sweep_report(
        job=job, planned=planned, rows=_rows_of(run_id), elapsed_s=(timezone.now() - started).total_seconds()
    )
    inputs = _inputs_from_snapshot(plan=run.plan, snapshot=snapshot)
    stored = execution.results_store(
        solved=[execution.Solved(run=run, inputs=inputs, report=report)], claim=None
    ).get(run.pk)
    if stored is None:
        return STATUS_FAILED  # the plan was archived meanwhile: the store failed the run with the reason
    # The rows now live in the result: the chunks are dropped once the run links it.
    if Run.objects.filter(pk=run_id, result_id=stored.result_id).exists():
        SweepChunk.objects.filter(run_id=run_id).delete()
    log.info("sweep run %s stored as result %s (created: %s)", run_id, stored.result_id, stored.created)
    return "succeeded"


def send_chunks(*, run_id: int, chunks: Sequence[int], input_hash: str) -> None:
    """One ``scenarios.sweep_chunk`` message per chunk (by name, over one connection), so every worker
    process on the queue takes chunks."""
    queue.send_many((queue.SWEEP_CHUNK, [run_id, chunk, input_hash]) for chunk in chunks)
