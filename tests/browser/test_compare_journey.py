"""Compare three plans solved by the real worker: charts, the table of differences, CSV and PNG downloads."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from playwright.sync_api import expect

from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in, solved_plans
from tests.conftest import WorkerProcess

CHARTS = ("Step-time budget", "Total cost of ownership", "Carbon", "Water", "Time to train")


def test_compare_three_plans_and_download(ui: Ui, worker: WorkerProcess) -> None:
    world = build_world()
    names = ["tp2 run", "tp4 run", "tp8 run"]
    plans = solved_plans(team=world.alpha, user=world.carol.user, names=names, worker=worker)
    log_in(ui, "bob")  # a viewer compares too
    page = ui.page
    page.get_by_role("link", name="Compare", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Compare plans")
    ui.check("compare-empty")

    for name in names:
        page.get_by_role("checkbox", name=name, exact=True).check()
    page.get_by_label("Baseline").select_option(label="tp4 run")
    page.get_by_role("button", name="Compare", exact=True).click()

    for title in CHARTS:
        expect(page.locator("figure figcaption", has_text=title)).to_be_visible()
    table = page.get_by_role("table", name="Differences against the baseline")
    for name in names:
        expect(table.get_by_role("columnheader", name=name)).to_be_visible()
    # The URL is the shareable selection.
    assert f"baseline={plans[1].pk}" in page.url
    ui.check("compare")

    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download CSV").click()
    download = download_info.value
    text = Path(download.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(row["plan"]) for row in rows] == [plan.pk for plan in plans]
    total = next(key for key in rows[0] if key.startswith("tco.total_usd") and not key.endswith("delta"))
    for row, plan in zip(rows, plans, strict=True):
        plan.latest_result.refresh_from_db()
        assert float(row[total]) == plan.latest_result.total_usd
    baseline_row = rows[1]
    assert float(baseline_row[f"{total} delta"]) == 0.0

    with page.expect_download() as png_info:
        page.get_by_role("button", name="Download PNG of Carbon").click()
    png = Path(png_info.value.path()).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert png_info.value.suggested_filename.endswith(".png")
