"""``/api/v1/price-feeds/``: a team's feeds with their django-celery-beat schedules, roles and team scoping,
sources refused at creation, and a poll queued through the API and run by a real worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django_celery_beat.models import PeriodicTask

from scenarios import feeds
from scenarios.models import PriceBook, PriceFeed
from tests.api.conftest import World
from tests.conftest import wait_for
from tests.scenarios.test_price_feeds import V1_CSV, PriceServer, price_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db

URL = "/api/v1/price-feeds/"


@pytest.fixture
def feed_dir(tmp_path: Path, settings: Any) -> Path:
    directory = tmp_path / "feeds"
    directory.mkdir()
    for slug in ("alpha", "beta"):  # each team's own directory (<dir>/<team slug>/), the only one it reads
        (directory / slug).mkdir()
    settings.PRICE_FEED_DIRS = [str(directory)]
    return directory


def errors(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.content[:800]
    return {e["path"]: e["message"] for e in response.json()["errors"]}


def create(world: World, feed_dir: Path, **body: Any) -> Any:
    payload = {
        "name": "distributor",
        "source": str(feed_dir / "alpha" / "prices.csv"),
        "schedule": {"every_s": 3600},
        **body,
    }
    return world.carol.client.post(URL, payload, format="json")


def test_create_with_a_schedule_makes_the_beat_row_update_changes_it_delete_removes_it(
    world: World, feed_dir: Path
) -> None:
    response = create(world, feed_dir, mode="replace")
    assert response.status_code == 201, response.content
    body = response.json()
    task = PeriodicTask.objects.get(pk=body["schedule"]["periodic_task"])
    assert (task.task, json.loads(task.args), task.enabled) == (
        "scenarios.poll_price_feed",
        [body["id"]],
        True,
    )
    assert (task.interval.every, task.interval.period) == (3600, "seconds")
    assert body["schedule"] == {"every_s": 3600, "crontab": None, "timezone": None, "periodic_task": task.pk}
    assert (body["team"], body["mode"], body["format"], body["last_status"]) == (
        world.alpha.pk,
        "replace",
        "auto",
        "",
    )

    detail = f"{URL}{body['id']}/"
    response = world.carol.client.patch(
        detail, {"schedule": {"crontab": "30 2 * * *"}, "enabled": False}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["schedule"] == {
        "every_s": None,
        "crontab": "30 2 * * *",
        "timezone": "UTC",
        "periodic_task": task.pk,
    }
    task.refresh_from_db()
    assert task.interval is None and task.enabled is False
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("30", "2", "*")
    assert PeriodicTask.objects.filter(task=feeds.POLL_TASK).count() == 1

    # A schedule edited in the admin (any beat row) is what the API shows.
    task.crontab = None
    task.interval = feeds._schedule_row(feeds.Schedule(every_s=900))["interval"]
    task.save()
    assert world.bob.client.get(detail).json()["schedule"]["every_s"] == 900

    assert world.carol.client.delete(detail).status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not PriceFeed.objects.exists()


def test_members_read_editors_write_and_another_team_sees_nothing(world: World, feed_dir: Path) -> None:
    feed_id = create(world, feed_dir).json()["id"]
    detail = f"{URL}{feed_id}/"
    # A viewer reads, and cannot write.
    assert world.bob.client.get(detail).status_code == 200
    assert [f["id"] for f in world.bob.client.get(URL).json()["results"]] == [feed_id]
    assert world.bob.client.patch(detail, {"name": "x"}, format="json").status_code == 403
    assert world.bob.client.delete(detail).status_code == 403
    assert world.bob.client.post(f"{detail}poll/").status_code == 403
    assert create(world, feed_dir, name="b").status_code == 201  # carol (editor) writes
    viewer_create = world.bob.client.post(
        URL,
        {
            "team": world.alpha.pk,
            "name": "v",
            "source": str(feed_dir / "v.csv"),
            "schedule": {"every_s": 3600},
        },
        format="json",
    )
    assert viewer_create.status_code == 403
    # Another team: 404 on every method, absent from its list; it cannot create a feed in this team.
    for method, path in (("get", detail), ("patch", detail), ("delete", detail), ("post", f"{detail}poll/")):
        assert getattr(world.mallory.client, method)(path, {}, format="json").status_code == 404, method
    assert world.mallory.client.get(URL).json()["results"] == []
    refused = world.mallory.client.post(
        URL,
        {
            "team": world.alpha.pk,
            "name": "m",
            "source": str(feed_dir / "m.csv"),
            "schedule": {"every_s": 3600},
        },
        format="json",
    )
    assert "team" in errors(refused)
    assert world.anonymous.get(URL).status_code == 401
    assert PriceFeed.objects.filter(team=world.alpha).count() == 2
    assert PeriodicTask.objects.filter(task=feeds.POLL_TASK).count() == 2


def test_a_team_cannot_register_a_feed_on_another_teams_file(world: World, feed_dir: Path) -> None:
    alpha_file = feed_dir / "alpha" / "prices.csv"
    alpha_file.write_text(V1_CSV)
    (feed_dir / "beta" / "prices.csv").write_text(V1_CSV)
    body = {"name": "b", "schedule": {"every_s": 3600}}
    for source in (str(alpha_file), str(feed_dir / "beta" / ".." / "alpha" / "prices.csv")):
        refused = world.mallory.client.post(URL, {**body, "source": source}, format="json")
        found = errors(refused)  # 400
        assert list(found) == ["source"]
        assert f"is not under the team's own directory ({feed_dir}/beta/)" in found["source"]
    assert not PriceFeed.objects.exists()
    made = world.mallory.client.post(
        URL, {**body, "source": str(feed_dir / "beta" / "prices.csv")}, format="json"
    )
    assert made.status_code == 201, made.content
    moved = world.mallory.client.patch(
        f"{URL}{made.json()['id']}/", {"source": str(alpha_file)}, format="json"
    )
    assert "is not under the team's own directory" in errors(moved)["source"]
    assert PriceFeed.objects.get().source == str(feed_dir / "beta" / "prices.csv")


def test_global_feeds_are_not_in_the_team_api(world: World, feed_dir: Path) -> None:
    glob = feeds.feed_create(team=None, user=None, name="list", source=str(feed_dir / "g.csv"), schedule=None)
    assert world.alice.client.get(URL).json()["results"] == []
    assert world.alice.client.get(f"{URL}{glob.pk}/").status_code == 404
    assert "team" in errors(
        world.alice.client.post(
            URL,
            {"team": None, "name": "g", "source": str(feed_dir / "g2.csv"), "schedule": {"every_s": 3600}},
            format="json",
        )
    )


def test_sources_and_schedules_are_checked_at_creation(world: World, feed_dir: Path, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    assert (
        "is not under the team's own directory"
        in errors(create(world, feed_dir, source="/etc/passwd"))["source"]
    )
    private = errors(create(world, feed_dir, source="http://192.168.1.10/prices.csv"))["source"]
    assert "a private address; such addresses are never requested" in private
    assert "loopback" in errors(create(world, feed_dir, source="http://127.0.0.1:8000/p.csv"))["source"]
    assert errors(create(world, feed_dir, schedule=None)) == {
        "schedule": 'required: {"every_s": seconds} or {"crontab": "..."}'
    }
    assert "schedule" in errors(create(world, feed_dir, schedule={}))
    assert "schedule.every_s" in errors(create(world, feed_dir, schedule={"every_s": 5}))
    assert (
        "minute '75'"
        in errors(create(world, feed_dir, schedule={"crontab": "75 2 * * *"}))["schedule.crontab"]
    )
    assert "format" in errors(create(world, feed_dir, format="xml"))
    assert create(world, feed_dir).status_code == 201
    assert "exists already" in errors(create(world, feed_dir))["name"]
    feed_id = PriceFeed.objects.get().pk
    patched = world.carol.client.patch(f"{URL}{feed_id}/", {"source": "/etc/shadow"}, format="json")
    assert "source" in errors(patched)
    assert PriceFeed.objects.get().source == str(feed_dir / "alpha" / "prices.csv")
    assert PeriodicTask.objects.filter(task=feeds.POLL_TASK).count() == 1


@pytest.mark.django_db(transaction=True)
def test_poll_now_is_queued_and_a_real_worker_publishes_the_feed(
    world: World,
    price_server: PriceServer,  # noqa: F811  (the imported fixture)
    worker_factory: Any,
) -> None:
    price_server.serve("/prices.csv", V1_CSV)
    worker_factory(env={"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"}, concurrency=1)
    response = world.carol.client.post(
        URL,
        {"name": "dist", "source": price_server.url("/prices.csv"), "schedule": {"every_s": 3600}},
        format="json",
    )
    assert response.status_code == 201, response.content
    feed_id = response.json()["id"]
    polled = world.carol.client.post(f"{URL}{feed_id}/poll/")
    assert polled.status_code == 202, polled.content
    assert polled.json()["status"] == "queued" and polled["Location"].endswith(f"{URL}{feed_id}/")
    assert wait_for(lambda: PriceFeed.objects.get(pk=feed_id).last_status != "", timeout_s=30)
    feed = PriceFeed.objects.get(pk=feed_id)
    assert (feed.last_status, feed.last_error) == ("published", "")
    assert feed.last_book_id is not None
    book = PriceBook.objects.get(pk=feed.last_book_id)
    assert (book.team_id, book.version) == (world.alpha.pk, 1)
    assert book.source.startswith(f"dist: {price_server.url('/prices.csv')}, retrieved ")
    assert price_server.hits == ["/prices.csv"]
