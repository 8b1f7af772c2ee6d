"""``manage.py price_feed add|list|poll``: the operator's price feeds (the global book's, or any team's).

``add NAME SOURCE --every-s 3600`` (or ``--crontab "30 2 * * *"``, UTC) registers a feed of the **global**
book (``--team SLUG`` for a team's) with its django-celery-beat schedule; ``list`` shows every feed and its
last poll; ``poll ID`` polls one now in this process and prints the outcome. SOURCE is an http(s) URL (the
SSRF guard applies) or a file path under a directory of ``settings.PRICE_FEED_DIRS`` (a team's feed: under
``<dir>/<team slug>/``); the format is the ``import_prices`` format. Teams register their own feeds through ``/api/v1/price-feeds/``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scenarios import feeds
from scenarios.models import PriceFeed, Team


def _errors(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "\n".join(f"  {field}: {'; '.join(msgs)}" for field, msgs in exc.message_dict.items())
    return "\n".join(f"  {message}" for message in exc.messages)


class Command(BaseCommand):
    help = "Register (add), list or poll price feeds; a feed without --team feeds the global price book."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="register a feed and its schedule")
        add.add_argument("name")
        add.add_argument(
            "source",
            help="an http(s) URL or a file path under a directory of PRICE_FEED_DIRS "
            "(with --team: under <dir>/<team slug>/)",
        )
        when = add.add_mutually_exclusive_group(required=True)
        when.add_argument("--every-s", type=int, help="poll every this many seconds")
        when.add_argument("--crontab", help="poll at 'minute hour day-of-month month day-of-week' (UTC)")
        add.add_argument("--team", help="slug of the team whose book the feed publishes (default: global)")
        add.add_argument("--format", choices=feeds.FORMATS, default="auto")
        add.add_argument("--mode", choices=feeds.MODES, default="patch")
        add.add_argument("--disabled", action="store_true", help="register it without polling it on schedule")
        sub.add_parser("list", help="every feed with its schedule and last poll")
        poll = sub.add_parser("poll", help="poll a feed now, in this process")
        poll.add_argument("feed_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _add(self, options: dict[str, Any]) -> None:
        team = None
        if options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"--team: no team with slug '{options['team']}'")
        schedule = (
            {"every_s": options["every_s"]}
            if options["every_s"] is not None
            else {"crontab": options["crontab"]}
        )
        try:
            feed = feeds.feed_create(
                team=team,
                user=None,
                name=options["name"],
                source=options["source"],
                format=options["format"],
                mode=options["mode"],
                schedule=schedule,
                enabled=not options["disabled"],
            )
        except ValidationError as exc:
            raise CommandError("the feed was not registered:\n" + _errors(exc)) from None
        scope = f"team {team.slug}" if team else "global"
        when = feeds.schedule_of(feed.schedule) or {}
        every = f"every {when['every_s']} s" if when.get("every_s") else f"at '{when.get('crontab')}' UTC"
        self.stdout.write(
            f"registered {scope} price feed {feed.pk} '{feed.name}' ({feed.mode}) from {feed.source}, "
            f"polled {every} (periodic task {feed.schedule_id})"
        )

    def _list(self, options: dict[str, Any]) -> None:
        for feed in PriceFeed.objects.select_related("team", "schedule__interval", "schedule__crontab"):
            scope = f"team {feed.team.slug}" if feed.team else "global"
            when = feeds.schedule_of(feed.schedule) or {}
            every = (
                f"every {when['every_s']} s"
                if when.get("every_s")
                else (f"at '{when['crontab']}'" if when.get("crontab") else "no schedule")
            )
            state = feed.last_status or "never polled"
            self.stdout.write(
                f"{feed.pk}\t{scope}\t{feed.name}\t{feed.source}\t{every}\t"
                f"{'enabled' if feed.enabled else 'disabled'}\t{state}"
            )

    def _poll(self, options: dict[str, Any]) -> None:
        if not PriceFeed.objects.filter(pk=options["feed_id"]).exists():
            raise CommandError(f"no price feed with id {options['feed_id']}")
        outcome = feeds.poll(feed_id=options["feed_id"], force=True)
        book = f" (book {outcome.book_id})" if outcome.book_id else ""
        self.stdout.write(f"{outcome.status}{book}")
        for line in outcome.errors:
            self.stdout.write(f"  {line}")
        if outcome.errors:
            raise CommandError(f"the feed was {outcome.status}")
