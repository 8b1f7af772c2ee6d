"""The admin holds to the services' rules: no page gives a 500, and no form or action stores what the API (its
services) would refuse."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from scenarios import services
from scenarios.models import PriceBook, PriceFeed, SiteScenario
from tests.scenarios.factories import CLUSTER_H100, SITE_DOC, make_scenario, make_team, make_user

pytestmark = pytest.mark.django_db


def _no_raise(client: Client) -> Client:
    client.raise_request_exception = False
    return client


HOOK = "http://127.0.0.1:9/planner"


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


def _endpoint(team: Any) -> Any:
    from integrations.services import endpoint_create

    return endpoint_create(team=team, user=None, url=HOOK).endpoint


def _endpoint_form(endpoint: Any, **changes: Any) -> dict[str, Any]:
    form = {
        "url": endpoint.url,
        "description": endpoint.description,
        "event_kinds": "[]",
        "thresholds": "{}",
        "plan_id": "",
        "batch_size": str(endpoint.batch_size),
        "failure_limit": str(endpoint.failure_limit),
    }
    if endpoint.enabled:
        form["enabled"] = "on"
    form.update(changes)
    return form


def test_deleting_a_user_who_wrote_immutable_rows_in_the_admin_is_not_a_500(admin_client: Client) -> None:
    """A revision's and a price book's ``created_by`` are SET_NULL: deleting their author UPDATEs immutable
    rows, which the database refuses, so the admin's user delete is a 500 (for revisions and for books)."""
    user = make_user()
    team = make_team(owner=user)
    make_scenario(kind="cluster", team=team, document=CLUSTER_H100, user=user)
    response = _no_raise(admin_client).post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})
    assert response.status_code in (200, 302), response.status_code

    author = make_user()
    services.price_book_publish(
        team=team, user=author, name="team", entries=[{"kind": "electricity", "key": "quebec", "value": 0.1}]
    )
    assert PriceBook.objects.filter(created_by=author).exists()
    response = _no_raise(admin_client).post(f"/admin/auth/user/{author.pk}/delete/", {"post": "yes"})
    assert response.status_code in (200, 302), response.status_code


def test_the_admin_endpoint_form_refuses_what_the_api_refuses(
    loopback_allowed: None, admin_client: Client
) -> None:
    """The API checks an endpoint's URL with the SSRF guard, its event kinds and its thresholds
    (``integrations.services.endpoint_fields_clean``); the admin's form used to store any of them, e.g. the cloud metadata
    address."""
    team = make_team()
    endpoint = _endpoint(team)
    url = f"/admin/integrations/endpoint/{endpoint.pk}/change/"
    admin_client.post(url, _endpoint_form(endpoint, url="http://169.254.169.254/latest/meta-data/"))
    endpoint.refresh_from_db()
    assert endpoint.url == HOOK
    admin_client.post(url, _endpoint_form(endpoint, event_kinds='["no.such.kind"]', thresholds='{"x": -1}'))
    endpoint.refresh_from_db()
    assert (endpoint.event_kinds, endpoint.thresholds) == ([], {})


def test_enabling_an_endpoint_in_the_admin_resets_it_as_the_api_does(
    loopback_allowed: None, admin_client: Client
) -> None:
    from django.utils import timezone

    from integrations.models import Endpoint

    team = make_team()
    endpoint = _endpoint(team)
    Endpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False,
        consecutive_failures=endpoint.failure_limit,
        disabled_at=timezone.now(),
        disabled_reason="too many failures",
    )
    endpoint.refresh_from_db()
    # "enabled" is read-only on the change page: ticking it could not reset the failure count
    url = f"/admin/integrations/endpoint/{endpoint.pk}/change/"
    admin_client.post(url, _endpoint_form(endpoint, enabled="on"))
    endpoint.refresh_from_db()
    assert not endpoint.enabled
    # the action does what the API's enable does
    changelist = "/admin/integrations/endpoint/"
    response = admin_client.post(changelist, {"action": "enable_again", "_selected_action": [endpoint.pk]})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.enabled
    assert (endpoint.consecutive_failures, endpoint.disabled_at, endpoint.disabled_reason) == (0, None, "")
    response = admin_client.post(changelist, {"action": "disable", "_selected_action": [endpoint.pk]})
    endpoint.refresh_from_db()
    assert not endpoint.enabled and endpoint.disabled_reason.startswith("disabled in the admin by")
    # as a disable after failures does: the team is told (webhook.disabled)
    from scenarios.models import EVENT_WEBHOOK_DISABLED, Event

    (event,) = Event.objects.filter(kind=EVENT_WEBHOOK_DISABLED, team_id=team.pk)
    assert event.payload["endpoint"] == endpoint.pk


