"""Whether a stored result is still current: would a run of its plan today rest on the same inputs?

A result is current when all of these still hold:

* solver     it was made by this solver (``solvers.SOLVER_VERSION``);
* plan       the plan's inputs (parts, pinned revisions, training, economics, cloud provider) have not been
             edited since it was stored (``Plan.inputs_changed_at``);
* revisions  the cluster, model and site revisions the plan solves now are the ones it used;
* prices     the price books in effect are the ones it used, or, where a newer book was published since,
             that book leaves every price of this plan as it was (a book that does not touch a plan does not
             make its result stale; a re-run would store the same numbers and find this result).

Each failed check gives a reason in words, so a dashboard can say why a figure is stale. A handful of
queries for any number of results: one for the results' provenance, one for their plans, one for the
newest books, and one more for those books' entries when a book was published since some result (those
plans are priced again with today's books).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from scenarios import adapters, pricing
from scenarios.models import Plan, Result


@dataclass(frozen=True)
class Currency:
    current: bool
    reasons: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"current": self.current, "stale_reasons": list(self.reasons)}


_RESULT_FIELDS = (
    "pk",
    "plan_id",
    "kind",
    "solver_version",
    "created_at",
    "cluster_revision_id",
    "model_revision_id",
    "site_revision_id",
    "price_book_id",
    "team_price_book_id",
)


def _same_prices(plan: Plan, used: dict[str, Any], sheet: pricing.PriceSheet) -> bool:
    """Whether pricing the plan's current document with today's books gives the prices the result used."""
    from scenarios.services import plan_inputs

    try:
        now = plan_inputs(plan=plan, sheet=sheet).prices
    except ValidationError:  # a part without a revision: its prices cannot be said to be the same
        return False
    return pricing.price_values(now) == pricing.price_values(used)


def results_currency(result_ids: Iterable[int]) -> dict[int, Currency]:
    """{result id: Currency} for these results (ids that do not exist are left out)."""
    from solvers import SOLVER_VERSION

    rows = list(Result.objects.filter(pk__in=list(result_ids)).values(*_RESULT_FIELDS, "team_id", "prices"))
    if not rows:
        return {}
    plans = {
        plan.pk: plan
        for plan in Plan.objects.filter(pk__in={row["plan_id"] for row in rows}).select_related(
            *adapters.PLAN_RELATED, "site"
        )
    }
    team_ids = {row["team_id"] for row in rows}
    books = pricing.newest_books(team_ids=team_ids)
    newest = {team_id: book.pk for team_id, book in books.items()}
    reasons: dict[int, list[str]] = {row["pk"]: [] for row in rows}
    books_moved: list[dict[str, Any]] = []
    for row in rows:
        why = reasons[row["pk"]]
        plan = plans[row["plan_id"]]
        if row["solver_version"] != SOLVER_VERSION:
            why.append(f"made by solver {row['solver_version']}; the solver is now {SOLVER_VERSION}")
        if row["created_at"] < plan.inputs_changed_at:
            why.append("the plan's inputs were edited after this result")
        for part in ("cluster", "model", "site"):
            now = getattr(plan, f"{part}_revision") or getattr(plan, part).latest_revision
            if now is not None and now.pk != row[f"{part}_revision_id"]:
                why.append(f"the plan now solves {part} revision {now.number} (id {now.pk})")
        if row["price_book_id"] != newest.get(None) or row["team_price_book_id"] != newest.get(
            row["team_id"]
        ):
            books_moved.append(row)
    if books_moved:
        sheets = pricing.sheets_for_teams(books=books, team_ids={row["team_id"] for row in books_moved})
        for row in books_moved:
            if not _same_prices(plans[row["plan_id"]], row["prices"] or {}, sheets[row["team_id"]]):
                reasons[row["pk"]].append("a price book published since changes this plan's prices")
    return {pk: Currency(current=not why, reasons=tuple(why)) for pk, why in reasons.items()}
