"""A sweep job answers for the plan's inputs as they are and bills each point as a solve of its document is
billed: its key holds the document as written (a swept preset re-derives only what the document leaves to
it), and the point at the site's own region keeps the site's own price; its chunks hold at most
SWEEP_CHUNK_LAYOUTS layouts, and a sweep no point of which could be searched is refused before it is queued."""

from __future__ import annotations

import pytest

from scenarios import search_jobs, services
from scenarios.jobs import requests
from scenarios.models import Result, Run
from tests.scenarios.factories import SPACE, make_plan, make_team, run_sweep_in_process


@pytest.mark.django_db
def test_a_sweep_after_the_plan_pins_a_field_is_not_answered_with_the_unpinned_result(
    starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    """The resolved base document is the same whether the plan states the accelerator or lets its node derive
    it, but a node sweep re-derives the accelerator only in the second case: once the plan's cluster states
    ``accelerator: h100-sxm``, the same node sweep is a new result, not the earlier one whose B200 point ran on
    B200s."""
    from solvers.sweep import sweep_document

    team = make_team()
    plan = make_plan(team=team, cluster_doc={"node": "dgx-h100", "gpus": 64})
    axes = [{"field": "cluster.node", "values": ["dgx-b200"]}]
    with django_capture_on_commit_callbacks(execute=True):
        first = run_sweep_in_process(plan, axes, chunks_sent)
    assert "pinned" not in first.report["rows"][0]

    # The plan now states the accelerator by value (a new revision of its cluster scenario).
    services.scenario_update(
        scenario=plan.cluster, user=None, document={"node": "dgx-h100", "accelerator": "h100-sxm", "gpus": 64}
    )
    plan.refresh_from_db()
    inputs = services.plan_inputs(plan=plan)
    alone = sweep_document(
        {**inputs.base_document, "sweep": {"axes": axes}, "search": {"space": SPACE}}, pricing=inputs.pricing
    )
    assert alone["rows"][0]["pinned"][0]["field"] == "cluster.accelerator"  # what this plan's sweep gives
    with django_capture_on_commit_callbacks(execute=True):
        second = run_sweep_in_process(plan, axes, chunks_sent)
    row = second.report["rows"][0]
    assert second.pk != first.pk, "the run was answered with the result of the plan's earlier inputs"
    assert row["best"]["metrics"]["step_s"] == alone["rows"][0]["best"]["metrics"]["step_s"]
    assert "pinned" in row


@pytest.mark.django_db
def test_a_region_sweep_point_at_the_plans_own_region_is_billed_like_the_plans_solve(
    sent, claim, starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    """A point that moves the site to another region is billed at that region's price; the point at the plan's
    own region is the plan's own document and keeps the site's own price (``site:<name>``), as its solve."""
    from scenarios import execution

    team = make_team()
    plan = make_plan(team=team, site_doc={"region": "quebec"})
    services.price_book_publish(
        team=team,
        user=None,
        name="team prices",
        entries=[{"kind": "electricity", "key": f"site:{plan.site.name}", "value": 0.21}],
        fan_out="none",
    )
    solved = execution.run_execute(run_id=services.run_request(plan=plan, user=None).pk, claim=claim)
    assert solved.result_id is not None
    solve_report = Result.objects.get(pk=solved.result_id).report
    with django_capture_on_commit_callbacks(execute=True):
        result = run_sweep_in_process(
            plan, [{"field": "site.region", "values": ["quebec", "virginia"]}], chunks_sent
        )
    row = result.report["rows"][0]
    assert row["point"] == {"site.region": "quebec"}
    # The plan's solve bills the site's own price ...
    assert solve_report["tco"]["electricity_usd"] / solve_report["energy"]["facility_kwh"] == pytest.approx(
        0.21
    )
    # ... and a solve of the plan's (priced) document at the point's best layout gives other figures.
    from solvers import solve

    document = services.plan_inputs(plan=plan).document
    document["training"] = {**document["training"], "layout": row["best"]["layout"]}
    report = solve(document)
    assert row["best"]["metrics"]["total_usd"] == report["tco"]["total_usd"], (
        row["best"]["metrics"]["total_usd"],
        report["tco"]["total_usd"],
        row["prices"]["site.electricity_usd_per_kwh"],
    )


@pytest.mark.django_db
def test_no_chunk_of_a_queued_sweep_holds_more_than_sweep_chunk_layouts(settings) -> None:
    """Chunks are sized by the largest layout count of any point, not of a few sampled ones: a sweep whose
    large points sit between the samples (GPU counts 8, 1024, 8, 8 against 100 token budgets) used to be cut
    into chunks of 3.1 million layouts, over SWEEP_CHUNK_LAYOUTS (2 million)."""
    from solvers.sweep import point_document

    settings.SWEEP_CHUNK_POINTS = 20
    settings.SWEEP_CHUNK_LAYOUTS = 2_000_000
    settings.SWEEP_MIN_CHUNKS = 16
    plan = make_plan(team=make_team())
    sweep_section = {
        "axes": [
            {"field": "cluster.gpus", "values": [8, 1024, 8, 8]},
            {"field": "training.total_tokens", "range": {"start": 1e11, "stop": 1e13, "step": 1e11}},
        ]
    }
    points, chunk_points = requests.sweep_check(plan=plan, sweep=sweep_section, search={})
    assert points == 400
    document = services.plan_base_document(plan=plan)
    planned = requests._plan_of(document, {"sweep": sweep_section, "search": {}})
    per_point = {}
    for gpus in (8, 1024):
        index = next(i for i, p in enumerate(planned.points) if p["cluster.gpus"] == gpus)
        per_point[gpus] = requests._layouts_of(
            point_document(planned.request.scenario, planned.points[index]), None
        )
    chunk_layouts = [
        sum(
            per_point[planned.points[i]["cluster.gpus"]]
            for i in range(start, min(points, start + chunk_points))
        )
        for start in range(0, points, chunk_points)
    ]
    assert max(chunk_layouts) <= settings.SWEEP_CHUNK_LAYOUTS, (chunk_points, per_point, max(chunk_layouts))


@pytest.mark.django_db
def test_a_sweep_whose_every_point_is_over_the_layout_limit_is_refused_before_queueing(starts_sent) -> None:
    """The space that /search/ refuses (about 2.6 million layouts > MAX_LAYOUTS_PER_SEARCH) is refused for a
    sweep too when every point would search that many: such a sweep could only store error rows."""
    from django.core.exceptions import ValidationError

    from tests.scenarios.factories import make_scenario
    from tests.scenarios.test_search_jobs import DEEPSEEK_CLUSTER, DEEPSEEK_TRAINING, HUGE_SPACE

    team = make_team()
    plan = make_plan(
        team=team,
        training=DEEPSEEK_TRAINING,
        trio=(
            make_scenario(kind="cluster", team=team, document=DEEPSEEK_CLUSTER),
            make_scenario(kind="model", team=team, document={"preset": "deepseek-v3"}),
            make_scenario(kind="site", team=team, document={"region": "quebec"}),
        ),
    )
    with pytest.raises(ValidationError):
        search_jobs.search_request(plan=plan, user=None, space=HUGE_SPACE)
    with pytest.raises(ValidationError) as refused:
        search_jobs.sweep_request(
            plan=plan,
            user=None,
            axes=[{"field": "site.region", "values": ["quebec", "iceland"]}],
            space=HUGE_SPACE,
        )
    assert list(refused.value.message_dict) == ["space"]
    assert Run.objects.count() == 0
