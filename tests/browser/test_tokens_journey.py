"""Create an API token (its secret shown once), use it, revoke it, in a real browser."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from api.models import ApiToken
from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in


def api_status(ui: Ui, secret: str) -> int:
    return httpx.get(ui.url("/api/v1/tokens/"), headers={"Authorization": f"Bearer {secret}"}).status_code


def test_create_and_revoke_a_token(ui: Ui) -> None:
    world = build_world()
    log_in(ui, "carol")
    page = ui.page
    ui.goto("/tokens/")
    expect(page.get_by_role("heading", level=1)).to_have_text("API tokens")
    expect(page.get_by_role("link", name="API tokens")).to_have_attribute("aria-current", "page")
    ui.check("tokens")

    # Bad input: the form comes back (400) with the field named, nothing stored.
    ui.allow(r"status of 400")
    page.get_by_label("Name").fill("nightly export")
    page.get_by_label("Expires in (days)").fill("0")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("alert")).to_contain_text(
        "Expires in (days): Ensure this value is greater than or equal to 1."
    )
    ui.check("tokens-error")
    assert not ApiToken.objects.filter(name="nightly export").exists()

    page.get_by_label("Name").fill("nightly export")
    page.get_by_label("Team", exact=True).last.select_option(label="Alpha")
    page.get_by_label("Expires in (days)").fill("30")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_text("Copy it now: it is shown only once.")).to_be_visible()
    secret = page.locator(".secret").inner_text().strip()
    assert secret.startswith("pln_")
    ui.check("tokens-created")
    token = ApiToken.objects.get(name="nightly export")
    assert token.team_id == world.alpha.pk and token.expires_at is not None
    assert api_status(ui, secret) == 200

    # Shown once: a reload does not show it again.
    page.reload()
    expect(page.get_by_text("Copy it now")).to_have_count(0)
    assert secret not in page.content()

    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name="nightly export"))
    expect(row).to_contain_text("active")
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status")).to_contain_text("revoked")
    expect(row).to_contain_text("revoked")
    expect(row.get_by_role("button", name="Revoke")).to_have_count(0)
    ui.check("tokens-revoked")
    assert api_status(ui, secret) == 401
