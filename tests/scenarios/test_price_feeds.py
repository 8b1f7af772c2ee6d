"""Price feeds (``scenarios.feeds``): file and URL sources polled into price books.

URL feeds are served by a real HTTP server on 127.0.0.1 in a thread (allow-listed for the SSRF guard by
``OUTBOUND_ALLOWED_HOSTS`` in these tests only); file feeds live in a temporary directory listed in
``PRICE_FEED_DIRS``. Most tests call ``feeds.poll`` directly.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django_celery_beat.models import PeriodicTask

from scenarios import fanout, feed_sources, feeds
from scenarios.models import EVENT_PRICE_FEED_FAILED, Event, PriceBook, PriceFeed, Run
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db

V1_CSV = "kind,key,value,source\naccelerator,h100-sxm,21000,quote A\nelectricity,quebec,0.045,rate L\n"
V2_CSV = "kind,key,value,source\naccelerator,h100-sxm,19500,quote B\nelectricity,quebec,0.045,rate L\n"
# Row 3 (the third entry, line 4 of the file) has a price that is not a number; rows 1 and 2 are fine.
BAD_CSV = (
    "kind,key,value\naccelerator,h100-sxm,18000\nelectricity,quebec,0.04\naccelerator,a100-sxm-80gb,cheap\n"
)


# --- a local HTTP server ----------------------------------------------------------------------------


@dataclass
class Served:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/csv"


@dataclass
class PriceServer:
    base: str
    routes: dict[str, Served] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def serve(
        self, path: str, body: str | bytes, *, status: int = 200, content_type: str = "text/csv"
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = Served(status=status, body=data, content_type=content_type)


@pytest.fixture
def price_server(settings: Any) -> Iterator[PriceServer]:
    routes: dict[str, Served] = {}
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            served = routes.get(self.path, Served(status=404, body=b"no such price file"))
            self.send_response(served.status)
            self.send_header("Content-Type", served.content_type)
            self.send_header("Content-Length", str(len(served.body)))
            self.end_headers()
            self.wfile.write(served.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    try:
        yield PriceServer(base=f"http://127.0.0.1:{server.server_address[1]}", routes=routes, hits=hits)
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def team_dir(feed_dir: Path, team: Any) -> Path:
    """The team's own directory of PRICE_FEED_DIRS (``<dir>/<team slug>/``), the only one its feeds read."""
    directory = feed_dir / team.slug
    directory.mkdir(exist_ok=True)
    return directory


def failed_events(feed: PriceFeed) -> list[Event]:
    return list(Event.objects.filter(kind=EVENT_PRICE_FEED_FAILED, payload__feed=feed.pk).order_by("id"))


def book_of(outcome: feeds.PollOutcome) -> PriceBook:
    assert outcome.book_id is not None, outcome
    return PriceBook.objects.get(pk=outcome.book_id)


def prices(book: PriceBook) -> dict[tuple[str, str], float]:
    return {(e.kind, e.key): e.value for e in book.entries.all()}


# --- file feeds -------------------------------------------------------------------------------------


