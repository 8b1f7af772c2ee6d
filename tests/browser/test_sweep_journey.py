"""Start a sweep of a plan, watch its progress on the real worker, then read its Pareto chart and table."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scenarios.models import Run
from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in, solved_plans
from tests.conftest import WorkerProcess

SWEEP_TIMEOUT_MS = 120_000


def test_start_a_sweep_and_see_its_pareto_front(ui: Ui, worker: WorkerProcess) -> None:
    world = build_world()
    (plan,) = solved_plans(team=world.alpha, user=world.carol.user, names=["sweep me"], worker=worker)
    log_in(ui, "carol")
    page = ui.page
    ui.goto(f"/plans/{plan.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("sweep me")
    page.get_by_role("link", name="Start sweep").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Start a sweep")
    ui.check("sweep-new")
    axis = page.get_by_role("group", name="Axis 1")
    axis.get_by_label("Field", exact=True).fill("cluster.gpus")
    axis.get_by_label("Values", exact=True).fill("32, 64")
    page.get_by_role("button", name="Start sweep").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Sweep of sweep me")
    run = Run.objects.filter(plan=plan, kind="sweep").get()
    assert run.points_total == 2
    progress = page.get_by_label("Progress", exact=True)
    if Run.objects.get(pk=run.pk).status in {"queued", "running"} and progress.count():
        ui.check("sweep-running")
    # The page follows the run (jobs.js) and shows the result when the worker has finished it.
    expect(page.get_by_role("heading", name="Pareto front")).to_be_visible(timeout=SWEEP_TIMEOUT_MS)
    expect(page.get_by_role("status")).to_contain_text(re.compile("succeeded", re.IGNORECASE))
    expect(page.locator("figure.chart canvas#pareto-chart")).to_be_visible()
    table = page.get_by_role("table", name="Best layouts")
    expect(table.get_by_role("row")).to_have_count(3)  # the header and one row per point
    ui.check("sweep")

    page.get_by_role("link", name="All searches and sweeps").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Searches and sweeps")
    expect(page.get_by_role("link", name=re.compile("sweep me")).first).to_be_visible()
    ui.check("jobs")
