"""A global price feed's source (the operator's URL or file path) stays in the admin: every team reads the
global books and their ``price_book.published`` events, so neither carries it, whether the poll failed (the
``price_feed.failed`` event names the feed only) or published a book."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scenarios import feeds
from scenarios.models import EVENT_PRICE_BOOK_PUBLISHED
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

CSV = "kind,key,value,source\naccelerator,h100-sxm,21000,quote A\n"


def test_a_book_published_by_a_global_feed_does_not_show_the_feeds_source_to_teams(
    world: World, tmp_path: Path, settings: Any
) -> None:
    feed_dir = tmp_path / "feeds"
    private = feed_dir / "operator-contracts" / "nvidia-2027-discount-tier-b"
    private.mkdir(parents=True)
    settings.PRICE_FEED_DIRS = [str(feed_dir)]
    path = private / "list.csv"
    path.write_text(CSV)
    feed = feeds.feed_create(team=None, user=None, name="list", source=str(path), schedule={"every_s": 3600})
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "published" and outcome.book_id is not None

    book = world.mallory.client.get(f"/api/v1/price-books/{outcome.book_id}/")
    assert book.status_code == 200
    assert "operator-contracts" not in book.json()["source"]
    listed = world.mallory.client.get("/api/v1/price-books/", {"scope": "global"}).json()["results"]
    assert all("operator-contracts" not in row["source"] for row in listed)
    events = world.mallory.client.get("/api/v1/events/", {"kind": EVENT_PRICE_BOOK_PUBLISHED}).json()
    published = [e for e in events["results"] if e["payload"].get("price_book") == outcome.book_id]
    assert published, events
    assert "operator-contracts" not in str(published[0]["payload"])