def test_a_changed_file_publishes_the_next_version_and_re_runs_the_plans(
    feed_dir: Path,
    sent: list[list[int]],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    team = make_team()
    plan = make_plan(team=team)
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_text(V1_CSV)
    feed = feeds.feed_create(
        team=team, user=None, name="distributor", source=str(path), schedule={"every_s": 3600}
    )

    first = feeds.poll(feed_id=feed.pk)
    assert first.status == "published"
    v1 = book_of(first)
    assert (v1.team, v1.version, v1.mode) == (team, 1, "patch")

    # The normal fan-out (after commit) re-runs the plan whose prices moved: here it runs in this process.
    monkeypatch.setattr(
        fanout,
        "enqueue_price_fan_out",
        lambda *, price_book_id: fanout.price_book_fan_out(price_book_id=price_book_id),
    )
    Run.objects.all().delete()
    path.write_text(V2_CSV)
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    with django_capture_on_commit_callbacks(execute=True):
        second = feeds.poll(feed_id=feed.pk)
    assert second.status == "published"
    v2 = book_of(second)
    assert (v2.version, v2.mode, v2.based_on_id) == (2, "patch", v1.pk)
    assert prices(v2)[("accelerator", "h100-sxm")] == 19500.0
    assert v2.source.startswith(f"distributor: {path}, retrieved ")
    retrieved = dt.datetime.fromisoformat(v2.source.rsplit("retrieved ", 1)[1])
    assert before <= retrieved <= dt.datetime.now(dt.UTC)
    rerun = Run.objects.get()
    assert (rerun.plan_id, rerun.trigger) == (plan.pk, "price_change")
    assert sent == [[rerun.pk]]

    feed.refresh_from_db()
    assert (feed.last_status, feed.last_book_id, feed.last_error) == ("published", v2.pk, "")
    assert feed.last_hash == feeds.hashlib.sha256(V2_CSV.encode()).hexdigest()
    assert not failed_events(feed)


def test_unchanged_content_publishes_nothing_and_records_the_check(feed_dir: Path) -> None:
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_text(V1_CSV)
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})
    assert feeds.poll(feed_id=feed.pk).status == "published"
    feed.refresh_from_db()
    checked = feed.last_checked_at

    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unchanged"
    assert PriceBook.objects.filter(team=team).count() == 1
    feed.refresh_from_db()
    assert feed.last_status == "unchanged"
    assert checked is not None and feed.last_checked_at is not None and feed.last_checked_at > checked
    assert outcome.book_id == feed.last_book_id


def test_malformed_content_is_refused_whole_and_the_book_stays(feed_dir: Path) -> None:
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_text(V1_CSV)
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})
    in_force = book_of(feeds.poll(feed_id=feed.pk))

    path.write_text(BAD_CSV)
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert outcome.errors[0].startswith("row 3 (line 4): value: must be a finite number")
    # Nothing of the file was published, not even its two valid rows.
    assert list(PriceBook.objects.filter(team=team)) == [in_force]
    feed.refresh_from_db()
    assert (feed.last_status, feed.last_book_id) == ("refused", in_force.pk)
    assert feed.last_error.startswith("row 3 (line 4): value: ")
    (event,) = failed_events(feed)
    assert event.team_id == team.pk
    assert event.payload["name"] == "f" and event.payload["source"] == str(path)
    assert event.payload["status"] == "refused"
    assert event.payload["errors"][0].startswith("row 3 (line 4): value: must be a finite number")

    # The same bad file polled again: still refused, no second event.
    assert feeds.poll(feed_id=feed.pk).status == "refused"
    assert len(failed_events(feed)) == 1
    # Unknown keys are refused by the same validation, with the closest known key.
    path.write_text("kind,key,value\naccelerator,h100-sxn,18000\n")
    assert feeds.poll(feed_id=feed.pk).errors == (
        "row 1 (line 2): key: unknown accelerator 'h100-sxn'; did you mean 'h100-sxm'?",
    )
    assert len(failed_events(feed)) == 2
    # Back to the published content: nothing to publish, the feed is healthy again.
    path.write_text(V1_CSV)
    assert feeds.poll(feed_id=feed.pk).status == "unchanged"
    assert PriceBook.objects.filter(team=team).count() == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("kind,key\naccelerator,h100-sxm\n", "csv: the CSV header must name the columns value"),
        (b"kind,key,value\naccelerator,h100-sxm,\xff\n", "not UTF-8 text"),
    ],
)
def test_content_that_is_not_a_price_file_is_refused(feed_dir: Path, body: str | bytes, message: str) -> None:
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})
    outcome = feeds.poll(feed_id=feed.pk)
    assert (outcome.status, outcome.errors[0][: len(message)]) == ("refused", message)
    assert not PriceBook.objects.exists()


def test_a_file_larger_than_the_limit_is_refused(feed_dir: Path, settings: Any) -> None:
    settings.PRICE_FEED_MAX_BYTES = 64
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_text(V1_CSV + "accelerator,a100-sxm-80gb,9000\n" * 5)
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert outcome.errors == ("the source is larger than 64 bytes",)
    assert not PriceBook.objects.exists()


def test_a_missing_file_is_unreachable(feed_dir: Path) -> None:
    team = make_team()
    later = team_dir(feed_dir, team) / "later.csv"
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(later), schedule={"every_s": 600})
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable"
    assert outcome.errors == (f"{later}: no such file",)


