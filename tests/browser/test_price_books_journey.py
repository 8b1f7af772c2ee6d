"""Publish a team price book version and see which plans moved once the real worker has re-run them."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scenarios.models import PriceBook
from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in, solved_plans
from tests.conftest import WorkerProcess

FAN_OUT_TIMEOUT_MS = 90_000


def test_publish_a_price_book_and_see_what_moved(ui: Ui, worker: WorkerProcess) -> None:
    world = build_world()
    names = ["h100 tp2", "h100 tp4"]
    solved_plans(team=world.alpha, user=world.carol.user, names=names, worker=worker)
    log_in(ui, "carol")
    page = ui.page
    page.get_by_role("link", name="Price books").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Price books")
    ui.check("price-books")

    page.get_by_role("link", name="Publish a new version").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Publish price book version")
    ui.check("price-book-new")
    page.get_by_label("Name", exact=True).fill("Q3 quotes")
    page.get_by_label("Source", exact=True).fill("vendor quote")
    page.get_by_label("Entry 1 kind").select_option(value="accelerator")
    page.get_by_label("Entry 1 key").fill("h100-sxm")
    page.get_by_label("Entry 1 value").fill("40000")
    page.get_by_role("button", name="Publish").click()

    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(r"^Price book version 1 \(Alpha\)"))
    book = PriceBook.objects.get(team=world.alpha)
    assert book.version == 1 and book.name == "Q3 quotes"
    expect(page.get_by_role("heading", level=2, name="What moved")).to_be_visible()
    # The page refreshes while the plans re-run on the worker, then lists every plan that moved.
    moved = page.get_by_role("table", name="Plans whose figures moved, largest change first")
    expect(moved).to_be_visible(timeout=FAN_OUT_TIMEOUT_MS)
    for name in names:
        expect(moved.get_by_role("link", name=name, exact=True)).to_be_visible()
    expect(page.locator("#fan-out-status")).to_contain_text("2 plans of your teams re-ran")
    ui.check("price-book")

    # A plan's diff link leads to the re-run result's diff.
    first = moved.get_by_role("link", name=re.compile(r"^Diff of result v2")).first
    expect(first).to_be_visible()
