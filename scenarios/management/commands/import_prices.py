"""``manage.py import_prices FILE.csv|FILE.json``: publish a price book from a file.

CSV: a header row with ``kind,key,value`` and optionally ``unit,source,effective_date``.
JSON: a list of entries, or ``{"name", "notes", "source", "entries": [...]}``.
Publishing is an event: plans whose resolved prices change are re-run (``--fan-out``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scenarios.fanout import price_book_fan_out
from scenarios.models import Team
from scenarios.services import price_book_publish

CSV_REQUIRED = ("kind", "key", "value")


def read_entries(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Entries and book-level fields (name, notes, source) from a CSV or JSON file."""
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8-sig")
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise CommandError(f"{path}: the CSV header must name the columns {', '.join(missing)}")
        entries = [{k: v for k, v in row.items() if k and v not in (None, "")} for row in reader]
        return entries, {}
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(data, list):
            return data, {}
        if isinstance(data, dict) and isinstance(data.get("entries"), list):
            meta = {k: data[k] for k in ("name", "notes", "source") if isinstance(data.get(k), str)}
            return data["entries"], meta
        raise CommandError(f"{path}: expected a list of entries or an object with an 'entries' list")
    raise CommandError(f"{path}: expected a .csv or .json file")


class Command(BaseCommand):
    help = "Publish a price book (global, or a team's override with --team) from a CSV or JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--team", help="slug of the team whose override book this is (default: global)")
        parser.add_argument("--name", help="book name (default: the file's 'name' or its file name)")
        parser.add_argument("--notes", default=None)
        parser.add_argument("--source", default=None, help="where the prices come from")
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
        entries, meta = read_entries(path)
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
                fan_out="none" if options["fan_out"] == "sync" else options["fan_out"],
            )
        except ValidationError as exc:
            lines = [f"  {field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items()]
            raise CommandError(f"{path}: the price book was not published:\n" + "\n".join(lines)) from None
        scope = f"team {team.slug}" if team else "global"
        self.stdout.write(
            f"published {scope} price book v{book.version} '{book.name}' with {len(entries)} prices"
        )
        if options["fan_out"] == "sync":
            outcome = price_book_fan_out(price_book_id=book.pk)
            self.stdout.write(
                f"checked {outcome.plans_checked} plans: {outcome.plans_changed} with changed prices, "
                f"{outcome.runs_created} re-runs queued in {outcome.messages} messages"
            )
