"""The dashboard at its edges: a log-in page asked to come back to itself, the error pages of a team member,
and a plan page that reads its ranges as the compare page does."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest
from django.urls import reverse

from tests.api import factories as f
from tests.web.conftest import Browsers

pytestmark = pytest.mark.django_db

NO_TEAM_NOTICE = "You are not a member of any team yet"


def _no_raise(client: Any) -> Any:
    client.raise_request_exception = False
    return client


# --- An odd ?next= is a 500 -----------------------------------------------------------------------------


def test_a_signed_in_user_sent_to_log_in_with_next_pointing_at_log_in_is_redirected_not_a_500(
    browsers: Browsers,
) -> None:
    # LoginView(redirect_authenticated_user=True) raises ValueError("Redirection loop ...") when the
    # (safe, same-site) ?next= is the log-in page itself: any signed-in user following such a link gets a 500.
    client = _no_raise(browsers.alice)
    response = client.get(f"{reverse('web:login')}?next={reverse('web:login')}")
    assert response.status_code == 302, response.status_code
    assert response["Location"] != reverse("web:login")


# --- Error pages tell a team member that they are in no team ----------------------------------------------


def test_error_pages_do_not_tell_a_team_member_they_are_in_no_team(browsers: Browsers) -> None:
    # base.html shows the "no team" notice when ``access`` is missing from the context, which is the case on
    # every page Django's own handlers draw (404, 403) and on the 429 page: alice is admin of alpha, bob a
    # viewer of alpha (the create page is a 403 for him); both are told they are in no team.
    not_found = _no_raise(browsers.alice).get(reverse("web:plan-detail", args=[987654]))
    assert not_found.status_code == 404
    forbidden = _no_raise(browsers.bob).get(reverse("web:plan-create"))
    assert forbidden.status_code == 403
    assert NO_TEAM_NOTICE not in not_found.content.decode()
    assert NO_TEAM_NOTICE not in forbidden.content.decode()


# --- The plan page and the compare page read a report's ranges differently -------------------------------


def _plan_with_report(browsers: Browsers, name: str, edit: Any) -> Any:
    world = browsers.world
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name=name)
    original = f.fake_report

    def edited(scale: float) -> dict[str, Any]:
        report = original(scale)
        edit(report)
        return report

    f.fake_report = edited
    try:
        f.insert_result(plan=plan, scale=1.0)
    finally:
        f.fake_report = original
    return plan


def test_the_plan_page_shows_the_same_range_the_compare_page_shows(browsers: Browsers) -> None:
    # A range beside its figure (a section's ``range`` mapping) is read by the API's figure_range, so the
    # compare page prints it; the plan page's headline cards read only the top-level ``ranges`` block and
    # show the same figure of the same stored result without its range.
    def with_range(report: dict[str, Any]) -> None:
        report["schedule"]["range"] = {"wall_clock_days": {"p10": 9.0, "p50": 11.0, "p90": 15.0}}

    plan = _plan_with_report(browsers, "ranged", with_range)
    other = _plan_with_report(browsers, "plain", lambda report: None)
    compare = unescape(browsers.bob.get(f"/compare/?plans={plan.pk},{other.pk}").content.decode())
    assert "p10–p90 9.00 days – 15.0 days" in compare  # the compare page shows the range
    detail = unescape(browsers.bob.get(reverse("web:plan-detail", args=[plan.pk])).content.decode())
    assert "9.00 days – 15.0 days" in detail
