"""A plan's inputs: its scenario rows (pinned or latest revisions) and the price books in effect, turned into
the document a solve uses (``plan_inputs``), with the provenance a stored result records (``snapshot``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scenarios import adapters, pricing
from scenarios.models import Plan
from solvers.prices import Pricing


@dataclass(frozen=True)
class PlanInputs:
    """Everything a solve of a plan rests on, resolved now: the priced ``document`` a solve uses, the
    unpriced ``base_document`` and the ``pricing`` that priced it (a sweep sets its points' fields on the
    base and prices each point with the same pricing, so a point that changes the accelerator or the
    region gets that accelerator's and region's prices)."""

    document: dict[str, Any]
    prices: dict[str, dict[str, Any]]
    revisions: adapters.PlanRevisions
    sheet: pricing.PriceSheet
    base_document: dict[str, Any] = field(default_factory=dict)
    site_name: str | None = None
    cloud_provider: str = ""

    @property
    def pricing(self) -> Pricing:
        return Pricing(sheet=self.sheet, site_name=self.site_name, cloud_provider=self.cloud_provider)

    def snapshot(self) -> dict[str, Any]:
        books = {
            "global": _book_snapshot(self.sheet.global_book),
            "team": _book_snapshot(self.sheet.team_book),
        }
        return {
            "document": self.document,
            "prices": self.prices,
            "price_books": books,
            "revisions": self.revisions.snapshot(),
        }


def _book_snapshot(book: pricing.BookRef | None) -> dict[str, Any] | None:
    return None if book is None else {"id": book.id, "version": book.version, "name": book.name}


def plan_inputs(*, plan: Plan, sheet: pricing.PriceSheet | None = None) -> PlanInputs:
    revisions = adapters.plan_revisions(plan=plan)
    sheet = sheet if sheet is not None else pricing.sheet_for_team(team_id=plan.team_id)
    base = adapters.scenario_document(plan=plan, revisions=revisions)
    prices_for = Pricing(sheet=sheet, site_name=plan.site.name, cloud_provider=plan.cloud_provider)
    document, prices = prices_for.apply(base)
    return PlanInputs(
        document=document,
        prices=prices,
        revisions=revisions,
        sheet=sheet,
        base_document=base,
        site_name=prices_for.site_name,
        cloud_provider=prices_for.cloud_provider,
    )


def plan_document(*, plan: Plan) -> dict[str, Any]:
    """The resolved scenario document that a run of this plan would solve now, prices applied."""
    return plan_inputs(plan=plan).document


def plan_base_document(*, plan: Plan) -> dict[str, Any]:
    """The plan's scenario document before prices are applied (what a sweep sets its fields on)."""
    return adapters.scenario_document(plan=plan, revisions=adapters.plan_revisions(plan=plan))
