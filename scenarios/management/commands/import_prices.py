"""``manage.py import_prices FILE.csv|FILE.json``: publish a price book from a file.

CSV: a header row with ``kind,key,value`` and optionally ``unit,source,effective_date,remove``.
JSON: a list of entries, or ``{"name", "notes", "source", "mode", "entries": [...]}``.

The semantics and checks are the API's (``price_book_publish``): ``--mode patch`` (the default) applies the
file on top of the previous version of the book (a row with ``remove`` true deletes its key, every key the
file does not list is kept); ``--mode replace`` makes the file the whole book. Unknown keys and prices
outside the solver's limits are refused with the row's entry path. The command prints what changed against
the previous version and how many plans re-run.
Publishing is an event: plans whose resolved prices change are re-run (``--fan-out``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scenarios.fanout import price_book_fan_out
from scenarios.feeds import PriceFileError, price_file_parse
from scenarios.models import PRICE_FEED_FORMAT_CSV, PRICE_FEED_FORMAT_JSON, PRICE_MODE_CHOICES, Team
from scenarios.price_files import PriceFile, entry_error_lines
from scenarios.services import PriceBookSummary, price_book_publish, price_book_summary

MODES = tuple(value for value, _ in PRICE_MODE_CHOICES)
FORMAT_BY_SUFFIX = {".csv": PRICE_FEED_FORMAT_CSV, ".json": PRICE_FEED_FORMAT_JSON}


def read_entries(path: Path) -> PriceFile:
    """Entries, book-level fields (name, notes, source) and CSV lines of a CSV or JSON file (the format is
    ``scenarios.feeds.price_file_parse``'s, which price feeds read too)."""
    fmt = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    if fmt is None:
        raise CommandError(f"{path}: expected a .csv or .json file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return price_file_parse(text, fmt)
    except PriceFileError as exc:
        raise CommandError(f"{path}: {exc}") from None


class Command(BaseCommand):
    help = "Publish a price book (global, or a team's override with --team) from a CSV or JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--team", help="slug of the team whose override book this is (default: global)")
        parser.add_argument("--name", help="book name (default: the file's 'name' or its file name)")
        parser.add_argument("--notes", default=None)
        parser.add_argument("--source", default=None, help="where the prices come from")
        parser.add_argument(
            "--mode",
            choices=MODES,
            default=None,
            help="patch (default; or the JSON file's 'mode'): apply the file on top of the previous version, "
            "keeping the keys it does not list; replace: the file is the whole book",
        )
        parser.add_argument(
            "--fan-out",
            choices=("async", "sync", "none"),
            default="sync",
            help="re-run affected plans: sync (queue the runs now, default), async (via a worker), none",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.exists():
            raise CommandError(f"{path}: no such file")
        entries, meta, lines = read_entries(path)
        team = None
        if options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"--team: no team with slug '{options['team']}'")
        try:
            book = price_book_publish(
                team=team,
                user=None,
                name=options["name"] or meta.get("name") or path.stem,
                entries=entries,
                notes=options["notes"] if options["notes"] is not None else meta.get("notes", ""),
                source=options["source"] if options["source"] is not None else meta.get("source", path.name),
                mode=options["mode"] or meta.get("mode") or "patch",
                # sync: the fan-out row is written with the book, and run below, where its outcome is printed
                fan_out="caller" if options["fan_out"] == "sync" else options["fan_out"],
            )
        except ValidationError as exc:
            refusal = entry_error_lines(exc.message_dict, lines, rows=False)
            raise CommandError(
                f"{path}: the price book was not published:\n" + "\n".join(f"  {line}" for line in refusal)
            ) from None
        scope = f"team {team.slug}" if team else "global"
        based_on = f" on v{book.based_on.version}" if book.based_on is not None else ""
        self.stdout.write(
            f"published {scope} price book v{book.version} '{book.name}' ({book.mode}{based_on}) "
            f"from {len(entries)} entries"
        )
        if options["fan_out"] == "sync":
            outcome = price_book_fan_out(price_book_id=book.pk)
            self._write_summary(price_book_summary(book=book, plans_to_rerun=outcome.plans_changed))
            self.stdout.write(
                f"checked {outcome.plans_checked} plans: {outcome.plans_changed} with changed prices, "
                f"{outcome.runs_created} re-runs queued in {outcome.messages} messages"
            )
        else:
            self._write_summary(price_book_summary(book=book))

    def _write_summary(self, summary: PriceBookSummary) -> None:
        """What the version changed against the previous one, line by line, so nothing changes unseen."""
        changes = summary.changes
        self.stdout.write(
            f"changes: {len(changes.added)} added, {len(changes.changed)} changed, "
            f"{len(changes.removed)} removed, {changes.unchanged} unchanged; "
            f"{summary.plans_to_rerun} plans to re-run"
        )
        for item in changes.added:
            self.stdout.write(f"  + {item['kind']} {item['key']}: {item['value']:g}")
        for item in changes.changed:
            self.stdout.write(f"  ~ {item['kind']} {item['key']}: {item['before']:g} -> {item['after']:g}")
        for item in changes.removed:
            self.stdout.write(f"  - {item['kind']} {item['key']} (was {item['value']:g})")