# --- the file-path rule -----------------------------------------------------------------------------


def test_file_paths_outside_price_feed_dirs_are_refused_at_creation(feed_dir: Path, tmp_path: Path) -> None:
    team = make_team()
    own = team_dir(feed_dir, team)
    outside = tmp_path / "secret.csv"
    outside.write_text(V1_CSV)
    (own / "link.csv").symlink_to(outside)
    (feed_dir / "shared.csv").write_text(V1_CSV)
    cases = {
        "/etc/passwd": "is not under the team's own directory",
        str(outside): "is not under the team's own directory",
        f"{own}/../../secret.csv": "is not under the team's own directory",
        str(own / "link.csv"): "is not under the team's own directory",
        str(own): "is not under the team's own directory",
        str(feed_dir): "is not under the team's own directory",
        str(feed_dir / "shared.csv"): f"reads only files under <dir>/{team.slug}/",
        "prices.csv": "must be an http(s) URL or an absolute file path",
        f"file://{feed_dir}/prices.csv": "not a file: URL",
        "ftp://127.0.0.1/prices.csv": "not a ftp: URL",
    }
    for source, reason in cases.items():
        with pytest.raises(ValidationError) as caught:
            feeds.feed_create(team=team, user=None, name="f", source=source, schedule={"every_s": 600})
        assert reason in caught.value.message_dict["source"][0], source
    os.mkfifo(own / "pipe.csv")
    with pytest.raises(ValidationError, match="is not a regular file"):
        feeds.feed_create(
            team=team, user=None, name="f", source=str(own / "pipe.csv"), schedule={"every_s": 600}
        )
    assert not PriceFeed.objects.exists()
    assert not PeriodicTask.objects.filter(task=feeds.POLL_TASK).exists()


def test_without_price_feed_dirs_no_file_path_is_accepted(tmp_path: Path, settings: Any) -> None:
    settings.PRICE_FEED_DIRS = []
    (tmp_path / "p.csv").write_text(V1_CSV)
    with pytest.raises(ValidationError, match="no directory is listed in PRICE_FEED_DIRS"):
        feeds.feed_create(
            team=make_team(), user=None, name="f", source=str(tmp_path / "p.csv"), schedule=None
        )


def test_the_path_rule_is_checked_again_at_every_read(feed_dir: Path, settings: Any) -> None:
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    path.write_text(V1_CSV)
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})
    settings.PRICE_FEED_DIRS = ["/nonexistent-feed-dir"]
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable"
    assert "is not under the team's own directory (/nonexistent-feed-dir/" in outcome.errors[0]
    assert not PriceBook.objects.exists()


ALPHA_SECRET_CSV = "kind,key,value,source\naccelerator,h100-sxm,17777,alpha's confidential quote\n"


def test_a_team_cannot_create_or_poll_a_feed_on_another_teams_file(feed_dir: Path) -> None:
    alpha, beta = make_team("alpha-feeds"), make_team("beta-feeds")
    secret = team_dir(feed_dir, alpha) / "prices.csv"
    secret.write_text(ALPHA_SECRET_CSV)
    (team_dir(feed_dir, beta) / "prices.csv").write_text(V1_CSV)
    # Not at creation, not through '..', not by an edit of beta's own feed.
    for source in (str(secret), f"{feed_dir}/beta-feeds/../alpha-feeds/prices.csv"):
        with pytest.raises(ValidationError) as caught:
            feeds.feed_create(team=beta, user=None, name="x", source=source, schedule={"every_s": 600})
        reason = caught.value.message_dict["source"][0]
        assert f"is not under the team's own directory ({feed_dir}/beta-feeds/)" in reason
        assert "reads only files under <dir>/beta-feeds/" in reason
    own = feeds.feed_create(
        team=beta, user=None, name="own", source=str(feed_dir / "beta-feeds/prices.csv"), schedule=None
    )
    with pytest.raises(ValidationError, match="is not under the team's own directory"):
        feeds.feed_update(feed=own, source=str(secret))
    # Alpha itself may read it; a global feed (the operator's) may read anywhere under PRICE_FEED_DIRS.
    feeds.feed_create(team=alpha, user=None, name="a", source=str(secret), schedule=None)
    feeds.feed_create(team=None, user=None, name="g", source=str(secret), schedule=None)

    # A feed on alpha's file that reached the database (registered before the rule) is refused at read.
    stale = PriceFeed.objects.create(team=beta, name="stale", source=str(secret))
    outcome = feeds.poll(feed_id=stale.pk, force=True)
    assert outcome.status == "unreachable"
    assert outcome.errors[0].startswith(f"refused: {secret} is not under the team's own directory")
    assert not PriceBook.objects.exists()
    (event,) = failed_events(stale)
    assert "17777" not in json.dumps(event.payload) and "confidential" not in json.dumps(event.payload)


