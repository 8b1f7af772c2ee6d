"""Create a plan from the catalog's presets, run it on the real worker and watch it finish."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scenarios.models import Plan
from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in

RUN_TIMEOUT_MS = 90_000


def test_create_a_plan_from_presets_and_run_it(ui: Ui) -> None:
    world = build_world()
    log_in(ui, "carol")
    page = ui.page
    ui.goto("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Plans")
    page.get_by_role("link", name="New plan").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("New plan")
    ui.check("plan-new")
    presets = page.get_by_role("region", name="From the catalog's presets")
    presets.get_by_label("Name", exact=True).fill("llama on h100")
    for label in ("Model", "Node", "Region"):
        expect(presets.get_by_label(label, exact=True)).to_be_visible()
    presets.get_by_label("GPUs", exact=True).fill("64")
    presets.get_by_role("button", name="Create plan").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("llama on h100")
    plan = Plan.objects.get(name="llama on h100")
    assert plan.team_id == world.alpha.pk
    expect(page.get_by_role("heading", name="No result yet")).to_be_visible()
    ui.check("plan-created")

    page.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("status").first).to_be_visible()
    # The page follows the run (plan_detail.js) and reloads with the result once the worker has stored it.
    expect(page.get_by_role("heading", name=re.compile(r"Latest result: version 1"))).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    expect(page.get_by_role("status").first).to_contain_text("succeeded")
    expect(page.get_by_role("link", name="Start sweep")).to_be_visible()
    ui.check("plan-detail")

    page.get_by_role("link", name="Plans", exact=True).click()
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="llama on h100"))
    expect(row).to_contain_text("succeeded")
    expect(row).not_to_contain_text("No result yet")
    ui.check("plans")
