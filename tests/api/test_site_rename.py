"""A site's team price is keyed by its name (``site:<name>``): what a rename does to it, through the API and the
admin, and what the admin's archive leaves in the audit log."""

from __future__ import annotations

import pytest
from django.test import Client

from scenarios import services
from scenarios.models import Plan, PriceBook, SiteScenario
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def _price_site(world: World, name: str) -> None:
    services.price_book_publish(
        team=world.alpha,
        user=world.alice.user,
        name="alpha prices",
        entries=[{"kind": "electricity", "key": f"site:{name}", "value": 0.0123}],
        fan_out="none",
    )


def _keys(world: World) -> set[str]:
    book = PriceBook.objects.filter(team=world.alpha).order_by("-version").first()
    assert book is not None
    return {entry.key for entry in book.entries.all()}


def test_an_archived_site_or_plan_is_read_not_changed_through_the_api(world: World) -> None:
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user)
    site = trio[2]
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="p", trio=trio)
    services.scenario_archive(scenario=site, user=world.alice.user)
    services.plan_archive(plan=plan, user=world.alice.user)
    for url in (f"/api/v1/sites/{site.pk}/", f"/api/v1/plans/{plan.pk}/"):
        assert world.alice.client.get(url).status_code == 200
        response = world.alice.client.patch(url, {"name": "renamed"}, format="json")
        assert response.status_code == 400, response.content[:300]
        assert response.json()["errors"][0]["path"] == "archived_at"
    assert SiteScenario.objects.get(pk=site.pk).name == site.name
    assert Plan.objects.get(pk=plan.pk).name == "p"


def test_a_rename_to_the_longest_name_carries_the_price(world: World) -> None:
    """A name has up to 200 characters, and a price key holds ``site:`` and such a name."""
    site = f.scenario_trio(team=world.alpha, user=world.alice.user)[2]
    _price_site(world, site.name)
    response = world.alice.client.patch(f"/api/v1/sites/{site.pk}/", {"name": "x" * 200}, format="json")
    assert response.status_code == 200, response.content[:400]
    assert _keys(world) == {"site:" + "x" * 200}


def test_a_rename_keeps_the_price_of_an_archived_site_of_the_same_name(world: World) -> None:
    """Archive frees a name: site A 'paris' (archived, its plan still runs) and site B 'paris' (live) share the
    team's ``site:paris`` price. Renaming B adds the price under B's new name and keeps A's."""
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user)
    old_site = trio[2]
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="on-archived", trio=trio)
    _price_site(world, old_site.name)
    services.scenario_archive(scenario=old_site, user=world.alice.user)
    new_site = services.scenario_create(
        kind="site", team=world.alpha, name=old_site.name, document=f.SITE_DOC, user=world.alice.user
    )
    before = services.plan_inputs(plan=Plan.objects.get(pk=plan.pk)).document
    assert before["site"]["electricity_usd_per_kwh"] == 0.0123
    response = world.alice.client.patch(f"/api/v1/sites/{new_site.pk}/", {"name": "lyon"}, format="json")
    assert response.status_code == 200, response.content[:300]
    assert services.plan_inputs(plan=Plan.objects.get(pk=plan.pk)).document == before
    assert _keys(world) == {f"site:{old_site.name}", "site:lyon"}


def test_the_admin_asks_to_un_archive_a_priced_site_before_renaming_it(
    world: World, admin_client: Client
) -> None:
    """A book names live sites only, so an archived site's price cannot be carried to a new name: the admin's form
    says so (a 500 otherwise), and nothing changes."""
    site = f.scenario_trio(team=world.alpha, user=world.alice.user)[2]
    _price_site(world, site.name)
    services.scenario_archive(scenario=site, user=world.alice.user)
    archived = SiteScenario.objects.get(pk=site.pk).archived_at
    assert archived is not None
    response = admin_client.post(
        f"/admin/scenarios/sitescenario/{site.pk}/change/",
        {
            "name": "renamed",
            "description": "",
            "archived_at_0": archived.strftime("%Y-%m-%d"),
            "archived_at_1": archived.strftime("%H:%M:%S"),
        },
    )
    assert response.status_code == 200 and "un-archive it to rename it" in response.content.decode()
    assert SiteScenario.objects.get(pk=site.pk).name == site.name
    assert _keys(world) == {f"site:{site.name}"}


def test_archiving_a_scenario_in_the_admin_is_in_the_audit_log(world: World, admin_client: Client) -> None:
    """The admin archives through ``services.scenario_archive``, a save, so django-auditlog records who did it (a
    queryset update sends no signal)."""
    from auditlog.models import LogEntry

    site = f.scenario_trio(team=world.alpha, user=world.alice.user)[2]
    before = LogEntry.objects.get_for_object(site).count()
    response = admin_client.post(
        f"/admin/scenarios/sitescenario/{site.pk}/change/",
        {"name": site.name, "description": "", "archived_at_0": "2026-01-02", "archived_at_1": "03:04:05"},
    )
    assert response.status_code == 302, response.content.decode()[:1000]
    site.refresh_from_db()
    assert site.archived_at is not None
    entries = LogEntry.objects.get_for_object(site)
    assert entries.count() > before
    assert any("archived_at" in (entry.changes_dict or {}) for entry in entries)