def test_a_symbolic_link_swapped_in_after_creation_is_refused_at_read(feed_dir: Path) -> None:
    alpha, beta = make_team("alpha-feeds"), make_team("beta-feeds")
    secret = team_dir(feed_dir, alpha) / "prices.csv"
    secret.write_text(ALPHA_SECRET_CSV)
    path = team_dir(feed_dir, beta) / "prices.csv"
    path.write_text(V1_CSV)
    feed = feeds.feed_create(team=beta, user=None, name="f", source=str(path), schedule={"every_s": 600})
    assert feeds.poll(feed_id=feed.pk).status == "published"

    path.unlink()
    path.symlink_to(secret)
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable"
    assert outcome.errors[0].startswith(f"refused: {path} is not under the team's own directory")
    # beta's directory itself swapped for a link to alpha's: refused too (the real path is alpha's).
    beta_dir = feed_dir / "beta-feeds"
    beta_dir.rename(feed_dir / "beta-feeds.old")
    beta_dir.symlink_to(feed_dir / "alpha-feeds")
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable" and "is not under the team's own directory" in outcome.errors[0]
    # Only the first (beta's own) content was ever published; alpha's price never reached beta's book.
    (book,) = PriceBook.objects.filter(team=beta)
    assert prices(book)[("accelerator", "h100-sxm")] == 21000.0


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "fstat-fallback"])
def test_a_directory_swapped_between_the_check_and_the_open_is_refused(
    feed_dir: Path, monkeypatch: pytest.MonkeyPatch, proc: bool
) -> None:
    """The race the path check alone cannot close: a directory on the way becomes a link to another team's
    directory after ``allowed_path`` said yes and before the open (O_NOFOLLOW guards the last component
    only). The file opened is checked (its /proc/self/fd path, else its device and inode and the path's
    real path) before a byte is read."""
    alpha, beta = make_team("alpha-feeds"), make_team("beta-feeds")
    (team_dir(feed_dir, alpha) / "prices.csv").write_text(ALPHA_SECRET_CSV)
    sub = team_dir(feed_dir, beta) / "sub"
    sub.mkdir()
    (sub / "prices.csv").write_text(V1_CSV)
    feed = feeds.feed_create(
        team=beta, user=None, name="f", source=str(sub / "prices.csv"), schedule={"every_s": 600}
    )
    checked = feeds.allowed_path

    def check_then_swap(source: str, *, team: Any) -> Path:
        resolved = checked(source, team=team)
        sub.rename(sub.with_name("sub.old"))
        sub.symlink_to(feed_dir / "alpha-feeds")
        return resolved

    monkeypatch.setattr(feed_sources, "allowed_path", check_then_swap)
    if not proc:
        monkeypatch.setattr(feed_sources, "_opened_path", lambda fd: None)
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable"
    assert outcome.errors[0] == (
        f"refused: {sub / 'prices.csv'} changed while it was opened: the file opened is not under the "
        f"team's own directory ({feed_dir}/beta-feeds/)"
    )
    assert not PriceBook.objects.exists()


