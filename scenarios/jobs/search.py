"""The search executor: a design-space search of a plan, run through ``scenarios.execute_run`` like a
solve, reporting layouts evaluated / layouts to evaluate on the Run row while the engine works."""

from __future__ import annotations

import logging
import time
from typing import Any

from scenarios import adapters, execution
from scenarios.inputs import PlanInputs
from scenarios.jobs.requests import _job_hash
from scenarios.models import (
    RUN_KIND_SEARCH,
    Run,
)
from scenarios.runs import claims

log = logging.getLogger(__name__)


# How often a search writes its progress to the Run row.
SEARCH_PROGRESS_PERIOD_S = 0.2


class _SearchProgress:
    """The search's progress callback: layouts evaluated / to evaluate on the Run row, at most every
    ``SEARCH_PROGRESS_PERIOD_S`` (and always the last step), with the claim's conditional UPDATE."""

    def __init__(self, *, run_id: int, claim: execution.Claim) -> None:
        self.run_id = run_id
        self.claim = claim
        self.last_s: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and self.last_s is not None and now - self.last_s < SEARCH_PROGRESS_PERIOD_S:
            return
        self.last_s = now
        claims.run_progress(run_id=self.run_id, claim=self.claim, points_done=done, points_total=total)


def search_executor(inputs: PlanInputs, run: Run, claim: execution.Claim) -> dict[str, Any]:
    """Executor of ``kind="search"`` runs (``execution.EXECUTORS``): the search document of the plan's
    inputs, keyed by ``_job_hash`` so that it is stored apart from the plan's solve result."""
    from solvers import SOLVER_VERSION
    from solvers.search.document import search_document

    document = inputs.document
    options = dict((run.params or {}).get("search") or {})
    out = search_document(
        {**document, "search": options}, progress=_SearchProgress(run_id=run.pk, claim=claim)
    )
    out["schema_version"] = adapters.SCHEMA_VERSION
    out["solver_version"] = SOLVER_VERSION
    out["kind"] = RUN_KIND_SEARCH
    out["input_hash"] = _job_hash(kind=RUN_KIND_SEARCH, document=document, options=options)
    return execution.label_book_prices(out, inputs.prices)
