"""Executing runs: claim, solve (pure; repeating it costs only time) and store, with the claimed runs kept
leased while they solve; and sending runs to the broker (``enqueue_runs``, or after commit, deferred to the
sweeper when the broker is down)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from celery.exceptions import SoftTimeLimitExceeded
from django.db import Error as DatabaseError

from scenarios import adapters, conf, pricing, queue
from scenarios.inputs import plan_inputs
from scenarios.models import (
    RUN_KIND_SOLVE,
    RUN_KIND_SWEEP,
    STATUS_FAILED,
    STATUS_QUEUED,
    STATUS_SUCCEEDED,
    Run,
)
from scenarios.runs.claims import BUSY, CLAIMED, RESUMED, Claim, run_fail, runs_claim
from scenarios.runs.lease import keep_runs_leased
from scenarios.runs.store import Solved, results_store

log = logging.getLogger(__name__)


# --- Executors by run kind ----------------------------------------------------------------------------

# (the plan's inputs: a services.PlanInputs, the run, the claim) -> the report document.
Executor = Callable[[Any, Run, Claim], dict[str, Any]]


def _solve(inputs: Any, run: Run, claim: Claim) -> dict[str, Any]:
    """A plain solve of the plan's priced document; the assumptions of book prices name their book."""
    from solvers import solve

    return label_book_prices(cast(dict[str, Any], solve(inputs.document)), inputs.prices)


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


# A sweep is solved in many tasks (its chunks), started by its own task (``scenarios.sweep_start``), which claims
# it under its own task id. A sweep that reaches ``execute_run(s)`` anyway (a message sent before sweeps were
# routed, ``enqueue_runs``) is handed over to that task, never claimed or solved whole here: a batch's claim
# would make the batch's redeliveries and time limits the sweep's.
HANDED_OVER = "handed over"
STARTED_KINDS: tuple[str, ...] = (RUN_KIND_SWEEP,)


def send_starts(run_ids: Sequence[int]) -> int:
    """One ``scenarios.sweep_start`` message per run (of ``STARTED_KINDS``); raises when the broker is down."""
    return queue.send_many((queue.SWEEP_START, [run_id]) for run_id in run_ids)


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
        if run.plan.archived_at is not None:
            # archived after the run was queued (a price fan-out's, or a user's): as run_submit refuses it
            run_fail(
                run_id=run.pk, claim=claim, error="the plan is archived: an archived plan no longer runs"
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
        except (SoftTimeLimitExceeded, DatabaseError):
            raise  # the task's own handling: the time limit fails or re-queues, a database outage retries
        except Exception as exc:
            # A fault of this run alone (a solver error no input check caught) fails it with the reason, and
            # the chunk's other runs are stored, instead of all of them waiting out their leases.
            log.exception("run %s: internal solver error", run.pk)
            run_fail(run_id=run.pk, claim=claim, error=f"internal solver error: {type(exc).__name__}: {exc}")
            outcomes[run.pk] = Outcome(run_id=run.pk, status=STATUS_FAILED)
            continue
        solved.append(Solved(run=run, inputs=inputs, report=report))
    return solved


def runs_execute(
    *, run_ids: Sequence[int], claim: Claim, sheets: dict[int, pricing.PriceSheet] | None = None
) -> list[Outcome]:
    """Claim, solve and store runs (a chunk from the fan-out, or one run). Database and broker errors
    propagate so the task retries; a run whose input the solver refuses fails with the field paths."""
    outcomes = _hand_over(run_ids=run_ids)
    to_solve = [run_id for run_id in run_ids if run_id not in outcomes]
    states = runs_claim(run_ids=to_solve, claim=claim) if to_solve else {}
    outcomes.update({run_id: Outcome(run_id=run_id, status=state) for run_id, state in states.items()})
    held = [run_id for run_id, state in states.items() if state in (CLAIMED, RESUMED)]
    sheets = sheets if sheets is not None else {}
    if not held:
        return [outcomes[run_id] for run_id in run_ids]
    # The claimed runs stay leased while they solve: a dead worker's runs expire within one lease. The
    # store runs after the keeper stopped (its transaction locks the run rows the keeper would update; a
    # lease renewed at most a third of a lease ago outlasts a store by far).
    with keep_runs_leased(run_ids=held, claim=claim):
        solved = _solve_held(held=held, claim=claim, sheets=sheets, outcomes=outcomes)
    stored = results_store(solved=solved, claim=claim)
    for item in solved:
        entry = stored.get(item.run.pk)
        outcomes[item.run.pk] = (
            Outcome(run_id=item.run.pk, status=BUSY)  # its claim was lost while it solved: nothing stored
            if entry is None
            else Outcome(
                run_id=item.run.pk, status=STATUS_SUCCEEDED, result_id=entry.result_id, created=entry.created
            )
        )
    return [outcomes[run_id] for run_id in run_ids]


def _hand_over(*, run_ids: Sequence[int]) -> dict[int, Outcome]:
    """Send the queued runs of a kind started by a task of its own (``STARTED_KINDS``) to that task; such a run
    that is no longer queued is left to the task that holds it. Their outcomes, by run id."""
    rows = Run.objects.filter(pk__in=list(run_ids), kind__in=STARTED_KINDS).values_list("pk", "status")
    outcomes = {
        run_id: Outcome(run_id=run_id, status=HANDED_OVER if state == STATUS_QUEUED else state)
        for run_id, state in rows
    }
    queued = [run_id for run_id, outcome in outcomes.items() if outcome.status == HANDED_OVER]
    if queued:
        send_starts(queued)
    return outcomes


def run_execute(*, run_id: int, claim: Claim, sheets: dict[int, pricing.PriceSheet] | None = None) -> Outcome:
    """``runs_execute`` for one run."""
    return runs_execute(run_ids=[run_id], claim=claim, sheets=sheets)[0]


# --- Enqueueing ---------------------------------------------------------------------------------------


def enqueue_runs(*, run_ids: Sequence[int], chunk_size: int | None = None) -> int:
    """Send runs to the broker now, ``chunk_size`` run ids per message over one connection (a sweep to its own
    start task, ``send_starts``). Returns the number of messages; raises when the broker is down (a caller
    inside a task retries). A lost message is harmless: the sweeper sends the run again."""
    if not run_ids:
        return 0
    started = set(
        Run.objects.filter(pk__in=list(run_ids), kind__in=STARTED_KINDS).values_list("pk", flat=True)
    )
    solved = [run_id for run_id in run_ids if run_id not in started]
    sent = send_starts([run_id for run_id in run_ids if run_id in started]) if started else 0
    return sent + queue.send_many(queue.run_messages(solved, chunk_size=chunk_size or conf.run_chunk_size()))


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