def test_a_global_feeds_failure_event_names_the_feed_and_its_status_only(
    feed_dir: Path, price_server: PriceServer
) -> None:
    """A global feed's event is seen by every team (and sent to every team's webhooks): no source, no error
    text. The operator reads both in the admin (``last_error``). A team feed's event keeps them."""
    path = feed_dir / "operator" / "list-prices.csv"
    path.parent.mkdir()
    path.write_text(BAD_CSV)
    refused = feeds.feed_create(team=None, user=None, name="list", source=str(path), schedule=None)
    assert feeds.poll(feed_id=refused.pk).status == "refused"
    secret_url = price_server.url("/operator-token-abc123/prices.csv")
    price_server.serve("/operator-token-abc123/prices.csv", "busy", status=503)
    down = feeds.feed_create(team=None, user=None, name="upstream", source=secret_url, schedule=None)
    assert feeds.poll(feed_id=down.pk).status == "unreachable"

    for feed, status in ((refused, "refused"), (down, "unreachable")):
        (event,) = failed_events(feed)
        assert event.team_id is None
        assert event.payload == {
            "feed": feed.pk,
            "name": feed.name,
            "status": status,
            "detail": "the global price feed failed; see the admin for details",
        }
        text = json.dumps(event.payload)
        assert str(path) not in text and "operator-token-abc123" not in text and "row 3" not in text
        feed.refresh_from_db()
        assert feed.last_error  # the details stay for the operator
    # A team feed's event carries its source and errors for that team.
    team = make_team()
    own = team_dir(feed_dir, team) / "prices.csv"
    own.write_text(BAD_CSV)
    team_feed = feeds.feed_create(team=team, user=None, name="t", source=str(own), schedule=None)
    feeds.poll(feed_id=team_feed.pk)
    (event,) = failed_events(team_feed)
    assert event.team_id == team.pk
    assert (event.payload["source"], event.payload["status"]) == (str(own), "refused")
    assert event.payload["errors"][0].startswith("row 3 (line 4): value: ")


# --- URL feeds --------------------------------------------------------------------------------------


def test_url_feed_changed_unchanged_and_malformed(price_server: PriceServer) -> None:
    team = make_team()
    price_server.serve(
        "/prices",
        json.dumps({"entries": [{"kind": "cloud", "key": "aws:h100-sxm", "value": 3.1}]}),
        content_type="application/json",
    )
    feed = feeds.feed_create(
        team=team,
        user=None,
        name="cloud",
        source=price_server.url("/prices"),
        mode="replace",
        schedule={"crontab": "30 2 * * *"},
    )
    v1 = book_of(feeds.poll(feed_id=feed.pk))  # JSON by its content type
    assert (v1.mode, prices(v1)) == ("replace", {("cloud", "aws:h100-sxm"): 3.1})
    assert v1.source.startswith(f"cloud: {price_server.url('/prices')}, retrieved 20")

    assert feeds.poll(feed_id=feed.pk).status == "unchanged"
    assert PriceBook.objects.count() == 1

    price_server.serve(
        "/prices",
        json.dumps([{"kind": "cloud", "key": "aws:h100-sxm", "value": 2.9}]),
        content_type="application/json",
    )
    v2 = book_of(feeds.poll(feed_id=feed.pk))
    assert (v2.version, prices(v2)) == (2, {("cloud", "aws:h100-sxm"): 2.9})

    price_server.serve(
        "/prices",
        json.dumps(
            [
                {"kind": "cloud", "key": "aws:h100-sxm", "value": 2.5},
                {"kind": "cloud", "key": "aws:a100-sxm-80gb", "value": -1},
            ]
        ),
        content_type="application/json",
    )
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert outcome.errors[0].startswith("row 2: value: must be from ")
    assert PriceBook.objects.count() == 2
    (event,) = failed_events(feed)
    assert event.payload["source"] == price_server.url("/prices")
    assert len(price_server.hits) == 4


