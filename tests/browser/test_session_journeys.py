"""Log in, log out and the team switcher in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scenarios.models import Membership
from tests.api.conftest import build_world
from tests.browser.conftest import Ui, log_in


def test_log_in_and_out(ui: Ui) -> None:
    build_world()
    page = ui.page
    # An anonymous visitor is sent to the log-in page, which brings them back afterwards.
    ui.goto("/tokens/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/tokens/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Log in to Planner")
    ui.check("login")

    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("wrong password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")
    ui.check("login-error")

    page.get_by_label("Password").fill("alice-password-1234")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(ui.url("/tokens/"))
    expect(page.get_by_role("heading", level=1)).to_have_text("API tokens")
    expect(page.get_by_text("alice", exact=True)).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    ui.goto("/tokens/")
    expect(page).to_have_url(re.compile(r"/login/\?next="))


def test_team_switcher(ui: Ui) -> None:
    world = build_world()
    Membership.objects.create(team=world.beta, user=world.alice.user, role="viewer")
    log_in(ui, "alice")
    page = ui.page
    ui.goto("/tokens/")
    switcher = page.get_by_label("Team", exact=True).first
    expect(page.locator("#team-switch")).to_have_value(str(world.alpha.pk))
    # Choosing a team submits the switcher (app.js); the page comes back with that team selected.
    page.locator("#team-switch").select_option(label="Beta (viewer)")
    page.wait_for_load_state("load")
    expect(page.locator("#team-switch")).to_have_value(str(world.beta.pk))
    expect(page).to_have_url(ui.url("/tokens/"))
    assert switcher is not None
    ui.check("team-switched")


def test_the_harness_reports_policy_violations(ui: Ui) -> None:
    """The bars are real: markup the policy forbids, put on a page, is reported (and then forgiven here)."""
    ui.goto("/login/")
    ui.page.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<div style=\"color: red\">inline</div>')"
    )
    ui.page.wait_for_timeout(300)
    assert any("CSP violation" in problem and "style-src" in problem for problem in ui.problems), ui.problems
    ui.problems.clear()
