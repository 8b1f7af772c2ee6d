"""What a price book's publication moved: the plans its fan-out re-ran, with their headline figures before
and after.

The fan-out (``scenarios.fanout.price_book_fan_out``) creates one automatic run per plan whose resolved
prices the version changes, with ``trigger="price_change"`` and ``price_book`` set to the version. A run
that stored a new result under the version (the result's ``price_book`` for a global book,
``team_price_book`` for a team book) compares with that result's ``previous``, the plan's result before the
re-run, as the stored ``delta`` does; the comparison is read from the two rows' promoted columns, in one
query whatever the number of plans, so that ``wall_clock_days`` is there too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from scenarios.models import (
    ACTIVE_STATUSES,
    STATUS_FAILED,
    STATUS_SUCCEEDED,
    TRIGGER_PRICE_CHANGE,
    PriceBook,
    Run,
)
from web.templatetags.planner_format import tonnes_co2e, usd, with_unit

# A publication whose runs are not all queued yet is still fanning out for this long at most; after that a
# missing run means the fan-out skipped the plan (its price key was shared, its scenario has no revision).
FAN_OUT_GRACE = dt.timedelta(minutes=30)
MAX_ROWS = 500


# The headline figures a re-run is compared on: (result column, column heading, how it is printed).
FIGURES: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("total_usd", "TCO", usd),
    ("usd_per_million_tokens", "$/Mtok", usd),
    ("total_kgco2e", "tCO2e", tonnes_co2e),
    ("wall_clock_days", "Days", with_unit("days")),
    ("step_s", "Step time", with_unit("s")),
)


@dataclass(frozen=True)
class Figure:
    label: str
    before: str
    after: str
    change_pct: float | None  # percent, signed; None when the figure is missing or was zero
    moved: bool


@dataclass(frozen=True)
class MovedPlan:
    plan_id: int
    plan_name: str
    result_id: int
    result_version: int
    figures: tuple[Figure, ...]
    largest_pct: float | None

    @property
    def sort_key(self) -> float:
        return abs(self.largest_pct) if self.largest_pct is not None else 0.0


@dataclass
class Moves:
    """The fan-out of one version as the user's teams see it."""

    moved: list[MovedPlan] = field(default_factory=list)
    unchanged: int = 0
    first_results: int = 0
    earlier_results: int = 0
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (plan id, plan name, error)
    pending: int = 0
    hidden: int = 0

    @property
    def reran(self) -> int:
        return len(self.moved) + self.unchanged + self.first_results + self.earlier_results + len(self.failed)


def _values(prefix: str) -> list[str]:
    return [f"{prefix}{name}" for name, _, _ in FIGURES]


def _figures(row: dict[str, Any]) -> tuple[tuple[Figure, ...], float | None]:
    figures, largest = [], None
    for name, label, show in FIGURES:
        before, after = row[f"result__previous__{name}"], row[f"result__{name}"]
        pct = 100 * (after - before) / before if before not in (None, 0) and after is not None else None
        figures.append(Figure(label, show(before), show(after), pct, before != after))
        if pct is not None and (largest is None or abs(pct) > abs(largest)):
            largest = pct
    return tuple(figures), largest


def book_moves(*, book: PriceBook, team_ids: Iterable[int], plans_to_rerun: int | None) -> Moves:
    """The runs ``book``'s fan-out made for plans of ``team_ids`` (the newest per plan), read in one query.

    ``plans_to_rerun`` is the count the publication recorded (team books only): until the fan-out has
    queued that many runs, the ones still to be queued count as pending too."""
    result_of_book = "result__price_book_id" if book.team_id is None else "result__team_price_book_id"
    rows = (
        Run.objects.filter(price_book=book, trigger=TRIGGER_PRICE_CHANGE, team_id__in=list(team_ids))
        .order_by("plan_id", "-queued_at", "-id")
        .values(
            "plan_id",
            "plan__name",
            "status",
            "error",
            "result_id",
            "result__version",
            "result__previous_id",
            result_of_book,
            *_values("result__"),
            *_values("result__previous__"),
        )
    )
    moves, seen = Moves(), set()
    for row in rows:
        if row["plan_id"] in seen:
            continue
        seen.add(row["plan_id"])
        status = row["status"]
        if status in ACTIVE_STATUSES:
            moves.pending += 1
        elif status == STATUS_FAILED:
            moves.failed.append((row["plan_id"], row["plan__name"], row["error"]))
        elif status == STATUS_SUCCEEDED and row["result_id"] is not None:
            if row[result_of_book] != book.pk:
                moves.earlier_results += 1  # the new prices led back to a result stored before
            elif row["result__previous_id"] is None:
                moves.first_results += 1
            else:
                figures, largest = _figures(row)
                if any(figure.moved for figure in figures):
                    moves.moved.append(
                        MovedPlan(
                            plan_id=row["plan_id"],
                            plan_name=row["plan__name"],
                            result_id=row["result_id"],
                            result_version=row["result__version"],
                            figures=figures,
                            largest_pct=largest,
                        )
                    )
                else:
                    moves.unchanged += 1
    if plans_to_rerun is not None and timezone.now() - book.published_at < FAN_OUT_GRACE:
        moves.pending += max(0, plans_to_rerun - len(seen))
    moves.moved.sort(key=lambda plan: (-plan.sort_key, plan.plan_name, plan.plan_id))
    moves.hidden = max(0, len(moves.moved) - MAX_ROWS)
    del moves.moved[MAX_ROWS:]
    return moves