def test_a_url_feed_whose_server_is_down_raises_one_event_per_distinct_failure(
    price_server: PriceServer,
) -> None:
    team = make_team()
    down = f"http://127.0.0.1:{closed_port()}/prices.csv"
    feed = feeds.feed_create(team=team, user=None, name="down", source=down, schedule={"every_s": 60})
    for _ in range(3):
        outcome = feeds.poll(feed_id=feed.pk)
        assert outcome.status == "unreachable"
        assert "could not read the URL (ConnectError" in outcome.errors[0]
    (event,) = failed_events(feed)
    assert (event.payload["status"], event.payload["feed"]) == ("unreachable", feed.pk)

    # Another failure (the server answers 503): a second event, once.
    price_server.serve("/prices.csv", "busy", status=503)
    feeds.feed_update(feed=feed, source=price_server.url("/prices.csv"))
    for _ in range(2):
        assert feeds.poll(feed_id=feed.pk).errors == ("the server answered HTTP 503",)
    assert len(failed_events(feed)) == 2

    # It recovers, then fails the same way again: a new outage, a new event.
    price_server.serve("/prices.csv", V1_CSV)
    assert feeds.poll(feed_id=feed.pk).status == "published"
    price_server.serve("/prices.csv", "busy", status=503)
    assert feeds.poll(feed_id=feed.pk).status == "unreachable"
    assert feeds.poll(feed_id=feed.pk).status == "unreachable"
    assert len(failed_events(feed)) == 3
    feed.refresh_from_db()
    assert (feed.last_status, feed.last_error) == ("unreachable", "the server answered HTTP 503")
    assert PriceBook.objects.filter(team=team).count() == 1


def test_a_redirect_is_not_followed(price_server: PriceServer) -> None:
    price_server.serve("/moved", "", status=302)
    feed = feeds.feed_create(
        team=make_team(), user=None, name="f", source=price_server.url("/moved"), schedule=None
    )
    assert feeds.poll(feed_id=feed.pk).errors == (
        "the server answered HTTP 302 (redirects are not followed)",
    )


def test_private_addresses_are_refused_at_creation_and_at_poll_time(
    settings: Any, price_server: PriceServer
) -> None:
    team = make_team()
    price_server.serve("/prices.csv", V1_CSV)
    settings.OUTBOUND_ALLOWED_HOSTS = []
    for url in (
        "http://10.0.0.7/prices.csv",
        "http://169.254.169.254/latest/meta-data/",
        price_server.url("/prices.csv"),
    ):
        with pytest.raises(ValidationError) as caught:
            feeds.feed_create(team=team, user=None, name="f", source=url, schedule={"every_s": 600})
        assert "such addresses are never requested" in caught.value.message_dict["source"][0]
    # Registered while allowed, refused at request time once it no longer is (the guard runs per request).
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    feed = feeds.feed_create(
        team=team, user=None, name="f", source=price_server.url("/prices.csv"), schedule=None
    )
    settings.OUTBOUND_ALLOWED_HOSTS = []
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "unreachable"
    assert outcome.errors[0].startswith(
        "refused: the host '127.0.0.1' resolves to 127.0.0.1, a loopback address"
    )
    assert price_server.hits == []


# --- schedules, global feeds, the command -----------------------------------------------------------


def test_the_schedule_is_a_beat_row_running_the_poll_with_the_feed_id(feed_dir: Path) -> None:
    team = make_team()
    path = team_dir(feed_dir, team) / "prices.csv"
    feed = feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 3600})
    task = PeriodicTask.objects.get(pk=feed.schedule_id)
    assert (task.task, json.loads(task.args), task.enabled) == ("scenarios.poll_price_feed", [feed.pk], True)
    assert (task.interval.every, task.interval.period, task.crontab) == (3600, "seconds", None)
    feeds.feed_update(feed=feed, schedule={"crontab": "30 2 * * 1-5"}, enabled=False)
    task.refresh_from_db()
    assert task.interval is None and task.enabled is False
    assert feeds.schedule_of(task) == {
        "every_s": None,
        "crontab": "30 2 * * 1-5",
        "timezone": "UTC",
        "periodic_task": task.pk,
    }
    # A disabled feed is not polled on schedule; a poll asked for by hand still reads it.
    assert feeds.poll(feed_id=feed.pk).status == "disabled"
    assert feeds.poll(feed_id=feed.pk, force=True).status == "unreachable"
    feeds.feed_delete(feed=feed)
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()


