"""Right answers on every path: deltas against the same kind, results per solver version, compare rows that
show what a buyer must see (fits, layout, cloud price, current), and book prices named in the assumptions.

Runs are executed in this process through the worker's own code path (``execution.run_execute``), so the
stored rows are exactly those a worker stores; the real-worker paths are covered by the end-to-end tests.
"""

from __future__ import annotations

import copy
import csv
import io
from typing import Any

import pytest

from scenarios import execution, search_jobs, services
from scenarios.jobs import sweep
from scenarios.models import Plan, Result
from tests.api import factories as f
from tests.api.conftest import World
from tests.api.inprocess import claim, solve_plan

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_broker")]

SPACE: dict[str, Any] = {"tp": [1, 2], "cp": [1], "pp": [1], "microbatch_seqs": [1]}


def sweep_plan(
    plan: Plan, monkeypatch: pytest.MonkeyPatch, axes: list[dict[str, Any]] | None = None
) -> Result:
    sent: list[Any] = []

    def send_chunks(*, run_id: int, chunks: Any, input_hash: str) -> None:
        sent.extend((run_id, chunk, input_hash) for chunk in chunks)

    monkeypatch.setattr(sweep, "send_chunks", send_chunks)
    run = search_jobs.sweep_request(
        plan=plan, user=None, axes=axes or [{"field": "cluster.gpus", "values": [32, 64]}], space=SPACE
    )
    assert search_jobs.sweep_begin(run_id=run.pk, claim=claim()) == "started"
    for run_id, chunk, input_hash in sent:
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=claim())
    return Result.objects.get(runs=run)


def search_plan(plan: Plan) -> Result:
    run = search_jobs.search_request(plan=plan, user=None, space=SPACE, top=1)
    outcome = execution.run_execute(run_id=run.pk, claim=claim())
    assert outcome.status == "succeeded" and outcome.result_id is not None
    return Result.objects.get(pk=outcome.result_id)


def publish(team: Any, *entries: dict[str, Any]) -> Any:
    return services.price_book_publish(
        team=team, user=None, name="prices", entries=list(entries), fan_out="none"
    )


def make_plan(
    world: World, *, name: str = "p", cluster: dict[str, Any] | None = None, **training: Any
) -> Plan:
    cluster_row = services.scenario_create(
        kind="cluster", team=world.alpha, name=f"c-{name}", document=cluster or f.CLUSTER_DOC, user=None
    )
    model = services.scenario_create(
        kind="model", team=world.alpha, name=f"m-{name}", document=f.MODEL_DOC, user=None
    )
    site = services.scenario_create(
        kind="site", team=world.alpha, name=f"s-{name}", document=f.SITE_DOC, user=None
    )
    return services.plan_create(
        team=world.alpha,
        user=None,
        name=name,
        cluster=cluster_row,
        model=model,
        site=site,
        training={**f.TRAINING, **training},
        economics=f.ECONOMICS,
    )


def compare(world: World, query: str) -> Any:
    response = world.alice.client.get(f"/api/v1/compare/?{query}")
    assert response.status_code == 200, response.content[:500]
    return response.json()


# --- delta and diff are against the previous result of the same kind ---------------------------------


