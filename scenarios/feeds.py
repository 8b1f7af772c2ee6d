"""Price feeds: a price file polled on a schedule publishes the next version of a price book when it changes.

A feed (``PriceFeed``) names a **source**, an http(s) URL or a file path, and a **schedule**, the
django-celery-beat row (``PeriodicTask``) that runs ``scenarios.poll_price_feed`` with the feed's id. A poll
(``poll``):

* reads the source: a URL through ``scenarios.outbound`` (the SSRF guard, checked again at every request,
  no redirects, at most ``PRICE_FEED_MAX_BYTES`` (5 MB) in ``PRICE_FEED_TIMEOUT_S`` (30 s)); a file path of a
  team's feed only under ``<dir>/<team slug>/`` for a directory ``<dir>`` of ``settings.PRICE_FEED_DIRS``, a
  global feed's (the operator's) anywhere under those directories (checked again at every read, symbolic
  links resolved, and the file opened checked again before it is read), so that a team cannot make the
  service read arbitrary files, nor another team's price file;
* hashes it (sha256): content equal to the content the book in force came from publishes nothing
  (``unchanged``);
* parses it with the ``import_prices`` format (``price_file_parse``: CSV ``kind,key,value[,unit,source,
  effective_date,remove]`` or JSON) and publishes it through ``price_book_publish`` with the feed's mode, the
  same validation as the API and the command; the book's ``source`` names the feed, its source and the
  retrieval time, and the publish re-runs affected plans by the normal fan-out (``published``);
* refuses malformed content whole (``refused``: nothing is published, the book in force stays, the error names
  the row and the field: ``row 3: value: must be a finite number ...``), and records an unreadable source
  (``unreachable``: connection error, non-2xx answer, a host or path the guards refuse) with the reason.

Both failures raise a ``price_feed.failed`` event, once per distinct failure (its content, or its error) since
the feed's last success: a source that stays down raises one event, not one per poll. A global feed's event is
seen by every team, so it names the feed and its status only (``failed_payload``).
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditlog.context import disable_auditlog
from auditlog.diff import model_instance_diff
from auditlog.models import LogEntry
from auditlog.registry import auditlog
from celery.schedules import crontab as celery_crontab
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from scenarios import events
from scenarios.feed_sources import Fetched as Fetched
from scenarios.feed_sources import TooLarge as TooLarge
from scenarios.feed_sources import Unreachable as Unreachable
from scenarios.feed_sources import allowed_path as allowed_path
from scenarios.feed_sources import check_source as check_source
from scenarios.feed_sources import read_source as read_source
from scenarios.models import (
    EVENT_PRICE_FEED_FAILED,
    PRICE_FEED_FORMAT_AUTO,
    PRICE_FEED_FORMAT_CHOICES,
    PRICE_FEED_PUBLISHED,
    PRICE_FEED_REFUSED,
    PRICE_FEED_UNCHANGED,
    PRICE_FEED_UNREACHABLE,
    PRICE_MODE_CHOICES,
    PRICE_MODE_PATCH,
    PriceFeed,
    Team,
)
from scenarios.price_files import CSV_BOOLEANS as CSV_BOOLEANS
from scenarios.price_files import CSV_REQUIRED as CSV_REQUIRED
from scenarios.price_files import PriceFileError as PriceFileError
from scenarios.price_files import detect_format as detect_format
from scenarios.price_files import entry_error_lines
from scenarios.price_files import price_file_parse as price_file_parse

POLL_TASK = "scenarios.poll_price_feed"
MIN_EVERY_S = 60
MAX_EVERY_S = 366 * 86_400
FORMATS = tuple(value for value, _ in PRICE_FEED_FORMAT_CHOICES)
MODES = tuple(value for value, _ in PRICE_MODE_CHOICES)
# Errors kept in an event's payload and in ``last_error`` (a file of 10,000 bad rows says so in a few lines).
MAX_ERRORS_KEPT = 50
BOOK_SOURCE_MAX = 500  # PriceBook.source

# --- Polling --------------------------------------------------------------------------------------------


def row_errors(exc: ValidationError, lines: tuple[int, ...] | None = None) -> list[str]:
    """A publish's refusal as lines naming the row (1 = the first entry), its line for a CSV, and the field:
    ``entries[2].value: must be ...`` becomes ``row 3 (line 5): value: must be ...``."""
    if not hasattr(exc, "error_dict"):
        return [str(message) for message in exc.messages]
    return entry_error_lines(exc.message_dict, lines, rows=True)


@dataclass(frozen=True)
class PollOutcome:
    """What one poll did: ``status`` (unchanged, published, refused, unreachable; or ``disabled``/``gone``
    when nothing was read), the book it published, the errors of a failure."""

    status: str  # or "disabled", "gone", "superseded" when nothing was recorded
    book_id: int | None = None
    errors: tuple[str, ...] = ()


def _book_source(feed: PriceFeed, retrieved_at: dt.datetime) -> str:
    """'<feed name>: <url or path>, retrieved <ISO time>', shortened in the middle of the source to fit.

    A global feed's book is read by every team: its source names the feed only ('<feed name>, retrieved
    <ISO time>'), since the operator's URL or path (and any key in its query) is not theirs to read, as
    ``failed_payload`` keeps it out of a failure's event."""
    when = f", retrieved {retrieved_at.isoformat(timespec='seconds')}"
    if feed.team_id is None:
        return f"{feed.name}{when}"[:BOOK_SOURCE_MAX]
    text = f"{feed.name}: {feed.source}{when}"
    if len(text) <= BOOK_SOURCE_MAX:
        return text
    room = max(BOOK_SOURCE_MAX - len(when) - len(feed.name) - 3, 20)
    source = feed.source[: room // 2] + "…" + feed.source[-(room - room // 2 - 1) :]
    return f"{feed.name}: {source}{when}"[:BOOK_SOURCE_MAX]


def _delete_orphan_schedules(feed_id: int) -> int:
    """Beat rows still polling a feed that no longer exists (deleted behind the ORM's back)."""
    orphans = list(
        PeriodicTask.objects.filter(task=POLL_TASK, args__in=[json.dumps([feed_id]), f"[{feed_id}]"])
    )
    for task in orphans:
        task.delete()
    return len(orphans)


def poll(*, feed_id: int, force: bool = False) -> PollOutcome:
    """Read the feed's source once and publish it when it changed (see the module docstring).

    ``force`` polls a disabled feed (a poll asked for by hand). The read happens outside any transaction;
    the comparison, the publish and the recorded state happen in one, with the feed's row locked, so two
    polls at once publish at most one version."""
    feed = PriceFeed.objects.filter(pk=feed_id).first()
    if feed is None:
        _delete_orphan_schedules(feed_id)
        return PollOutcome(status="gone")
    if not feed.enabled and not force:
        return PollOutcome(status="disabled")
    source = feed.source
    retrieved_at = timezone.now()
    try:
        fetched = read_source(source, team=feed.team)
    except Unreachable as exc:
        return _record_failure(feed_id, PRICE_FEED_UNREACHABLE, [str(exc)], state=f"unreachable:{exc}")
    except TooLarge as exc:
        return _record_failure(feed_id, PRICE_FEED_REFUSED, [str(exc)], state=f"too-large:{exc}")
    digest = hashlib.sha256(fetched.body).hexdigest()
    with transaction.atomic():
        feed = PriceFeed.objects.select_for_update().get(pk=feed_id)
        if feed.source != source:  # edited while this poll read the old source: the next poll reads the new
            return PollOutcome(status="superseded")
        if digest == feed.last_hash:
            _save_state(feed, status=PRICE_FEED_UNCHANGED, success=True)
            return PollOutcome(status=PRICE_FEED_UNCHANGED, book_id=feed.last_book_id)
        try:
            book = _publish(feed, fetched, retrieved_at)
        except _Refused as exc:
            errors = exc.errors
        else:
            feed.last_hash, feed.last_book = digest, book
            _save_state(feed, status=PRICE_FEED_PUBLISHED, success=True)
            return PollOutcome(status=PRICE_FEED_PUBLISHED, book_id=book.pk)
        return _fail(feed, PRICE_FEED_REFUSED, errors, state=f"refused:{digest}")


class _Refused(Exception):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def _publish(feed: PriceFeed, fetched: Fetched, retrieved_at: dt.datetime) -> Any:
    from scenarios.services import price_book_publish

    try:
        text = fetched.body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Refused([f"not UTF-8 text (byte {exc.start})"]) from None
    fmt = detect_format(feed.format, source=feed.source, content_type=fetched.content_type, text=text)
    try:
        entries, meta, lines = price_file_parse(text, fmt)
    except PriceFileError as exc:
        raise _Refused([f"{fmt}: {exc}"]) from None
    try:
        return price_book_publish(
            team=feed.team,
            user=None,
            name=meta.get("name") or feed.name,
            entries=entries,
            notes=meta.get("notes") or f"published by the price feed {feed.name!r}",
            source=_book_source(feed, retrieved_at),
            mode=feed.mode,
            fan_out="async",
        )
    except ValidationError as exc:
        raise _Refused(row_errors(exc, lines)) from None


def _save_state(feed: PriceFeed, *, status: str, success: bool, error: str = "") -> None:
    now = timezone.now()
    feed.last_checked_at, feed.last_status, feed.last_error = now, status, error
    fields = ["last_checked_at", "last_status", "last_error", "last_hash", "last_book"]
    if success:
        feed.last_success_at = now
        fields.append("last_success_at")
    feed.save(update_fields=fields)


def _record_failure(feed_id: int, status: str, errors: list[str], *, state: str) -> PollOutcome:
    with transaction.atomic():
        feed = PriceFeed.objects.select_for_update().filter(pk=feed_id).first()
        if feed is None:
            return PollOutcome(status="gone")
        return _fail(feed, status, errors, state=state)


GLOBAL_FAILURE_DETAIL = "the global price feed failed; see the admin for details"


def failed_payload(feed: PriceFeed, status: str, errors: list[str]) -> dict[str, Any]:
    """The payload of a ``price_feed.failed`` event. A team's feed: its source, status, errors and the book in
    force, for that team only. A global feed's event (``team`` None) is seen by every team and sent to every
    team's webhooks, so it carries the feed's id, name and status only: its source (the operator's URL or
    path) and its errors (which quote the source and its content) stay in the admin (``last_error``)."""
    if feed.team_id is None:
        return {"feed": feed.pk, "name": feed.name, "status": status, "detail": GLOBAL_FAILURE_DETAIL}
    return {
        "feed": feed.pk,
        "name": feed.name,
        "source": feed.source,
        "status": status,
        "errors": errors,
        "book_in_force": feed.last_book_id,
    }


def _fail(feed: PriceFeed, status: str, errors: list[str], *, state: str) -> PollOutcome:
    """Record a failed poll on the (locked) feed and raise ``price_feed.failed`` once per distinct failure
    (``state``: the refused content's hash, or the unreachable reason) since the feed's last success."""
    kept = errors[:MAX_ERRORS_KEPT]
    if len(errors) > len(kept):
        kept.append(f"... and {len(errors) - len(kept)} more errors")
    _save_state(feed, status=status, success=False, error="\n".join(kept))
    since = int(feed.last_success_at.timestamp() * 1_000_000) if feed.last_success_at else 0
    state_hash = hashlib.sha256(state.encode()).hexdigest()[:32]
    events.record(
        [
            events.event(
                kind=EVENT_PRICE_FEED_FAILED,
                team_id=feed.team_id,
                payload=failed_payload(feed, status, kept),
                dedupe_key=f"{EVENT_PRICE_FEED_FAILED}:{feed.pk}:{since}:{state_hash}",
            )
        ]
    )
    return PollOutcome(status=status, errors=tuple(errors))


def enqueue_poll(*, feed_id: int) -> None:
    """Queue a poll now (``force``: a disabled feed is polled too); raises when the broker is unreachable."""
    from scenarios import queue

    queue.send_kwargs(POLL_TASK, [feed_id], {"force": True})


# --- Schedules (django-celery-beat rows) ----------------------------------------------------------------

CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
_PERIOD_SECONDS = {"days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}


@dataclass(frozen=True)
class Schedule:
    """Every ``every_s`` seconds, or at a five-field crontab (minute hour day-of-month month day-of-week, UTC)."""

    every_s: int | None = None
    crontab: str | None = None


def schedule_clean(raw: Any) -> Schedule:
    """``{"every_s": 3600}`` or ``{"crontab": "30 2 * * *"}``; raises ``ValidationError`` naming the field."""
    if isinstance(raw, Schedule):
        raw = {"every_s": raw.every_s, "crontab": raw.crontab}
    if not isinstance(raw, Mapping):
        raise ValidationError(
            {"schedule": ['must be {"every_s": seconds} or {"crontab": "m h dom mon dow"}']}
        )
    unknown = sorted(str(k) for k in raw if k not in ("every_s", "crontab"))
    if unknown:
        raise ValidationError({f"schedule.{unknown[0]}": ["unknown field; every_s or crontab"]})
    every_s, spec = raw.get("every_s"), raw.get("crontab")
    if (every_s is None) == (spec is None):
        raise ValidationError({"schedule": ["give exactly one of every_s and crontab"]})
    if every_s is not None:
        if (
            isinstance(every_s, bool)
            or not isinstance(every_s, int)
            or not MIN_EVERY_S <= every_s <= MAX_EVERY_S
        ):
            raise ValidationError(
                {
                    "schedule.every_s": [
                        f"must be a whole number of seconds from {MIN_EVERY_S} to {MAX_EVERY_S:,}"
                    ]
                }
            )
        return Schedule(every_s=every_s)
    if not isinstance(spec, str):
        raise ValidationError({"schedule.crontab": ["must be a string of five fields"]})
    fields = spec.split()
    if len(fields) != len(CRONTAB_FIELDS):
        raise ValidationError(
            {"schedule.crontab": ["must have five fields: minute hour day-of-month month day-of-week (UTC)"]}
        )
    for name, value in zip(CRONTAB_FIELDS, fields, strict=True):
        if len(value) > CrontabSchedule._meta.get_field(name).max_length:
            raise ValidationError({"schedule.crontab": [f"{name}: too long"]})
        try:
            celery_crontab(**{name: value})
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise ValidationError({"schedule.crontab": [f"{name} {value!r}: {exc or 'not valid'}"]}) from None
    return Schedule(crontab=" ".join(fields))


def schedule_of(task: PeriodicTask | None) -> dict[str, Any] | None:
    """The schedule of a feed's beat row as the API shows it (it may have been edited in the admin)."""
    if task is None:
        return None
    out: dict[str, Any] = {"every_s": None, "crontab": None, "timezone": None, "periodic_task": task.pk}
    if task.interval is not None:
        out["every_s"] = max(1, round(task.interval.every * _PERIOD_SECONDS.get(task.interval.period, 1)))
    elif task.crontab is not None:
        c = task.crontab
        out["crontab"] = " ".join((c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week))
        out["timezone"] = str(c.timezone)
    return out


def _schedule_row(schedule: Schedule) -> dict[str, Any]:
    if schedule.every_s is not None:
        interval = IntervalSchedule.objects.filter(
            every=schedule.every_s, period=IntervalSchedule.SECONDS
        ).first()
        interval = interval or IntervalSchedule.objects.create(
            every=schedule.every_s, period=IntervalSchedule.SECONDS
        )
        return {"interval": interval, "crontab": None}
    assert schedule.crontab is not None
    spec = dict(zip(CRONTAB_FIELDS, schedule.crontab.split(), strict=True))
    row = CrontabSchedule.objects.filter(**spec, timezone="UTC").first()
    return {"interval": None, "crontab": row or CrontabSchedule.objects.create(**spec, timezone="UTC")}


def _sync_schedule(feed: PriceFeed, schedule: Schedule | None) -> None:
    """Create or update the feed's beat row: its task, its argument (the feed id), its name, whether it is
    enabled and, when ``schedule`` is given, its interval or crontab (``PeriodicTask.save`` tells beat)."""
    task = feed.schedule
    if task is None and schedule is None:
        return
    if task is None:
        task = PeriodicTask(task=POLL_TASK)
    task.name = f"price feed {feed.pk}: {feed.name}"[:200]
    task.task = POLL_TASK
    task.args = json.dumps([feed.pk])
    task.kwargs = "{}"
    task.enabled = feed.enabled
    task.description = (
        f"Poll the price feed {feed.name!r} ({'global' if feed.team_id is None else f'team {feed.team_id}'}) "
        "and publish its prices when they changed (scenarios.feeds)."
    )
    if schedule is not None:
        rows = _schedule_row(schedule)
        task.interval, task.crontab = rows["interval"], rows["crontab"]
        task.solar = task.clocked = None
    task.save()
    if feed.schedule_id != task.pk:
        feed.schedule = task
        feed.save(update_fields=["schedule"])


def schedule_label(task: PeriodicTask | None) -> str | None:
    """A feed's schedule as one line of the audit log: ``every_s=3600``, ``crontab=30 2 * * * UTC``, or
    ``solar``/``clocked`` for a beat row edited in the admin to a kind the API does not set."""
    if task is None:
        return None
    shown = schedule_of(task)
    assert shown is not None
    if shown["every_s"] is not None:
        return f"every_s={shown['every_s']}"
    if shown["crontab"] is not None:
        return f"crontab={shown['crontab']} {shown['timezone']}"
    return "solar" if task.solar_id is not None else "clocked"


def _log_feed_change(
    before: PriceFeed | None, after: PriceFeed, schedules: tuple[str | None, str | None]
) -> None:
    """One audit entry for a feed's creation or change, its schedule included.

    The schedule lives in a django-celery-beat row the feed points to, which django-auditlog's diff of the feed
    cannot see (and the pointer is set after the feed is made), so the feed's own signals are silenced while it
    is written (``disable_auditlog``) and this entry is written instead: the registered fields' diff, plus
    ``schedule`` when its label moved. The actor and the token are the request's, as for any entry."""
    if not auditlog.contains(PriceFeed):
        return
    changes = (
        model_instance_diff(before, after, use_json_for_changes=settings.AUDITLOG_STORE_JSON_CHANGES) or {}
    )
    if schedules[0] != schedules[1]:
        changes["schedule"] = list(schedules)
    if before is not None and not changes:
        return
    action = LogEntry.Action.CREATE if before is None else LogEntry.Action.UPDATE
    LogEntry.objects.log_create(after, action=action, changes=changes)


# --- Feeds ----------------------------------------------------------------------------------------------


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValidationError({name: [f"must be one of {', '.join(choices)}"]})
    return str(value)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 200:
        raise ValidationError({"name": ["must be a non-empty string of at most 200 characters"]})
    return name.strip()


def feed_create(
    *,
    team: Team | None,
    user: Any,
    name: str,
    source: str,
    format: str = PRICE_FEED_FORMAT_AUTO,
    mode: str = PRICE_MODE_PATCH,
    schedule: Schedule | Mapping[str, Any] | None = None,
    enabled: bool = True,
) -> PriceFeed:
    """Register a feed (``team`` None: a global feed, for the operator only) and its beat schedule."""
    name = _check_name(name)
    source = check_source(source, team=team)
    format = _check_choice("format", format, FORMATS)
    mode = _check_choice("mode", mode, MODES)
    clean = schedule_clean(schedule) if schedule is not None else None
    created_by = user if getattr(user, "is_authenticated", False) else None
    try:
        with transaction.atomic(), disable_auditlog():
            feed = PriceFeed.objects.create(
                team=team,
                name=name,
                source=source,
                format=format,
                mode=mode,
                enabled=bool(enabled),
                created_by=created_by,
            )
            _sync_schedule(feed, clean)
            _log_feed_change(None, feed, (None, schedule_label(feed.schedule)))
    except IntegrityError:
        raise ValidationError({"name": [f"a feed named {name!r} exists already"]}) from None
    return feed


FEED_FIELDS = ("name", "source", "format", "mode", "enabled", "schedule")


def feed_update(*, feed: PriceFeed, **changes: Any) -> PriceFeed:
    """Change a feed's ``name``, ``source``, ``format``, ``mode``, ``enabled`` or ``schedule`` (its beat row
    follows). A new source, format or mode forgets the last content hash: the next poll publishes."""
    unknown = sorted(set(changes) - set(FEED_FIELDS))
    if unknown:
        raise ValidationError({unknown[0]: ["cannot be changed"]})
    clean: dict[str, Any] = {}
    if "name" in changes:
        clean["name"] = _check_name(changes["name"])
    if "source" in changes:
        clean["source"] = check_source(changes["source"], team=feed.team)
    if "format" in changes:
        clean["format"] = _check_choice("format", changes["format"], FORMATS)
    if "mode" in changes:
        clean["mode"] = _check_choice("mode", changes["mode"], MODES)
    if "enabled" in changes:
        clean["enabled"] = bool(changes["enabled"])
    schedule = schedule_clean(changes["schedule"]) if changes.get("schedule") is not None else None
    try:
        with transaction.atomic(), disable_auditlog():
            locked = (
                PriceFeed.objects.select_for_update(of=("self",)).select_related("schedule").get(pk=feed.pk)
            )
            before, schedule_before = copy.copy(locked), schedule_label(locked.schedule)
            if any(k in clean and clean[k] != getattr(locked, k) for k in ("source", "format", "mode")):
                locked.last_hash = ""
            for key, value in clean.items():
                setattr(locked, key, value)
            locked.updated_at = timezone.now()
            locked.save()
            _sync_schedule(locked, schedule)
            _log_feed_change(before, locked, (schedule_before, schedule_label(locked.schedule)))
    except IntegrityError:
        raise ValidationError({"name": [f"a feed named {clean.get('name')!r} exists already"]}) from None
    return locked


def feed_delete(*, feed: PriceFeed) -> None:
    """Delete a feed and its beat row (the books it published stay)."""
    feed.delete()