@pytest.mark.parametrize(
    ("schedule", "path", "message"),
    [
        ({"every_s": 10}, "schedule.every_s", "from 60"),
        ({"every_s": 60, "crontab": "* * * * *"}, "schedule", "exactly one"),
        ({"crontab": "61 * * * *"}, "schedule.crontab", "minute '61'"),
        ({"crontab": "* * *"}, "schedule.crontab", "five fields"),
        ({"hourly": True}, "schedule.hourly", "unknown field"),
    ],
)
def test_bad_schedules_are_refused_with_the_field(schedule: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        feeds.schedule_clean(schedule)
    assert message in caught.value.message_dict[path][0]


def test_a_poll_of_a_deleted_feed_removes_its_orphaned_schedule(feed_dir: Path) -> None:
    team = make_team()
    source = str(team_dir(feed_dir, team) / "p.csv")
    feed = feeds.feed_create(team=team, user=None, name="f", source=source, schedule={"every_s": 600})
    task_id = feed.schedule_id
    PriceFeed.objects.filter(pk=feed.pk)._raw_delete(PriceFeed.objects.db)  # behind the ORM's back
    assert PeriodicTask.objects.filter(pk=task_id).exists()
    assert feeds.poll(feed_id=feed.pk).status == "gone"
    assert not PeriodicTask.objects.filter(pk=task_id).exists()


def test_the_operator_adds_and_polls_a_global_feed(feed_dir: Path, capsys: Any) -> None:
    path = feed_dir / "global.json"
    path.write_text(
        json.dumps(
            {"name": "list prices", "entries": [{"kind": "electricity", "key": "quebec", "value": 0.05}]}
        )
    )
    call_command("price_feed", "add", "list prices", str(path), "--crontab", "0 3 * * *", "--mode", "replace")
    feed = PriceFeed.objects.get()
    assert (feed.team, feed.mode, (feeds.schedule_of(feed.schedule) or {})["crontab"]) == (
        None,
        "replace",
        "0 3 * * *",
    )
    assert "registered global price feed" in capsys.readouterr().out

    call_command("price_feed", "poll", str(feed.pk))
    book = PriceBook.objects.get()
    assert (book.team, book.name, book.mode, prices(book)) == (
        None,
        "list prices",
        "replace",
        {("electricity", "quebec"): 0.05},
    )
    assert capsys.readouterr().out.startswith("published (book")
    call_command("price_feed", "list")
    assert "\tglobal\tlist prices\t" in capsys.readouterr().out

    with pytest.raises(CommandError, match="is not under a directory of PRICE_FEED_DIRS"):
        call_command("price_feed", "add", "x", "/etc/passwd", "--every-s", "3600")
    with pytest.raises(CommandError, match="exists already"):
        call_command("price_feed", "add", "list prices", str(path), "--every-s", "3600")
    path.write_text("[]")
    with pytest.raises(CommandError, match="refused"):
        call_command("price_feed", "poll", str(feed.pk))


def test_the_admin_registers_a_global_feed_through_the_same_checks(feed_dir: Path, admin_client: Any) -> None:
    url = "/admin/scenarios/pricefeed/add/"
    form = {
        "name": "list",
        "format": "auto",
        "mode": "patch",
        "enabled": "on",
        "every_s": "3600",
        "crontab": "",
    }
    refused = admin_client.post(url, {**form, "source": "/etc/passwd"})
    assert refused.status_code == 200
    assert "is not under a directory of PRICE_FEED_DIRS" in refused.content.decode()
    no_schedule = admin_client.post(url, {**form, "source": str(feed_dir / "p.csv"), "every_s": ""})
    assert "give every_s or a crontab" in no_schedule.content.decode()
    assert not PriceFeed.objects.exists()

    created = admin_client.post(url, {**form, "source": str(feed_dir / "p.csv")})
    assert created.status_code == 302, created.content.decode()[:2000]
    feed = PriceFeed.objects.get()
    assert (feed.team_id, (feeds.schedule_of(feed.schedule) or {})["every_s"]) == (None, 3600)
    changed = admin_client.post(
        f"/admin/scenarios/pricefeed/{feed.pk}/change/",
        {**form, "source": feed.source, "every_s": "", "crontab": "0 4 * * *"},
    )
    assert changed.status_code == 302, changed.content.decode()[:2000]
    feed.refresh_from_db()
    assert (feeds.schedule_of(feed.schedule) or {})["crontab"] == "0 4 * * *"
    assert PeriodicTask.objects.filter(task=feeds.POLL_TASK).count() == 1