def test_a_solve_after_a_sweep_is_compared_with_the_last_solve(world: World, monkeypatch) -> None:
    plan = make_plan(world)
    first = solve_plan(plan)
    sweep = sweep_plan(plan, monkeypatch)
    assert sweep.version == 2 and sweep.previous_id is None  # the plan's first sweep
    publish(world.alpha, {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0})  # +20%
    second = solve_plan(plan)
    assert second.version == 3 and second.previous_id == first.pk
    assert second.delta["previous_version"] == 1
    assert second.delta["step_s"]["change"] == 0.0
    diff = world.alice.client.get(f"/api/v1/results/{second.pk}/diff/").json()
    assert diff["before"]["id"] == first.pk
    against = world.alice.client.get(f"/api/v1/results/{second.pk}/diff/?against={first.pk}").json()
    assert diff == against
    capex = next(c for c in diff["outputs"] if c["path"] == "tco.capex_usd")
    assert capex["delta_pct"] == pytest.approx(20.0)
    assert not [c for c in diff["outputs"] if c["path"] == "step.step_s"]
    # ?against= names an earlier result of the same kind: a sweep's rows or a later solve line up with nothing
    # (every delta of the later one would carry the wrong sign)
    for against, words in ((sweep, "must be a solve result"), (second, "must be an earlier result")):
        refused = world.alice.client.get(f"/api/v1/results/{second.pk}/diff/?against={against.pk}")
        assert refused.status_code == 400, refused.content[:300]
        assert [e["path"] for e in refused.json()["errors"]] == ["against"]
        assert words in refused.json()["errors"][0]["message"]
    later = world.alice.client.get(f"/api/v1/results/{first.pk}/diff/?against={second.pk}")
    assert later.status_code == 400 and "earlier" in later.json()["errors"][0]["message"]


# --- the solver version is part of a result's identity ------------------------------------------------


def test_a_run_after_a_solver_change_stores_new_numbers(world: World, monkeypatch) -> None:
    import solvers
    import solvers.version

    plan = make_plan(world)
    old = solve_plan(plan)
    assert solve_plan(plan).pk == old.pk  # the same inputs and solver: the stored result
    monkeypatch.setattr(solvers.version, "SOLVER_VERSION", "99.0.0")
    monkeypatch.setattr(solvers, "SOLVER_VERSION", "99.0.0")
    new = solve_plan(plan)
    assert new.pk != old.pk and new.version == 2 and new.solver_version == "99.0.0"
    assert new.input_hash == old.input_hash
    detail = world.alice.client.get(f"/api/v1/results/{old.pk}/").json()
    assert detail["current"] is False
    assert detail["stale_reasons"] == ["made by solver " + old.solver_version + "; the solver is now 99.0.0"]
    assert world.alice.client.get(f"/api/v1/results/{new.pk}/").json()["current"] is True


# --- compare shows what a buyer must see -------------------------------------------------------------


