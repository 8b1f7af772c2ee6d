"""The API docs page renders from the project's own files: no request leaves the site."""

from __future__ import annotations

from urllib.parse import urlsplit

from playwright.sync_api import expect

from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in


def test_docs_page_is_served_by_the_project(ui: Ui) -> None:
    build_world()
    log_in(ui, "alice")
    page = ui.page
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.get_by_role("link", name="API docs").click()
    expect(page.get_by_role("heading", name="Planner API")).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()
    origin = urlsplit(ui.base_url).netloc
    foreign = [url for url in requested if not url.startswith("data:") and urlsplit(url).netloc != origin]
    assert not foreign, foreign
    # Swagger UI's own widgets: its colour scheme and its operation headers (a button inside a button-like
    # summary) are upstream's; everything else on the page is held to the same bars as the dashboard's.
    ui.check("docs", third_party_rules=("color-contrast", "nested-interactive"))
