"""Rows -> scenario document: the one place that knows how a plan's parts become the solver's input."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from scenarios.models import ClusterRevision, ModelRevision, Plan, SiteRevision

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class PlanRevisions:
    cluster: ClusterRevision
    model: ModelRevision
    site: SiteRevision

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {
            part: {"scenario_id": rev.scenario_id, "revision_id": rev.pk, "number": rev.number}
            for part, rev in (("cluster", self.cluster), ("model", self.model), ("site", self.site))
        }


def plan_revisions(*, plan: Plan) -> PlanRevisions:
    """The revisions a plan solves now: the pinned one of each part, else that scenario's latest.

    Callers that handle many plans should ``select_related`` the revision FKs (``PLAN_RELATED``)."""
    cluster = plan.cluster_revision or plan.cluster.latest_revision
    model = plan.model_revision or plan.model.latest_revision
    site = plan.site_revision or plan.site.latest_revision
    if cluster is None or model is None or site is None:
        raise ValidationError(
            {
                name: "the scenario has no revision"
                for name, rev in (("cluster", cluster), ("model", model), ("site", site))
                if rev is None
            }
        )
    return PlanRevisions(cluster=cluster, model=model, site=site)


# select_related paths that make plan_revisions and scenario_document query-free.
PLAN_RELATED = (
    "cluster__latest_revision",
    "model__latest_revision",
    "site__latest_revision",
    "cluster_revision",
    "model_revision",
    "site_revision",
)


def scenario_document(*, plan: Plan, revisions: PlanRevisions) -> dict[str, Any]:
    """The plan's unpriced scenario document (CONTRACT.md): each part from its revision, training and
    economics from the plan. Deep copies, so callers may mutate the result."""
    return copy.deepcopy(
        document_from_parts(revisions=revisions, training=plan.training, economics=plan.economics)
    )


def document_from_parts(
    *, revisions: PlanRevisions, training: dict[str, Any] | None, economics: dict[str, Any] | None
) -> dict[str, Any]:
    """The same document sharing the rows' objects (no copy): for read-only use over many plans."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": revisions.model.document,
        "cluster": revisions.cluster.document,
        "site": revisions.site.document,
        "training": training or {},
        "economics": economics or {},
    }


REPORT_PROMOTED_FIELDS: dict[str, tuple[str, str]] = {
    "step_s": ("step", "step_s"),
    "mfu": ("step", "mfu"),
    "total_usd": ("tco", "total_usd"),
    "usd_per_million_tokens": ("tco", "usd_per_million_tokens"),
    "total_kgco2e": ("carbon", "total_kgco2e"),
    "wall_clock_days": ("schedule", "wall_clock_days"),
}


def promoted_columns(report: dict[str, Any]) -> dict[str, float | None]:
    """The report figures that results keep in indexed columns (for lists, filters and compare).

    A search or sweep report carries its figures under ``best``; a plain solve at the top level."""
    source = report.get("best") if isinstance(report.get("best"), dict) else report
    values: dict[str, float | None] = {}
    for column, (section, key) in REPORT_PROMOTED_FIELDS.items():
        part = source.get(section) if isinstance(source, dict) else None
        value = part.get(key) if isinstance(part, dict) else None
        values[column] = (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
    return values


DELTA_FIELDS = ("total_usd", "usd_per_million_tokens", "total_kgco2e", "step_s")


def result_delta(
    *,
    current: dict[str, float | None],
    previous: dict[str, float | None] | None,
    previous_version: int | None,
) -> dict[str, Any]:
    """The change of each headline figure against the previous result of the same plan.

    Example: total_usd 1.00e9 -> 0.92e9 gives {"previous": 1.0e9, "current": 0.92e9, "change": -8.0e7,
    "change_fraction": -0.08}. Empty when there is no previous result."""
    if previous is None:
        return {}
    delta: dict[str, Any] = {"previous_version": previous_version}
    for name in DELTA_FIELDS:
        before, after = previous.get(name), current.get(name)
        change = after - before if before is not None and after is not None else None
        fraction = change / before if change is not None and before else None
        delta[name] = {"previous": before, "current": after, "change": change, "change_fraction": fraction}
    return delta