def test_the_admin_team_form_refuses_thresholds_the_api_refuses(admin_client: Client) -> None:
    team = make_team()
    url = f"/admin/scenarios/team/{team.pk}/change/"
    form = {
        "name": team.name,
        "alert_thresholds": '{"no_such_figure": "big"}',
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    admin_client.post(url, form)
    team.refresh_from_db()
    assert team.alert_thresholds == {}


def test_renaming_a_site_in_the_admin_carries_its_team_price(admin_client: Client) -> None:
    """``scenario_update`` carries a site's team price (``site:<name>``) to its new name; the admin saves the
    row directly, so the site loses its price."""
    team = make_team()
    site = make_scenario(kind="site", team=team, document=SITE_DOC, name="old site")
    services.price_book_publish(
        team=team,
        user=None,
        name="team",
        entries=[{"kind": "electricity", "key": "site:old site", "value": 0.4}],
    )
    url = f"/admin/scenarios/sitescenario/{site.pk}/change/"
    response = admin_client.post(
        url, {"name": "new site", "description": "", "archived_at_0": "", "archived_at_1": ""}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert SiteScenario.objects.get(pk=site.pk).name == "new site"
    book = PriceBook.objects.filter(team=team).order_by("-version").first()
    assert book is not None
    assert {e.key for e in book.entries.all()} == {"site:new site"}


def test_the_admin_scenario_add_page_does_not_make_a_scenario_without_a_document(
    admin_client: Client,
) -> None:
    """The API makes a scenario with its first revision (``scenario_create``); the admin's add page makes one
    with no revision at all."""
    team = make_team()
    admin_client.post(
        "/admin/scenarios/clusterscenario/add/",
        {"team": team.pk, "name": "empty", "description": "", "archived_at_0": "", "archived_at_1": ""},
    )
    from scenarios.models import ClusterScenario

    assert not ClusterScenario.objects.filter(team=team, name="empty", latest_revision__isnull=True).exists()


def test_a_view_only_staff_user_cannot_poll_feeds(feed_dir: Any, client: Client) -> None:
    """``poll_now`` publishes price books (and their re-runs); with no ``permissions`` it is offered to a staff
    user who may only view feeds."""
    from django.contrib.auth.models import Permission

    from scenarios import feeds

    (feed_dir / "p.csv").write_text("kind,key,value\nelectricity,quebec,0.2\n")
    feed = feeds.feed_create(
        team=None, user=None, name="g", source=str(feed_dir / "p.csv"), schedule={"every_s": 3600}
    )
    staff = make_user()
    staff.is_staff = True
    staff.save()
    staff.user_permissions.add(Permission.objects.get(codename="view_pricefeed"))
    client.force_login(staff)
    response = client.post(
        "/admin/scenarios/pricefeed/", {"action": "poll_now", "_selected_action": [feed.pk], "index": 0}
    )
    assert response.status_code in (200, 302)
    feed.refresh_from_db()
    assert feed.last_checked_at is None
    assert not PriceBook.objects.filter(team=None).exists()


def test_renaming_a_team_feed_to_a_taken_name_in_the_admin_is_not_a_500(
    feed_dir: Any, admin_client: Client
) -> None:
    from scenarios import feeds

    team = make_team()
    (feed_dir / team.slug).mkdir()
    path = feed_dir / team.slug / "p.csv"
    path.write_text("kind,key,value\n")
    feeds.feed_create(team=team, user=None, name="first", source=str(path), schedule={"every_s": 3600})
    second = feeds.feed_create(
        team=team, user=None, name="second", source=str(path), schedule={"every_s": 3600}
    )
    response = _no_raise(admin_client).post(
        f"/admin/scenarios/pricefeed/{second.pk}/change/",
        {
            "name": "first",
            "source": str(path),
            "format": "auto",
            "mode": "patch",
            "enabled": "on",
            "every_s": "",
            "crontab": "",
        },
    )
    assert response.status_code == 200, response.status_code
    assert PriceFeed.objects.get(pk=second.pk).name == "second"


def test_renaming_a_scenario_to_a_live_name_in_the_admin_is_not_a_500(admin_client: Client) -> None:
    """The team is read-only on the change page, so the form skips the (team, name) live-name constraint and
    the database refuses the save: a 500 instead of the form's error."""
    from scenarios.models import ClusterScenario

    team = make_team()
    make_scenario(kind="cluster", team=team, document=CLUSTER_H100, name="taken")
    other = make_scenario(kind="cluster", team=team, document=CLUSTER_H100, name="other")
    response = _no_raise(admin_client).post(
        f"/admin/scenarios/clusterscenario/{other.pk}/change/",
        {"name": "taken", "description": "", "archived_at_0": "", "archived_at_1": ""},
    )
    assert response.status_code == 200, response.status_code
    assert ClusterScenario.objects.get(pk=other.pk).name == "other"


def test_runs_and_deliveries_are_view_only_in_the_admin(admin_user: Any) -> None:
    """Their state is the workers': a saved change page would write back every column as read, over an update
    a worker made meanwhile."""
    from django.contrib import admin
    from django.test import RequestFactory

    from integrations.models import Delivery
    from scenarios.models import Run

    request = RequestFactory().get("/admin/")
    request.user = admin_user
    for model in (Run, Delivery):
        model_admin = admin.site._registry[model]
        assert model_admin.has_view_permission(request) and not model_admin.has_change_permission(request)
