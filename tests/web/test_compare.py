"""The compare page: who may compare what, the selection rules (2 to 20 plans, a listed baseline), the chart
data and the table against known reports, the CSV download with the browser session, ranges when reports
carry them, and a query count that does not grow with the number of plans."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scenarios.models import Plan
from tests.api import factories as f
from tests.web.conftest import Browsers

pytestmark = pytest.mark.django_db

URL = "/compare/"


def alpha_plans(
    browsers: Browsers,
    n: int,
    *,
    results: bool = True,
    edits: dict[int, Callable[[dict[str, Any]], None]] | None = None,
) -> list[Any]:
    """n plans of team alpha sharing one scenario trio; plan i's fake report is scaled by i + 1 and then
    changed by ``edits[i]`` (results are insert-only, so a report is edited before it is stored)."""
    world = browsers.world
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix="-cmp")
    plans = [
        f.plan_for(team=world.alpha, user=world.alice.user, name=f"plan-{i}", trio=trio) for i in range(n)
    ]
    if results:
        for i, plan in enumerate(plans):
            insert_edited(plan, float(i + 1), (edits or {}).get(i))
    return plans


def insert_edited(plan: Any, scale: float, edit: Callable[[dict[str, Any]], None] | None) -> None:
    original = f.fake_report

    def edited(scale: float) -> dict[str, Any]:
        report = original(scale)
        if edit is not None:
            edit(report)
        return report

    f.fake_report = edited
    try:
        f.insert_result(plan=plan, scale=scale)
    finally:
        f.fake_report = original


def ids(plans: list[Any]) -> str:
    return ",".join(str(p.pk) for p in plans)


def chart_data(response: Any) -> dict[str, Any]:
    match = re.search(
        r'<script id="compare-data" type="application/json">(.*?)</script>', response.content.decode()
    )
    assert match, "the chart data is on the page"
    return json.loads(match.group(1))


def text(response: Any) -> str:
    return unescape(response.content.decode())


def test_the_selection_form_lists_the_teams_live_plans(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 3, results=False)
    Plan.objects.filter(pk=plans[2].pk).update(archived_at="2024-01-01T00:00:00Z")
    response = browsers.bob.get(URL)
    assert response.status_code == 200
    page = text(response)
    assert "<h1>Compare plans</h1>" in page
    assert f'name="plans" value="{plans[0].pk}"' in page and f'name="plans" value="{plans[1].pk}"' in page
    assert f'value="{plans[2].pk}"' not in page  # archived
    assert '<label for="compare-baseline">Baseline</label>' in page
    assert ">Compare</button>" in page
    assert "compare-data" not in page and "chart-4.6.1" not in page  # nothing chosen: no charts


def test_a_viewer_compares_plans_with_charts_table_and_downloads(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    response = browsers.bob.get(f"{URL}?plans={ids(plans)}&baseline={plans[1].pk}")
    assert response.status_code == 200, response.content[:500]
    page = text(response)
    assert "<caption>Differences against the baseline</caption>" in page
    for title in ("Step-time budget", "Total cost of ownership", "Carbon", "Water", "Time to train"):
        assert f"<span>{title}</span>" in page
    assert page.count('role="img" aria-label=') == 5
    assert page.count("Download PNG") == 5
    assert "Download CSV" in page
    assert "web/vendor/chart-4.6.1.umd.min.js" in page and "web/compare.js" in page
    # Figures printed for reading: plan-0 (baseline is plan-1) has half the step time of plan-1.
    assert "1.15 s" in page and "2.30 s" in page and "−1.15 s (−50%)" in page
    assert "$1.06 M" in page and "$2.12 M" in page
    # The checkboxes and the baseline keep the selection (the URL can be shared).
    assert f'value="{plans[0].pk}" id="plan-{plans[0].pk}" checked' in page
    assert f'<option value="{plans[1].pk}" selected>' in page
    assert f"/compare/?plans={ids(plans)}&amp;baseline={plans[1].pk}" in response.content.decode()


def test_repeated_plans_parameters_are_accepted(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 3)
    response = browsers.alice.get(f"{URL}?plans={plans[0].pk}&plans={plans[1].pk},{plans[2].pk}")
    assert response.status_code == 200
    assert chart_data(response)["plans"] == ["plan-0", "plan-1", "plan-2"]


def test_chart_data_carries_the_reports_numbers(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    data = chart_data(browsers.bob.get(f"{URL}?plans={ids(plans)}"))
    charts = {chart["id"]: chart for chart in data["charts"]}
    assert list(charts) == ["step", "tco", "carbon", "water", "days"]

    def series(chart: str) -> dict[str, list[float | None]]:
        return {d["label"]: d["values"] for d in charts[chart]["datasets"]}

    step = series("step")
    assert step["Compute"] == [1.0, 2.0]
    assert step["Exposed TP communication"] == pytest.approx([0.1, 0.2])
    assert step["Exposed DP communication"] == pytest.approx([0.05, 0.1])
    assert step["Pipeline bubble"] == [0.0, 0.0]
    tco = series("tco")
    assert tco == {
        "Capital cost (amortized)": [1e6, 2e6],
        "Maintenance": [5e4, 1e5],
        "Electricity": [1e4, 2e4],
    }  # the fake reports carry no cloud price: no cloud bar
    assert series("carbon") == {"Operational": [2.0, 4.0], "Embodied": [1.0, 1.0]}  # tonnes
    assert series("water") == {"Water": [0.0, 0.0]}
    assert series("days") == {"Without failures": [10.0, 20.0], "Wall clock": [11.0, 22.0]}
    assert all(chart["ranges"] is None for chart in charts.values())  # no report carries a range
    assert "plan-0: 1.15 s; plan-1: 2.30 s" in charts["step"]["summary"]


def test_cloud_alternative_is_a_bar_of_its_own(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2, edits={0: lambda report: report["tco"].update(cloud_usd=3e6)})
    data = chart_data(browsers.bob.get(f"{URL}?plans={ids(plans)}"))
    tco = next(chart for chart in data["charts"] if chart["id"] == "tco")
    cloud = tco["datasets"][-1]
    assert cloud["stack"] == "cloud" and cloud["values"] == [3e6, None]
    assert {d["stack"] for d in tco["datasets"][:-1]} == {"plan"}
    assert "(cloud $3.00 M)" in tco["summary"]


def test_ranges_are_shown_when_a_report_carries_them(browsers: Browsers) -> None:
    def with_ranges(report: dict[str, Any]) -> None:
        report["schedule"]["range"] = {"wall_clock_days": {"p10": 19.0, "p50": 22.0, "p90": 30.0}}
        report["step"]["step_s_range"] = {"p10": 2.0, "p50": 2.3, "p90": 2.9}

    plans = alpha_plans(browsers, 2, edits={1: with_ranges})
    response = browsers.bob.get(f"{URL}?plans={ids(plans)}")
    charts = {chart["id"]: chart for chart in chart_data(response)["charts"]}
    assert charts["days"]["ranges"] == {
        "dataset": 1,
        "values": [None, {"p10": 19.0, "p50": 22.0, "p90": 30.0}],
    }
    assert charts["step"]["ranges"]["values"] == [None, {"p10": 2.0, "p50": 2.3, "p90": 2.9}]
    assert charts["tco"]["ranges"] is None
    page = text(response)
    assert "p10–p90 19.0 days – 30.0 days" in page
    assert "p10–p90 2.00 s – 2.90 s" in page


def test_another_teams_plans_are_not_found(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    assert browsers.mallory.get(f"{URL}?plans={ids(plans)}").status_code == 404
    assert browsers.nobody.get(f"{URL}?plans={ids(plans)}").status_code == 404
    anonymous = browsers.anonymous.get(f"{URL}?plans={ids(plans)}")
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


@pytest.mark.parametrize("count", [1, 21])
def test_fewer_than_2_or_more_than_20_plans_is_a_400_naming_the_rule(browsers: Browsers, count: int) -> None:
    plans = alpha_plans(browsers, 2, results=False)
    chosen = ",".join([str(plans[0].pk)] + [str(9000 + i) for i in range(count - 1)])
    response = browsers.alice.get(f"{URL}?plans={chosen}")
    assert response.status_code == 400
    page = text(response)
    assert f"<strong>plans</strong>: choose from 2 to 20 plans to compare ({count} chosen)" in page
    assert '<label for="compare-baseline">Baseline</label>' in page  # the form is shown again


def test_submitting_no_plan_is_a_400(browsers: Browsers) -> None:
    response = browsers.alice.get(f"{URL}?baseline=")
    assert response.status_code == 400
    assert "choose from 2 to 20 plans to compare (0 chosen)" in text(response)


def test_a_baseline_outside_the_list_is_a_400(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 3)
    response = browsers.alice.get(f"{URL}?plans={ids(plans[:2])}&baseline={plans[2].pk}")
    assert response.status_code == 400
    assert "<strong>baseline</strong>: must be a plan id listed in the comparison" in text(response)


@pytest.mark.parametrize("query", ["plans=1,abc", "plans=5,5"])
def test_malformed_ids_are_a_400(browsers: Browsers, query: str) -> None:
    response = browsers.alice.get(f"{URL}?{query}")
    assert response.status_code == 400
    assert "<strong>plans</strong>:" in text(response)


def test_the_csv_link_downloads_with_the_session(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    response = browsers.bob.get(f"{URL}?plans={ids(plans)}&baseline={plans[1].pk}")
    match = re.search(
        r'<a class="button secondary" href="([^"]+)" download="compare.csv">Download CSV</a>',
        response.content.decode(),
    )
    assert match
    href = unescape(match.group(1))
    assert href == f"/api/v1/compare/?plans={ids(plans)}&baseline={plans[1].pk}&format=csv"
    csv = browsers.bob.get(href)
    assert csv.status_code == 200
    assert csv["Content-Type"].startswith("text/csv")
    lines = csv.content.decode().strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("plan,plan_name")
    assert "plan-0" in lines[1] and "plan-1" in lines[2]
    assert browsers.anonymous.get(href).status_code in (401, 403)


def test_flags_show_a_plan_without_result_and_a_stale_one(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    bare = f.plan_for(team=browsers.world.alpha, user=browsers.world.alice.user, name="bare")
    response = browsers.alice.get(f"{URL}?plans={ids(plans)},{bare.pk}")
    assert response.status_code == 200
    page = text(response)
    assert "no result yet: run the plan" in page
    assert "not current" in page
    assert chart_data(response)["charts"][0]["datasets"][0]["values"] == [1.0, 2.0, None]


def _queries(client: Any, url: str) -> int:
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


# Session, user, memberships, the team's plans for the form, the compared plans with their results, and the
# currency check's fixed few.
COMPARE_QUERIES = 11


def test_query_count_is_pinned_and_the_same_for_2_and_10_plans(
    browsers: Browsers, django_assert_num_queries: Any
) -> None:
    plans = alpha_plans(browsers, 10)
    two, ten = f"{URL}?plans={ids(plans[:2])}", f"{URL}?plans={ids(plans)}"
    assert _queries(browsers.bob, two) == _queries(browsers.bob, ten)
    with django_assert_num_queries(COMPARE_QUERIES):
        browsers.bob.get(two)
    with django_assert_num_queries(COMPARE_QUERIES):
        browsers.bob.get(ten)
