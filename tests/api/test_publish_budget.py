"""Publishing a price book re-runs every plan of the team whose prices it changes (a solve each), and polling a
price feed on demand fetches its source and may publish one, so both draw on the caller's ``run`` budget as
``POST /plans/{id}/run/`` does: over the budget it is a 429 and nothing is published or queued."""

from __future__ import annotations

from typing import Any

import pytest

from api.throttling import PerTokenScopedThrottle
from scenarios.models import PriceBook, Run
from tests.api import factories as f
from tests.api.conftest import World, no_broker  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def test_publishing_price_books_that_rerun_plans_is_throttled_as_runs_are(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    no_broker: None,  # noqa: F811
) -> None:
    monkeypatch.setattr(PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "2/min", "run": "2/min"})
    f.plan_for(team=world.alpha, user=world.alice.user, name="priced")
    statuses = []
    for value in (31000.0, 32000.0, 33000.0):
        body = {
            "team": world.alpha.pk,
            "name": "alpha prices",
            "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": value}],
        }
        response = world.carol.client.post("/api/v1/price-books/", body, format="json")
        statuses.append(response.status_code)
    assert statuses == [201, 201, 429]
    assert "Retry-After" in response
    assert PriceBook.objects.filter(team=world.alpha).count() == 2
    assert Run.objects.filter(team=world.alpha, trigger="price_change").count() <= 2


def test_polling_a_price_feed_on_demand_is_throttled_as_runs_are(
    world: World, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """Each ``POST /price-feeds/{id}/poll/`` queues a fetch of the feed's source (an outbound request) and
    may publish a book that re-runs the team's plans: it shares the ``run`` budget."""
    from scenarios import feeds

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    monkeypatch.setattr(PerTokenScopedThrottle, "THROTTLE_RATES", {"solve": "2/min", "run": "2/min"})
    polls: list[int] = []
    monkeypatch.setattr(feeds, "enqueue_poll", lambda *, feed_id: polls.append(feed_id))
    body = {
        "team": world.alpha.pk,
        "name": "distributor",
        "source": "http://127.0.0.1:9/prices.csv",
        "schedule": {"every_s": 3600},
    }
    feed = world.carol.client.post("/api/v1/price-feeds/", body, format="json")
    assert feed.status_code == 201, feed.content
    url = f"/api/v1/price-feeds/{feed.json()['id']}/poll/"
    statuses = [world.carol.client.post(url).status_code for _ in range(3)]
    assert statuses == [202, 202, 429]
    assert len(polls) == 2
