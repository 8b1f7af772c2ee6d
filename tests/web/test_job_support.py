"""The search and sweep pages say, for each layout, whether it lies inside the validated runs and, outside,
why (CONTRACT.md "Support"): a layout outside the envelope carries its warning on the page as in the API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.factories import plan_for
from tests.web.conftest import SPACE_FORM, Browsers
from tests.web.test_jobs import detail_url, execute, new_url, run_id_of
from web.views.jobs import search_view, sweep_view

INSIDE: dict[str, Any] = {"within_validated": True, "reasons": [], "distance": 0.0}
OUTSIDE: dict[str, Any] = {
    "within_validated": False,
    "reasons": ["2,048 tokens per context-parallel rank; validated dense runs go down to 4,096"],
    "distance": 1.0,
}
LAYOUT = {"tp": 4, "pp": 16, "cp": 4, "dp": 256, "ep": 1, "microbatch_seqs": 1}


@pytest.fixture
def plan(world: Any) -> Any:
    return plan_for(team=world.alpha, user=world.alice.user, name="llama-8b")


def test_a_searchs_rows_carry_inside_outside_and_the_reason() -> None:
    report: dict[str, Any] = {
        "best": {"layout": LAYOUT, "step": {"step_s": 6.2}, "memory": {"fits": True}, "support": INSIDE},
        "alternatives": [{"rank": 2, "layout": LAYOUT, "metrics": {"step_s": 6.3}, "support": OUTSIDE}],
        # a result stored before layouts carried their support
        "pareto": [{"rank": 3, "layout": LAYOUT, "metrics": {"step_s": 6.4}}],
    }
    table = search_view(report)["table"]
    assert [row["support"] for row in table] == [
        {"inside": True, "reasons": ""},
        {"inside": False, "reasons": OUTSIDE["reasons"][0]},
        None,
    ]


def test_a_sweeps_rows_carry_their_best_layouts_support() -> None:
    report: dict[str, Any] = {
        "axes": [{"field": "cluster.gpus"}],
        "rows": [
            {"point": {"cluster.gpus": 64}, "best": {"layout": LAYOUT, "metrics": {}, "support": OUTSIDE}},
            {"point": {"cluster.gpus": 128}, "error": {"path": "training", "message": "no layout"}},
        ],
    }
    table = sweep_view(report)["table"]
    assert table[0]["support"] == {"inside": False, "reasons": OUTSIDE["reasons"][0]}
    assert table[1]["support"] is None


def test_a_sweep_page_shows_each_points_place_against_the_validated_runs(
    browsers: Browsers, plan: Any, no_broker: None
) -> None:
    body = {"axis_1_field": "cluster.gpus", "axis_1_values": "64,128", "objective": "step_s", **SPACE_FORM}
    run_id = run_id_of(browsers.carol.post(new_url(plan, "sweep"), body))
    execute(run_id)
    done = browsers.carol.get(detail_url(run_id))
    html = done.content.decode()
    assert '<th scope="col">Validated runs</th>' in html
    table = done.context["table"]
    assert len(table) == 2 and all(row["support"] is not None for row in table), table
    for row in table:
        badge = '<span class="badge ok">inside</span>' if row["support"]["inside"] else "outside</span>"
        assert badge in html
