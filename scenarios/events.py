"""The change feed: events written in the same transaction as their cause (an outbox).

Who writes what:

* ``results_store`` (scenarios.execution): ``result.stored`` for every new result, with its headline
  figures and their deltas against the previous result of the same kind; ``figure.moved`` for each headline
  figure that moved by at least the team's threshold (``Team.alert_thresholds``); ``solver.changed`` once
  per team and solver version, when a plan that had results of another solver gets its first of this one.
* ``price_book_publish`` (scenarios.services): ``price_book.published`` with the entries changed and the
  number of plans it re-runs.
* the database (migration 0008): ``run.failed`` and ``job.finished`` when a run's status becomes final,
  whichever code wrote it (a worker, a claim at the attempt cap, the sweeper, a time limit).
* price feeds and webhook endpoints: ``price_feed.failed`` and ``webhook.disabled``.

Each event has a stable public id (``evt_<hex>``) and, where two paths could raise it, a ``dedupe_key`` that
makes it exist once. After a transaction that recorded events commits, the dispatcher is nudged
(``integrations.dispatch``) so that webhooks go out at once; its beat schedule (every 5 s) picks up what a
lost nudge left behind and the events the database trigger writes (``run.failed``, ``job.finished``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from scenarios import adapters
from scenarios.models import (
    EVENT_FIGURE_MOVED,
    EVENT_RESULT_STORED,
    EVENT_SOLVER_CHANGED,
    RUN_KIND_SOLVE,
    Event,
    Result,
)

log = logging.getLogger(__name__)

# The figures a team may set a threshold on, and that result events carry with their deltas.
THRESHOLD_FIGURES: tuple[str, ...] = adapters.DELTA_FIELDS
HEADLINE_FIGURES: tuple[str, ...] = tuple(adapters.REPORT_PROMOTED_FIELDS)
DISPATCH_TASK = "integrations.dispatch"


def event(
    *,
    kind: str,
    team_id: int | None,
    payload: Mapping[str, Any],
    plan_id: int | None = None,
    run_id: int | None = None,
    result_id: int | None = None,
    dedupe_key: str | None = None,
) -> Event:
    """An unsaved event row (``record`` saves many at once)."""
    return Event(
        kind=kind,
        team_id=team_id,
        payload=dict(payload),
        plan_id=plan_id,
        run_id=run_id,
        result_id=result_id,
        dedupe_key=dedupe_key,
    )


def record(events: Iterable[Event]) -> int:
    """Insert events in the caller's transaction (one that repeats a dedupe key is skipped); after commit,
    nudge the dispatcher. Returns how many rows were handed to the database."""
    rows = list(events)
    if not rows:
        return 0
    Event.objects.bulk_create(rows, ignore_conflicts=True)
    transaction.on_commit(nudge_dispatcher)
    return len(rows)


def nudge_dispatcher() -> None:
    """Ask a worker to deliver new events now. A failure here loses nothing: the dispatcher's beat schedule
    finds every undelivered event, so a broker outage only delays webhooks."""
    from celery import current_app

    try:
        current_app.send_task(DISPATCH_TASK)
    except Exception:  # the broker is down: the beat schedule catches up
        log.warning(
            "could not nudge the event dispatcher; its schedule will deliver the events", exc_info=True
        )


def validate_thresholds(raw: Any) -> dict[str, float]:
    """A team's thresholds {figure: fraction}: figures from ``THRESHOLD_FIGURES``, fractions in (0, 10].

    Raises ``ValueError`` with the offending key; the service turns it into a field error."""
    if not isinstance(raw, Mapping):
        raise ValueError("must be an object {figure: fraction}")
    clean: dict[str, float] = {}
    for figure, value in raw.items():
        if figure not in THRESHOLD_FIGURES:
            raise ValueError(f"{figure!r} is not a figure; one of {', '.join(THRESHOLD_FIGURES)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{figure}: must be a number")
        if not 0 < value <= 10:
            raise ValueError(f"{figure}: must be a fraction > 0 and <= 10 (0.02 is 2%)")
        clean[figure] = float(value)
    return clean


def current_result_events(
    *,
    result: Mapping[str, Any],
    before: Mapping[str, Any],
    team_id: int,
    run_id: int,
    thresholds: Mapping[str, float],
) -> list[Event]:
    """The ``figure.moved`` events of a solve whose inputs were solved before: nothing new is stored, but the
    plan's current result goes back from ``before`` to that earlier ``result`` (prices that came back), so
    each figure over the team's threshold moved as much as if it had been stored again. Both are rows with
    ``pk``, ``plan_id``, ``version``, ``solver_version`` and the delta figures; the payload is a stored
    result's with ``previous_version`` and ``reused: true``, and one event per run and figure.

    Example: total_usd back from 0.90e9 (version 2) to 1.00e9 (version 1) with a threshold of 0.02 gives
    change_fraction +0.111 on version 1."""
    delta = adapters.result_delta(
        current={name: result[name] for name in adapters.DELTA_FIELDS},
        previous={name: before[name] for name in adapters.DELTA_FIELDS},
        previous_version=before["version"],
    )
    common = {
        "result": result["pk"],
        "plan": result["plan_id"],
        "kind": RUN_KIND_SOLVE,
        "version": result["version"],
        "solver_version": result["solver_version"],
        "previous_version": before["version"],
        "reused": True,
    }
    return [
        event(
            kind=EVENT_FIGURE_MOVED,
            team_id=team_id,
            plan_id=result["plan_id"],
            run_id=run_id,
            result_id=result["pk"],
            dedupe_key=f"{EVENT_FIGURE_MOVED}:{result['pk']}:{figure}:run:{run_id}",
            payload={**common, "figure": figure, "threshold": threshold, **moved},
        )
        for figure, threshold, moved in moved_figures(delta, thresholds)
    ]


def moved_figures(
    delta: Mapping[str, Any], thresholds: Mapping[str, float]
) -> list[tuple[str, float, Mapping[str, Any]]]:
    """(figure, threshold, its delta) for each figure of ``delta`` that moved by at least the team's
    threshold (``|change_fraction| >= threshold``), in figure order: what raises a ``figure.moved`` event."""
    out: list[tuple[str, float, Mapping[str, Any]]] = []
    for figure, threshold in sorted(thresholds.items()):
        moved = delta.get(figure) or {}
        fraction = moved.get("change_fraction") if isinstance(moved, Mapping) else None
        if isinstance(fraction, int | float) and abs(fraction) >= threshold:
            out.append((figure, threshold, moved))
    return out


def result_events(
    *,
    result: Result,
    thresholds: Mapping[str, float],
    previous_solver: str | None,
) -> list[Event]:
    """The events of one newly stored result: ``result.stored``, a ``figure.moved`` per figure over the
    team's threshold, and ``solver.changed`` when the plan's previous result came from another solver.

    Example: total_usd 1.00e9 -> 1.05e9 with a threshold of 0.02 gives a ``figure.moved`` event with
    change_fraction 0.05."""
    delta = result.delta or {}
    headline = {name: getattr(result, name) for name in HEADLINE_FIGURES}
    common = {
        "result": result.pk,
        "plan": result.plan_id,
        "kind": result.kind,
        "version": result.version,
        "solver_version": result.solver_version,
    }
    out = [
        event(
            kind=EVENT_RESULT_STORED,
            team_id=result.team_id,
            plan_id=result.plan_id,
            result_id=result.pk,
            dedupe_key=f"{EVENT_RESULT_STORED}:{result.pk}",
            payload={
                **common,
                "previous_version": delta.get("previous_version"),
                "figures": headline,
                "deltas": {name: delta[name] for name in THRESHOLD_FIGURES if name in delta},
            },
        )
    ]
    out += [
        event(
            kind=EVENT_FIGURE_MOVED,
            team_id=result.team_id,
            plan_id=result.plan_id,
            result_id=result.pk,
            dedupe_key=f"{EVENT_FIGURE_MOVED}:{result.pk}:{figure}",
            payload={**common, "figure": figure, "threshold": threshold, **moved},
        )
        for figure, threshold, moved in moved_figures(delta, thresholds)
    ]
    if previous_solver is not None and previous_solver != result.solver_version:
        out.append(
            event(
                kind=EVENT_SOLVER_CHANGED,
                team_id=result.team_id,
                plan_id=result.plan_id,
                result_id=result.pk,
                dedupe_key=f"{EVENT_SOLVER_CHANGED}:{result.team_id}:{result.solver_version}",
                payload={**common, "previous_solver_version": previous_solver},
            )
        )
    return out
