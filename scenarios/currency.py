"""Whether a stored result is still current: would a run of its plan today find this very result?

A result is identified by (plan, input hash, solver version) (``execution.results_store``). It is current
when both still hold:

* solver   it was made by this solver (``solvers.SOLVER_VERSION``);
* inputs   the identity a run of the plan would have now equals the result's: the hash of the plan's
           resolved, priced document for a solve; for a search or a sweep the hash of its job (the document,
           the job's options and, for a sweep, the books its points are priced with: ``search_jobs``).

So an edit that comes back to the same inputs, or a price book that does not touch the plan's prices,
leaves the result current; an edit made while a run was in flight, a renamed site whose ``site:`` price no
longer applies, or a price a sweep point used that a book has since changed, makes it stale. Each stale
result says why in words (``reasons``): the solver, the revisions the plan solves now, the prices it would
use now, or that its other inputs (training, economics, the parts' documents) changed.

The cost is a handful of queries for any number of results (their provenance, their plans, the newest books
and their entries, the options of their jobs), plus resolving each distinct plan once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from scenarios import adapters, pricing
from scenarios.models import RUN_KIND_SEARCH, RUN_KIND_SWEEP, Plan, Result, Run


@dataclass(frozen=True)
class Currency:
    current: bool
    reasons: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"current": self.current, "stale_reasons": list(self.reasons)}


_RESULT_FIELDS = (
    "pk",
    "plan_id",
    "team_id",
    "kind",
    "solver_version",
    "input_hash",
    "cluster_revision_id",
    "model_revision_id",
    "site_revision_id",
    "prices",
)


def identity_now(*, kind: str, inputs: Any, params: dict[str, Any]) -> str:
    """The input hash a run of ``kind`` on these plan inputs would store now (``services.PlanInputs``;
    ``params`` are the job's own: its search options, or its sweep and search sections). Raises
    ``solvers.ScenarioError`` when the inputs no longer resolve."""
    from scenarios import execution, search_jobs

    if kind == RUN_KIND_SEARCH:
        return search_jobs._job_hash(
            kind=RUN_KIND_SEARCH, document=inputs.document, options=dict(params.get("search") or {})
        )
    if kind == RUN_KIND_SWEEP:
        planned = search_jobs._plan_of(inputs.base_document, params)
        return search_jobs._sweep_hash(
            document=inputs.base_document, planned=planned, prices_for=inputs.pricing
        )
    return execution.input_hash_of(inputs.document)


def _why(row: dict[str, Any], plan: Plan, inputs: Any, documents: dict[tuple[str, int], Any]) -> list[str]:
    """What differs between the result's inputs and the plan's now, in words (a revision counts only when
    its document differs from the one the result used: an edit that came back is the same input)."""
    why: list[str] = []
    for part in ("cluster", "model", "site"):
        now = getattr(plan, f"{part}_revision") or getattr(plan, part).latest_revision
        used = documents.get((part, row[f"{part}_revision_id"]))
        if now is not None and now.pk != row[f"{part}_revision_id"] and now.document != used:
            why.append(f"the plan now solves {part} revision {now.number} (id {now.pk})")
    if pricing.price_values(inputs.prices) != pricing.price_values(row["prices"] or {}):
        why.append("the prices the plan would be solved with now differ (a price book or the site changed)")
    elif row["kind"] == RUN_KIND_SWEEP:
        why.append(
            "a price book was published since (a sweep is keyed by the books its points are priced with)"
        )
    if not why:
        why.append("the plan's inputs changed since this result (training, economics or a part's document)")
    return why


def results_currency(result_ids: Iterable[int]) -> dict[int, Currency]:
    """{result id: Currency} for these results (ids that do not exist are left out)."""
    from scenarios.services import plan_inputs
    from solvers import SOLVER_VERSION, ScenarioError

    rows = list(Result.objects.filter(pk__in=list(result_ids)).values(*_RESULT_FIELDS))
    if not rows:
        return {}
    plans = {
        plan.pk: plan
        for plan in Plan.objects.filter(pk__in={row["plan_id"] for row in rows}).select_related(
            *adapters.PLAN_RELATED, "site"
        )
    }
    team_ids = {row["team_id"] for row in rows}
    sheets = pricing.sheets_for_teams(books=pricing.newest_books(team_ids=team_ids), team_ids=team_ids)
    jobs = [row["pk"] for row in rows if row["kind"] in (RUN_KIND_SEARCH, RUN_KIND_SWEEP)]
    params: dict[int, dict[str, Any]] = {}
    for result_id, run_params in (
        Run.objects.filter(result_id__in=jobs).order_by("pk").values_list("result_id", "params")
    ):
        params.setdefault(result_id, run_params or {})
    inputs_of: dict[int, Any] = {}
    identities: dict[tuple[int, str, str], str] = {}
    stale: list[tuple[dict[str, Any], Plan, Any, list[str]]] = []
    out: dict[int, Currency] = {}
    for row in rows:
        plan = plans[row["plan_id"]]
        why: list[str] = []
        if row["solver_version"] != SOLVER_VERSION:
            why.append(f"made by solver {row['solver_version']}; the solver is now {SOLVER_VERSION}")
        try:
            if plan.pk not in inputs_of:
                inputs_of[plan.pk] = plan_inputs(plan=plan, sheet=sheets[plan.team_id])
            inputs = inputs_of[plan.pk]
            # A plan's identity for a kind and job options is worked out once, however many of its results
            # are checked (a solve's is the same for all of them: the hash of its priced document).
            run_params = params.get(row["pk"], {})
            identity_key = (plan.pk, row["kind"], json.dumps(run_params, sort_keys=True, default=str))
            if identity_key not in identities:
                identities[identity_key] = identity_now(kind=row["kind"], inputs=inputs, params=run_params)
            same = identities[identity_key] == row["input_hash"]
            if not same:
                stale.append((row, plan, inputs, why))
                continue
        except (ValidationError, ScenarioError) as exc:
            messages = exc.messages if isinstance(exc, ValidationError) else [str(e) for e in exc.errors]
            why.append(f"the plan's inputs no longer resolve: {'; '.join(messages)}")
        out[row["pk"]] = Currency(current=not why, reasons=tuple(why))
    documents = _revision_documents([row for row, _, _, _ in stale])
    for row, plan, inputs, why in stale:
        why.extend(_why(row, plan, inputs, documents))
        out[row["pk"]] = Currency(current=False, reasons=tuple(why))
    return out


def _revision_documents(rows: list[dict[str, Any]]) -> dict[tuple[str, int], Any]:
    """The documents of the revisions these results used, one query per part (only for stale results)."""
    from scenarios.services import REVISION_MODELS

    documents: dict[tuple[str, int], Any] = {}
    for part, model in REVISION_MODELS.items():
        ids = {row[f"{part}_revision_id"] for row in rows}
        if ids:
            for pk, document in model._default_manager.filter(pk__in=ids).values_list("pk", "document"):
                documents[(part, pk)] = document
    return documents
