"""Price files and feeds that no publish should take: refused naming the row or the field (a command error, or a
feed's refused poll with its failure event), never published wrongly and never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from scenarios import feeds
from scenarios.models import EVENT_PRICE_FEED_FAILED, Event, PriceBook
from tests.scenarios.factories import make_team

pytestmark = pytest.mark.django_db


def _team_feed(feed_dir: Path, name: str, body: str) -> Any:
    team = make_team()
    directory = feed_dir / team.slug
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(body)
    return feeds.feed_create(team=team, user=None, name="f", source=str(path), schedule={"every_s": 600})


# A CSV row with more cells than the header is refused: else the extra cells would be dropped unseen, and an unquoted
#   thousands separator (25,000) or a decimal comma (0,12) would publish 25 USD or 0 USD/kWh.
def test_csv_unquoted_thousands_separator_is_refused_not_truncated(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("kind,key,value\n\naccelerator,h100-sxm,25,000\nelectricity,quebec,0,12\n")
    with pytest.raises(CommandError, match="line 3 has more cells than the header names"):
        call_command("import_prices", str(path), "--fan-out", "none")
    assert not PriceBook.objects.exists(), [
        (e.kind, e.key, e.value) for e in PriceBook.objects.get().entries.all()
    ]


# A JSON entry whose kind is not a string (a list or an object): TypeError (unhashable) in
#   price_entries_validate, a traceback from the command and a crashed poll with no failure event.
def test_json_unhashable_kind_is_refused_by_import_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps([{"kind": ["accelerator"], "key": "h100-sxm", "value": 20000}]))
    with pytest.raises(CommandError, match=r"entries\[0\]\.kind"):
        call_command("import_prices", str(path), "--fan-out", "none")


def test_json_unhashable_kind_in_a_feed_is_refused_with_an_event(feed_dir: Path) -> None:
    feed = _team_feed(
        feed_dir, "prices.json", json.dumps([{"kind": {"a": 1}, "key": "h100-sxm", "value": 1}])
    )
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert Event.objects.filter(kind=EVENT_PRICE_FEED_FAILED).count() == 1


# A JSON integer beyond a double (1 followed by 400 zeros): OverflowError in math.isfinite.
def test_json_huge_integer_value_is_refused_by_import_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('[{"kind": "accelerator", "key": "h100-sxm", "value": 1' + "0" * 400 + "}]")
    with pytest.raises(CommandError, match=r"entries\[0\]\.value"):
        call_command("import_prices", str(path), "--fan-out", "none")


def test_json_huge_integer_value_in_a_feed_is_refused_with_an_event(feed_dir: Path) -> None:
    feed = _team_feed(
        feed_dir, "prices.json", '[{"kind": "accelerator", "key": "h100-sxm", "value": 1' + "0" * 400 + "}]"
    )
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert Event.objects.filter(kind=EVENT_PRICE_FEED_FAILED).count() == 1


# A JSON file's book name longer than PriceBook.name (200): refused before Postgres would refuse it.
def test_json_overlong_book_name_is_refused_by_import_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps({"name": "n" * 201, "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": 1}]})
    )
    with pytest.raises(CommandError, match="name"):
        call_command("import_prices", str(path), "--fan-out", "none")


def test_json_overlong_book_source_is_refused_by_import_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps({"source": "s" * 501, "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": 1}]})
    )
    with pytest.raises(CommandError, match="source"):
        call_command("import_prices", str(path), "--fan-out", "none")


def test_json_overlong_book_name_in_a_feed_is_refused_with_an_event(feed_dir: Path) -> None:
    feed = _team_feed(
        feed_dir,
        "prices.json",
        json.dumps({"name": "n" * 201, "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": 1}]}),
    )
    outcome = feeds.poll(feed_id=feed.pk)
    assert outcome.status == "refused"
    assert Event.objects.filter(kind=EVENT_PRICE_FEED_FAILED).count() == 1


# A CSV saved by a spreadsheet in Windows-1252 (a source naming "Hydro-Québec"): the command refuses it
#   naming the file, as the feed reading the same bytes refuses them ("not UTF-8 text").
def test_a_non_utf8_file_is_refused_by_import_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_bytes("kind,key,value,source\nelectricity,quebec,0.045,Hydro-Québec\n".encode("cp1252"))
    with pytest.raises(CommandError, match="UTF-8"):
        call_command("import_prices", str(path), "--fan-out", "none")
