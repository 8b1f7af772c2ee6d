"""How price books price plans, and what the price-file commands do with odd files.

Each test states the documented rule it holds the code to: a node price over the catalog node's count, price
files refused with a message naming the field (never a traceback), entries named by row and line, and the
re-runs of a book published from the command line never lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from scenarios import pricing, services
from scenarios.models import PriceBook, PriceEntry, PriceFeed
from tests.scenarios.factories import make_plan, make_team

pytestmark = pytest.mark.django_db


def publish(team: Any, entries: list[dict[str, Any]], name: str = "book") -> PriceBook:
    return services.price_book_publish(team=team, user=None, name=name, entries=entries, fan_out="none")


# --- Node prices -------------------------------------------------------------------------------------


def test_a_node_price_is_divided_by_the_nodes_own_accelerators_not_the_plans_gpus_per_node() -> None:
    """docs/CONVENTIONS.md "Prices and sweeps": a node price (`node:<node>`) is "divided by the node's
    accelerators"; ``price_books.price_value_problem`` checks a node price at publish "divided by THAT
    node's gpus_per_node" so that "a book holding a price the solver refuses" cannot exist. A DGX H100 holds
    8 H100s whatever part of it a plan uses, yet a plan that states ``gpus_per_node: 4`` (a partial node, as
    the solver allows) is charged the node's price over 4: twice the per-GPU price, and at the publish limit
    (8e8 USD, accepted) a price the solver refuses, so every run of that plan fails after the publish said
    yes."""
    from solvers import catalog, solve

    assert catalog.NODES["dgx-h100"]["gpus_per_node"] == 8
    team = make_team()
    plan = make_plan(team=team, cluster_doc={"node": "dgx-h100", "gpus": 64, "gpus_per_node": 4})
    publish(None, [{"kind": "node", "key": "dgx-h100", "value": 400_000, "source": "DGX quote"}])
    used = services.plan_inputs(plan=plan).prices[pricing.PATH_ACCELERATOR_PRICE]
    assert used["key"] == "node:dgx-h100"
    assert used["value"] == 400_000 / 8, used  # divided by the catalog node's 8, not the plan's 4

    # The publish accepts the node's own limit (8 x the solver's 1e8 per accelerator) ...
    publish(None, [{"kind": "node", "key": "dgx-h100", "value": 8e8}])
    inputs = services.plan_inputs(plan=plan)
    assert inputs.prices[pricing.PATH_ACCELERATOR_PRICE]["value"] == 1e8
    # ... so a solve of the priced plan must not refuse it (it used to: "must be <= 100,000,000, got 200,000,000").
    solve(inputs.document)


# --- Price files: import_prices and price feeds -------------------------------------------------------

OVER_LONG_INTEGER = '[{"kind": "accelerator", "key": "h100-sxm", "value": 1' + "0" * 5000 + "}]"


def test_an_over_long_json_integer_is_refused_by_import_prices_and_by_a_feed_poll(
    tmp_path: Path, feed_dir: Path
) -> None:
    """README/CHANGELOG: price files "are refused, never published wrongly or a traceback"; a feed's
    "malformed content is refused whole (`last_error`...)" and raises `price_feed.failed`. A JSON integer of
    more than 4,300 digits makes ``json.loads`` raise ValueError (Python's int-string limit), which
    ``price_file_parse`` does not catch (only JSONDecodeError and RecursionError): ``import_prices`` dies
    with a traceback and a feed poll raises without recording its failure."""
    path = tmp_path / "prices.json"
    path.write_text(OVER_LONG_INTEGER)
    with pytest.raises(CommandError, match=r"prices\.json"):
        call_command("import_prices", str(path), "--fan-out", "none")
    assert not PriceBook.objects.exists()

    source = feed_dir / "prices.json"
    source.write_text(OVER_LONG_INTEGER)
    call_command("price_feed", "add", "global feed", str(source), "--every-s", "3600")
    feed = PriceFeed.objects.get()
    with pytest.raises(CommandError, match="refused"):
        call_command("price_feed", "poll", str(feed.pk))
    feed.refresh_from_db()
    assert feed.last_status == "refused" and feed.last_error
    assert not PriceBook.objects.exists()


@pytest.mark.parametrize(
    ("field", "text"),
    [
        (
            "entries[0].source",
            '[{"kind": "accelerator", "key": "h100-sxm", "value": 20000, "source": "quote\\u0000"}]',
        ),
        (
            "entries[0].source",
            '[{"kind": "accelerator", "key": "h100-sxm", "value": 20000, "source": "quote\\ud800"}]',
        ),
        (
            "name",
            '{"name": "Q4\\u0000", "entries": [{"kind": "accelerator", "key": "h100-sxm", "value": 1}]}',
        ),
    ],
    ids=["nul-in-entry-source", "lone-surrogate-in-entry-source", "nul-in-book-name"],
)
def test_import_prices_refuses_text_the_database_cannot_store_naming_the_field(
    tmp_path: Path, field: str, text: str
) -> None:
    """``import_prices``: unknown keys and bad values "are refused with the row's entry path" as a
    CommandError. A NUL character or a lone surrogate in an entry's source or in the book's name passes
    ``price_entries_validate`` / ``price_book_publish`` (only lengths are checked) and reaches PostgreSQL:
    a DataError / UnicodeEncodeError traceback instead of a message naming the field (the API refuses
    both; a feed poll with the same content dies without recording its failure)."""
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(CommandError) as err:
        call_command("import_prices", str(path), "--fan-out", "none")
    assert field in str(err.value)
    assert not PriceBook.objects.exists() and not PriceEntry.objects.exists()


def test_a_feeds_errors_name_an_entry_by_its_row_and_its_line(feed_dir: Path) -> None:
    """README, price feeds: `last_error` reads `row 3 (line 5): value: must be ...`, rows counting entries
    from 1 and the line counting the file's lines (the header is line 1). A row with more cells than the
    header is refused before any entry is read, naming its line."""
    source = feed_dir / "prices.csv"
    source.write_text("kind,key,value\naccelerator,h100-sxm,25000\naccelerator,b200,cheap\n")
    call_command("price_feed", "add", "global feed", str(source), "--every-s", "3600")
    feed = PriceFeed.objects.get()
    with pytest.raises(CommandError):
        call_command("price_feed", "poll", str(feed.pk))
    feed.refresh_from_db()
    assert feed.last_error.startswith("row 2 (line 3): value: ")  # the second entry, on the third line

    source.write_text("kind,key,value\naccelerator,h100-sxm,25000\naccelerator,b200,35,000\n")
    with pytest.raises(CommandError):
        call_command("price_feed", "poll", str(feed.pk))
    feed.refresh_from_db()
    assert "line 3 has more cells than the header names" in feed.last_error, feed.last_error


def test_import_prices_default_sync_fan_out_writes_the_fan_out_row_in_the_books_transaction(
    tmp_path: Path, sent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: "Every piece of work is a database row before it is a message (... a published price book's
    `PriceFanOut`, written in the book's transaction)" so that re-runs are delayed, never lost. The
    command's default ``--fan-out sync`` publishes with ``fan_out="none"`` (no ``PriceFanOut``) and only then
    runs the fan-out in-process: if that process dies or loses the database after the publish committed
    (simulated here), the book is in force, its plans' prices moved, and nothing will ever re-run them (the
    sweeper has no row to send again)."""
    from django.db import OperationalError

    from scenarios.management.commands import import_prices as command
    from scenarios.models import PriceFanOut

    make_plan(team=make_team())
    path = tmp_path / "prices.csv"
    path.write_text("kind,key,value\naccelerator,h100-sxm,21000\n")

    def connection_lost(*, price_book_id: int, **_: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(command, "price_book_fan_out", connection_lost)
    with pytest.raises(OperationalError):
        call_command("import_prices", str(path))
    book = PriceBook.objects.get()
    assert PriceFanOut.objects.filter(pk=book.pk).exists(), "the published book's re-runs are lost"
