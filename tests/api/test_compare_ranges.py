"""Compare carries each figure's range {p10, p50, p90} from the reports and marks a delta whose ranges
overlap as within the uncertainty, in JSON and in CSV (the range columns after the earlier ones)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

import pytest

from api.compare import within_uncertainty
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

FAKE_REPORT = f.fake_report  # the factory's own, before a test puts a maker in its place


def _plans(world: World, reports: list[Callable[[float], dict[str, Any]]]) -> list[Any]:
    """One plan per report maker of team alpha, its result's report made by ``reports[i](i + 1)``."""
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix="-rng")
    plans = []
    original = f.fake_report
    for i, make in enumerate(reports):
        plan = f.plan_for(team=world.alpha, user=world.alice.user, name=f"ranged-{i}", trio=trio)
        f.fake_report = make  # type: ignore[assignment]
        try:
            f.insert_result(plan=plan, scale=float(i + 1))
        finally:
            f.fake_report = original
        plans.append(plan)
    return plans


def _ranged(days: tuple[float, float, float]) -> Callable[[float], dict[str, Any]]:
    def make(scale: float) -> dict[str, Any]:
        report = FAKE_REPORT(scale)
        p10, p50, p90 = days
        report["ranges"] = {"schedule.wall_clock_days": {"p10": p10, "p50": p50, "p90": p90}}
        return report

    return make


def test_ranges_and_within_uncertainty_in_json_and_csv(world: World) -> None:
    # baseline 11 days (10-14); plan 2 at 22 days with 13-18 (overlaps); plan 3 at 33 days with 30-40 (apart)
    plans = _plans(
        world,
        [_ranged((10.0, 11.0, 14.0)), _ranged((13.0, 15.0, 18.0)), _ranged((30.0, 33.0, 40.0)), FAKE_REPORT],
    )
    ids = ",".join(str(p.pk) for p in plans)
    response = world.alice.client.get(f"/api/v1/compare/?plans={ids}")
    assert response.status_code == 200, response.content
    cells = [item["values"]["schedule.wall_clock_days"] for item in response.json()["items"]]
    assert cells[0]["range"] == {"p10": 10.0, "p50": 11.0, "p90": 14.0}
    assert cells[0]["within_uncertainty"] is None  # the baseline
    assert cells[1]["within_uncertainty"] is True
    assert cells[2]["within_uncertainty"] is False
    assert cells[3]["range"] is None  # no range: 44 days is outside the baseline's 10-14
    assert cells[3]["within_uncertainty"] is False
    # a figure no report gives a range for
    step = [item["values"]["step.step_s"] for item in response.json()["items"]]
    assert all(c["range"] is None and c["within_uncertainty"] is None for c in step)

    as_csv = world.alice.client.get(f"/api/v1/compare/?plans={ids}&format=csv")
    assert as_csv.status_code == 200
    reader = csv.reader(io.StringIO(as_csv.content.decode()))
    header = next(reader)
    rows = [dict(zip(header, row, strict=True)) for row in reader]
    column = "schedule.wall_clock_days [days]"
    # the range columns come after every value, delta and delta % column
    assert header.index(f"{column} p10") > header.index("tco.cloud_usd [USD]")
    assert [r[f"{column} p90"] for r in rows] == ["14.0", "18.0", "40.0", ""]
    assert [r["schedule.wall_clock_days within uncertainty"] for r in rows] == ["", "true", "false", "false"]
    assert rows[1][f"{column} delta"] == "11.0"  # the earlier columns keep their values


def test_a_solved_report_brings_its_ranges_to_compare(world: World) -> None:
    from solvers import solve
    from solvers.published import load_example

    report = solve(load_example("quickstart-llama3-8b-64xh100.yaml"))
    plans = _plans(world, [lambda scale: dict(report), lambda scale: dict(report)])
    response = world.alice.client.get(f"/api/v1/compare/?plans={plans[0].pk},{plans[1].pk}")
    assert response.status_code == 200, response.content
    other = response.json()["items"][1]["values"]
    for key in (
        "step.step_s",
        "step.mfu",
        "schedule.wall_clock_days",
        "energy.facility_kwh",
        "carbon.operational_kgco2e",
        "carbon.embodied_kgco2e",
        "carbon.water_l",
        "tco.total_usd",
    ):
        assert other[key]["range"] == report["ranges"][key], key
        assert other[key]["within_uncertainty"] is True  # the same plan twice


@pytest.mark.parametrize(
    ("spread", "base_spread", "value", "base", "expected"),
    [
        ({"p10": 1.0, "p50": 2.0, "p90": 3.0}, {"p10": 2.5, "p50": 3.0, "p90": 4.0}, 2.0, 3.0, True),
        ({"p10": 1.0, "p50": 2.0, "p90": 3.0}, {"p10": 3.5, "p50": 4.0, "p90": 5.0}, 2.0, 4.0, False),
        ({"p10": 1.0, "p50": 2.0, "p90": 3.0}, None, 2.0, 2.9, True),
        (None, {"p10": 1.0, "p50": 2.0, "p90": 3.0}, 3.1, 2.0, False),
        (None, None, 2.0, 3.0, None),
        ({"p10": 1.0, "p50": 2.0, "p90": 3.0}, None, None, 3.0, None),
    ],
)
def test_within_uncertainty(
    spread: Any, base_spread: Any, value: float | None, base: float | None, expected: bool | None
) -> None:
    assert within_uncertainty(value, base, spread, base_spread) is expected