def test_compare_flags_a_plan_that_does_not_fit_and_shows_its_layout(world: World) -> None:
    fits = make_plan(world, name="fits")
    # Llama 3 70B unsharded on 80 GB GPUs: its weights alone exceed the memory.
    big = make_plan(world, name="big", cluster={"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8})
    services.scenario_update(scenario=big.model, user=None, document={"preset": "llama3-70b"})
    big.refresh_from_db()
    solve_plan(fits)
    solve_plan(big)
    table = compare(world, f"plans={fits.pk},{big.pk}")
    rows = {row["plan"]: row for row in table["items"]}
    assert rows[fits.pk]["fits"] is True and not any("memory" in flag for flag in rows[fits.pk]["flags"])
    assert rows[big.pk]["fits"] is False
    assert any(flag.startswith("does not fit in memory: needs") for flag in rows[big.pk]["flags"])
    assert any(warning.startswith("memory: the plan needs") for warning in rows[big.pk]["warnings"])
    assert rows[big.pk]["layout"]["tp"] == 2
    assert rows[big.pk]["solver_version"] == solvers_version()
    need = rows[big.pk]["values"]["memory.total_bytes"]["value"]
    assert need > rows[big.pk]["values"]["memory.capacity_bytes"]["value"]


def solvers_version() -> str:
    from solvers import SOLVER_VERSION

    return str(SOLVER_VERSION)


def test_a_cloud_price_shows_in_compare_and_its_csv(world: World) -> None:
    plan = make_plan(world)
    solve_plan(plan)
    before = compare(world, f"plans={plan.pk}")["items"][0]
    assert before["cloud_usd_per_gpu_hour"] is None and before["values"]["tco.cloud_usd"]["value"] is None
    publish(world.alpha, {"kind": "cloud", "key": "h100-sxm", "value": 2.5})
    assert compare(world, f"plans={plan.pk}")["items"][0]["current"] is False  # the book moved its price
    solve_plan(plan)
    after = compare(world, f"plans={plan.pk}")["items"][0]
    assert after["current"] is True and after["cloud_usd_per_gpu_hour"] == 2.5
    assert (before["team_price_book_version"], after["team_price_book_version"]) == (None, 1)
    assert after["values"]["tco.cloud_usd"]["value"] > 0
    response = world.alice.client.get(f"/api/v1/compare/?plans={plan.pk}&format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert float(rows[0]["cloud_usd_per_gpu_hour"]) == 2.5
    assert float(rows[0]["tco.cloud_usd [USD]"]) == after["values"]["tco.cloud_usd"]["value"]
    assert rows[0]["layout"].startswith("tp2 pp1 cp1") and rows[0]["fits"] == "true"


def test_a_result_made_stale_by_a_scenario_edit_is_flagged(world: World) -> None:
    plan = make_plan(world)
    result = solve_plan(plan)
    assert compare(world, f"plans={plan.pk}")["items"][0]["current"] is True
    cluster = copy.deepcopy(f.CLUSTER_DOC) | {"gpus": 128}
    services.scenario_update(scenario=plan.cluster, user=None, document=cluster)
    row = compare(world, f"plans={plan.pk}")["items"][0]
    assert row["result"] == result.pk and row["current"] is False
    assert any("cluster revision 2" in flag for flag in row["flags"])
    listed = world.alice.client.get(f"/api/v1/results/?plan={plan.pk}").json()["results"][0]
    assert listed["current"] is False and listed["stale_reasons"][0].startswith("the plan now solves cluster")
    # Back to the first document: a run would find this very result again, so it is current again.
    services.scenario_update(scenario=plan.cluster, user=None, document=copy.deepcopy(f.CLUSTER_DOC))
    assert world.alice.client.get(f"/api/v1/results/{result.pk}/").json()["current"] is True
    # A rename changes nothing a run rests on; a training edit does.
    services.plan_update(plan=plan, user=None, name="renamed")
    assert world.alice.client.get(f"/api/v1/results/{result.pk}/").json()["current"] is True
    services.plan_update(plan=plan, user=None, training={**f.TRAINING, "total_tokens": 2.0e12})
    reasons = world.alice.client.get(f"/api/v1/results/{result.pk}/").json()["stale_reasons"]
    assert reasons == [
        "the plan's inputs changed since this result (training, economics or a part's document)"
    ]


def test_a_renamed_site_keeps_its_own_price_and_its_result_stays_current(world: World) -> None:
    """A site's team price is keyed by its name: a rename carries it (the team's book gets a version with the
    price under the new name), so the plan solves with the same price and its result stays current."""
    from scenarios.models import PriceBook

    plan = make_plan(world)
    publish(world.alpha, {"kind": "electricity", "key": f"site:{plan.site.name}", "value": 0.40})
    result = solve_plan(plan)
    assert result.prices["site.electricity_usd_per_kwh"]["value"] == 0.40
    services.scenario_update(scenario=plan.site, user=None, name="renamed site")
    detail = world.alice.client.get(f"/api/v1/results/{result.pk}/").json()
    assert detail["current"] is True, detail["stale_reasons"]
    book = PriceBook.objects.filter(team=world.alpha).order_by("-version").first()
    assert book is not None and "renamed" in book.notes
    assert {(e.kind, e.key, e.value) for e in book.entries.all()} == {
        ("electricity", "site:renamed site", 0.40)
    }


def test_a_sweep_is_stale_once_a_book_changes_a_price_one_of_its_points_used(
    world: World, monkeypatch
) -> None:
    plan = make_plan(world)
    sweep = sweep_plan(plan, monkeypatch)
    assert world.alice.client.get(f"/api/v1/results/{sweep.pk}/").json()["current"] is True
    publish(world.alpha, {"kind": "electricity", "key": "germany", "value": 2.0})
    detail = world.alice.client.get(f"/api/v1/results/{sweep.pk}/").json()
    assert detail["current"] is False and "sweep is keyed by the books" in detail["stale_reasons"][0]


def test_a_price_book_that_does_not_touch_a_plan_leaves_its_result_current(world: World) -> None:
    plan = make_plan(world)
    solve_plan(plan)
    publish(world.alpha, {"kind": "electricity", "key": "iceland", "value": 0.2})
    assert compare(world, f"plans={plan.pk}")["items"][0]["current"] is True


def test_pinning_a_sweep_result_is_refused_and_a_search_compares_its_best(world: World, monkeypatch) -> None:
    plan = make_plan(world)
    solved = solve_plan(plan)
    sweep = sweep_plan(plan, monkeypatch)
    response = world.alice.client.get(f"/api/v1/compare/?results={solved.pk},{sweep.pk}")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["path"] == "results" and f"result {sweep.pk} is a sweep result" in error["message"]
    search = search_plan(plan)
    table = compare(world, f"results={solved.pk},{search.pk}")
    row = table["items"][1]
    assert row["kind"] == "search" and row["layout"] == search.report["best"]["layout"]
    assert row["values"]["step.step_s"]["value"] == search.report["best"]["step"]["step_s"]


# --- assumptions name the price book --------------------------------------------------------------------


def test_assumptions_name_the_price_book_of_every_book_price(world: World) -> None:
    book = publish(
        world.alpha,
        {"kind": "accelerator", "key": "h100-sxm", "value": 27_000.0, "source": "vendor quote Q3"},
    )
    result = solve_plan(make_plan(world))
    entries = {entry["key"]: entry for entry in result.report["assumptions"]}
    source = entries["cluster.accelerator.unit_price_usd"]["source"]
    assert source == (
        f"team price book 'prices' v{book.version} (id {book.pk}), entry accelerator:h100-sxm: vendor quote Q3"
    )
    assert entries["cluster.accelerator.unit_price_usd"]["value"] == 27_000.0
    assert entries["site.electricity_usd_per_kwh"]["source"] != "scenario"


def test_a_plan_cloud_provider_is_spelled_as_price_book_keys_are(world: World) -> None:
    plan = make_plan(world)
    response = world.alice.client.patch(f"/api/v1/plans/{plan.pk}/", {"cloud_provider": "AWS"}, format="json")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error["path"] == "cloud_provider" and "lowercase slug" in error["message"]
    ok = world.alice.client.patch(f"/api/v1/plans/{plan.pk}/", {"cloud_provider": "aws"}, format="json")
    assert ok.status_code == 200, ok.content[:300]


def test_a_node_sweep_of_a_stored_plan_equals_the_stateless_solve_of_each_point(
    world: World, monkeypatch
) -> None:
    """The issue's case: A100 and B200 points of a stored H100 plan used to come out as H100, because the
    global book's H100 price had pinned the plan's accelerator before the node was swept."""
    services.price_book_publish(
        team=None,
        user=None,
        name="defaults",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 25_000.0}],
        fan_out="none",
    )
    plan = make_plan(world, cluster={"node": "dgx-h100", "gpus": 64})
    sweep = sweep_plan(
        plan, monkeypatch, axes=[{"field": "cluster.node", "values": ["dgx-a100-80gb", "dgx-b200"]}]
    )
    base = services.plan_base_document(plan=plan)
    steps = []
    for row in sweep.report["rows"]:
        document = copy.deepcopy(base)
        document["cluster"]["node"] = row["point"]["cluster.node"]
        document["training"]["layout"] = row["best"]["layout"]
        response = world.alice.client.post("/api/v1/solve/", document, format="json")
        assert response.status_code == 200, response.content[:300]
        report = response.json()
        assert row["best"]["metrics"]["step_s"] == report["step"]["step_s"]
        assert row["best"]["metrics"]["total_usd"] == report["tco"]["total_usd"]
        steps.append(report["step"]["step_s"])
    assert steps[0] > 2 * steps[1]  # an A100 point is far slower than a B200 one
