"""End to end through the API and a real worker: scenarios, plans, runs, results, compare, a price book whose
publication re-runs a plan, the re-run's delta, and the CSV export."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from tests.api import factories as f
from tests.api.conftest import build_world
from tests.conftest import WorkerProcess, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.content[:500]
    body: dict[str, Any] = response.json()
    return body


def wait_for_run(client: Any, url: str, worker: WorkerProcess) -> dict[str, Any]:
    state: dict[str, Any] = {}

    def finished() -> bool:
        state.update(client.get(url).json())
        return state["status"] in {"succeeded", "failed"}

    assert wait_for(finished, timeout_s=60), worker.log()[-3000:]
    assert state["status"] == "succeeded", (state, worker.log()[-3000:])
    return state


def test_plan_to_compare_to_price_change_through_a_real_worker(celery_worker: WorkerProcess) -> None:
    world = build_world()
    client = world.carol.client
    cluster = created(
        client.post("/api/v1/clusters/", {"name": "h100 pod", "document": f.CLUSTER_DOC}, format="json")
    )
    model = created(
        client.post("/api/v1/models/", {"name": "llama 8b", "document": f.MODEL_DOC}, format="json")
    )
    site = created(client.post("/api/v1/sites/", {"name": "quebec", "document": f.SITE_DOC}, format="json"))
    parts = {"cluster": cluster["id"], "model": model["id"], "site": site["id"], "economics": f.ECONOMICS}
    plan_a = created(
        client.post(
            "/api/v1/plans/",
            {"name": "tp2", "training": f.TRAINING, "auto_rerun": True, **parts},
            format="json",
        )
    )
    tp4 = {**f.TRAINING, "layout": {**f.TRAINING["layout"], "tp": 4}}
    plan_b = created(client.post("/api/v1/plans/", {"name": "tp4", "training": tp4, **parts}, format="json"))

    # Run both; each answers 202 with the run's URL.
    runs = []
    for plan in (plan_a, plan_b):
        response = client.post(f"/api/v1/plans/{plan['id']}/run/")
        assert response.status_code == 202, response.content
        assert response["Location"] == response.json()["url"]
        runs.append(wait_for_run(client, response.json()["url"], celery_worker))

    result_a = client.get(f"/api/v1/results/{runs[0]['result']}/").json()
    assert result_a["plan"] == plan_a["id"] and result_a["version"] == 1
    assert result_a["report"]["step"]["step_s"] > 0
    assert result_a["input_snapshot"]["document"]["training"]["layout"]["tp"] == 2
    assert result_a["prices"]["cluster.accelerator.unit_price_usd"]["origin"] != "team_book"

    # Compare the two plans against the first.
    comparison = client.get(
        f"/api/v1/compare/?plans={plan_a['id']},{plan_b['id']}&baseline={plan_a['id']}"
    ).json()
    base, other = comparison["items"]
    assert base["baseline"] and base["values"]["tco.total_usd"]["delta"] == 0.0
    step_a = base["values"]["step.step_s"]["value"]
    step_b = other["values"]["step.step_s"]["value"]
    assert other["values"]["step.step_s"]["delta"] == pytest.approx(step_b - step_a)
    assert other["values"]["step.step_s"]["delta_pct"] == pytest.approx(100 * (step_b - step_a) / step_a)

    # Publish a team price book that raises the H100 price: both plans use it, so both are re-run.
    old_total = base["values"]["tco.total_usd"]["value"]
    book = created(
        client.post(
            "/api/v1/price-books/",
            {"name": "Q3 quotes", "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": 40000.0}]},
            format="json",
        )
    )
    assert book["version"] == 1

    def rerun_stored() -> bool:
        rows = client.get("/api/v1/results/?trigger=price_change").json()["results"]
        return {row["plan"] for row in rows} == {plan_a["id"], plan_b["id"]}

    assert wait_for(rerun_stored, timeout_s=60), celery_worker.log()[-3000:]
    latest = client.get(f"/api/v1/results/?plan={plan_a['id']}&latest=true").json()["results"]
    assert len(latest) == 1 and latest[0]["version"] == 2
    rerun = client.get(f"/api/v1/results/{latest[0]['id']}/").json()
    assert rerun["total_usd"] > old_total
    assert rerun["previous"] == result_a["id"]
    diff = client.get(f"/api/v1/results/{rerun['id']}/diff/").json()
    changed_outputs = {c["path"]: c for c in diff["outputs"]}
    assert changed_outputs["tco.total_usd"]["delta"] == pytest.approx(rerun["total_usd"] - old_total)
    price_change = {c["path"]: c for c in diff["inputs"]}
    assert any(path.endswith("unit_price_usd") and c["after"] == 40000.0 for path, c in price_change.items())
    runs_b = client.get(f"/api/v1/runs/?plan={plan_b['id']}&trigger=price_change").json()["results"]
    assert len(runs_b) == 1 and runs_b[0]["price_book"] == book["id"]

    # The comparison follows the latest results; CSV carries the same numbers.
    response = client.get(f"/api/v1/compare/?plans={plan_a['id']},{plan_b['id']}", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(r["plan"]) for r in rows] == [plan_a["id"], plan_b["id"]]
    assert float(rows[0]["tco.total_usd [USD]"]) == pytest.approx(rerun["total_usd"])
    latest_b = client.get(f"/api/v1/results/?plan={plan_b['id']}&latest=true").json()["results"][0]
    assert latest_b["version"] == 2
    assert float(rows[1]["tco.total_usd [USD] delta"]) == pytest.approx(
        latest_b["total_usd"] - rerun["total_usd"]
    )
    same = client.get(f"/api/v1/compare/?plans={plan_a['id']},{plan_b['id']}&format=csv")
    assert same.content == response.content
