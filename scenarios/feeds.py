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

import csv
import datetime as dt
import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import httpx
from celery.schedules import crontab as celery_crontab
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from scenarios import events, outbound
from scenarios.models import (
    EVENT_PRICE_FEED_FAILED,
    PRICE_FEED_FORMAT_AUTO,
    PRICE_FEED_FORMAT_CHOICES,
    PRICE_FEED_FORMAT_CSV,
    PRICE_FEED_FORMAT_JSON,
    PRICE_FEED_PUBLISHED,
    PRICE_FEED_REFUSED,
    PRICE_FEED_UNCHANGED,
    PRICE_FEED_UNREACHABLE,
    PRICE_MODE_CHOICES,
    PRICE_MODE_PATCH,
    PriceFeed,
    Team,
)

POLL_TASK = "scenarios.poll_price_feed"
MIN_EVERY_S = 60
MAX_EVERY_S = 366 * 86_400
FORMATS = tuple(value for value, _ in PRICE_FEED_FORMAT_CHOICES)
MODES = tuple(value for value, _ in PRICE_MODE_CHOICES)
# Errors kept in an event's payload and in ``last_error`` (a file of 10,000 bad rows says so in a few lines).
MAX_ERRORS_KEPT = 50
BOOK_SOURCE_MAX = 500  # PriceBook.source

# --- The import format (shared with ``manage.py import_prices``) ----------------------------------------

CSV_REQUIRED = ("kind", "key", "value")
# A CSV cell is text: these spellings of ``remove`` become booleans; any other is left for the service to
# refuse with the row's path.
CSV_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class PriceFileError(ValueError):
    """The text is not a price file of its format (its shape, not its prices: those the publish checks)."""


def _csv_entry(row: Mapping[str | Any, str | Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {k: v for k, v in row.items() if k and v not in (None, "")}
    remove = entry.get("remove")
    if isinstance(remove, str) and remove.strip().lower() in CSV_BOOLEANS:
        entry["remove"] = CSV_BOOLEANS[remove.strip().lower()]
    return entry


def price_file_parse(text: str, fmt: str) -> tuple[list[Any], dict[str, Any]]:
    """Entries and book-level fields (name, notes, source, mode) of a price file in ``fmt`` ("csv" or "json").

    CSV: a header row naming ``kind,key,value`` and optionally ``unit,source,effective_date,remove``; one entry
    per row. JSON: a list of entries, or ``{"name", "notes", "source", "mode", "entries": [...]}``. Entries are
    returned as read; ``price_book_publish`` checks them. Raises ``PriceFileError`` for another shape."""
    if fmt == PRICE_FEED_FORMAT_CSV:
        try:
            reader = csv.DictReader(text.splitlines())
            missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise PriceFileError(f"the CSV header must name the columns {', '.join(missing)}")
            return [_csv_entry(row) for row in reader], {}
        except csv.Error as exc:
            raise PriceFileError(f"not valid CSV ({exc})") from None
    if fmt == PRICE_FEED_FORMAT_JSON:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PriceFileError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise PriceFileError("not valid JSON (nested too deeply)") from None
        if isinstance(data, list):
            return data, {}
        if isinstance(data, dict) and isinstance(data.get("entries"), list):
            meta = {k: data[k] for k in ("name", "notes", "source", "mode") if isinstance(data.get(k), str)}
            return data["entries"], meta
        raise PriceFileError("expected a list of entries or an object with an 'entries' list")
    raise PriceFileError(f"unknown format {fmt!r}; csv or json")


def detect_format(declared: str, *, source: str, content_type: str = "", text: str = "") -> str:
    """The format of a feed's content: the declared one, else (``auto``) the extension of the source's path,
    else the answer's content type, else the content itself (JSON starts with ``[`` or ``{``)."""
    if declared != PRICE_FEED_FORMAT_AUTO:
        return declared
    path = urlsplit(source).path if _has_scheme(source) else source
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in (".csv", ".json"):
        return suffix[1:]
    media = content_type.split(";")[0].strip().lower()
    if media in ("text/csv", "application/csv"):
        return PRICE_FEED_FORMAT_CSV
    if media == "application/json" or media.endswith("+json"):
        return PRICE_FEED_FORMAT_JSON
    return PRICE_FEED_FORMAT_JSON if text.lstrip()[:1] in ("[", "{") else PRICE_FEED_FORMAT_CSV


# --- Sources --------------------------------------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class SourceRefused(ValueError):
    """The source may not be read (its scheme, host or path); the message is the reason."""


def _has_scheme(source: str) -> bool:
    return bool(_SCHEME.match(source))


def feed_dirs() -> list[Path]:
    """The directories file sources must lie under (``settings.PRICE_FEED_DIRS``), symbolic links resolved."""
    raw = settings.PRICE_FEED_DIRS or []
    return [Path(str(d)).expanduser().resolve() for d in raw if str(d).strip()]


# A team's directory is named by its slug; anything else (a '/', '..') could name another directory.
_SLUG_DIR = re.compile(r"^[A-Za-z0-9_-]+$")


def allowed_roots(team: Team | None) -> list[Path]:
    """The directories a feed of ``team`` may read files under: ``<dir>/<team slug>/`` for each directory
    ``<dir>`` of ``PRICE_FEED_DIRS`` (a team reads its own directory, never another team's file), or, for a
    global feed (``team`` None, registered by the operator only), the directories themselves.

    ``<dir>`` is resolved; ``<team slug>`` is not: a file whose real path is not in ``<real dir>/<slug>/``
    is refused, so a symbolic link (the team directory itself, or one inside it) cannot lead elsewhere."""
    dirs = feed_dirs()
    if team is None:
        return dirs
    slug = str(team.slug or "")
    if not _SLUG_DIR.match(slug):
        raise SourceRefused(f"the team's slug {slug!r} cannot name a directory; its feeds cannot read files")
    return [d / slug for d in dirs]


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path != root and path.is_relative_to(root) for root in roots)


def _listed(roots: list[Path]) -> str:
    return ", ".join(f"{root}/" for root in roots)


def allowed_path(source: str, *, team: Team | None) -> Path:
    """The resolved path of a file source, when a feed of ``team`` may read it; raises ``SourceRefused`` with
    the reason otherwise. A team's feed reads only files under ``<dir>/<team slug>/`` for a directory
    ``<dir>`` of ``PRICE_FEED_DIRS``; a global feed (``team`` None, the operator's) reads any file under those
    directories (``allowed_roots``). Symbolic links and ``..`` are resolved first, so neither leads out of
    the directory (``read_source`` checks the file it opened again)."""
    if "\x00" in source:
        raise SourceRefused("a file path must not contain NUL characters")
    path = Path(source)
    if not path.is_absolute():
        raise SourceRefused("must be an http(s) URL or an absolute file path")
    if not feed_dirs():
        raise SourceRefused("file paths are not accepted: no directory is listed in PRICE_FEED_DIRS")
    roots = allowed_roots(team)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):
        raise SourceRefused(f"{source} cannot be resolved") from None
    if _under(resolved, roots):
        return resolved
    if team is None:
        raise SourceRefused(
            f"{source} is not under a directory of PRICE_FEED_DIRS ({_listed(roots)}); no other file is read"
        )
    raise SourceRefused(
        f"{source} is not under the team's own directory ({_listed(roots)}): a team's feed reads only files "
        f"under <dir>/{team.slug}/ for a directory <dir> of PRICE_FEED_DIRS, never another team's file"
    )


def check_source(source: str, *, team: Team | None) -> str:
    """The source, stripped, when a feed of ``team`` (None: a global feed) may read it; raises
    ``ValidationError({"source": [reason]})``.

    An http(s) URL must pass ``outbound.check_url`` (no private, loopback or metadata address unless the
    operator allow-lists it); a file path must lie under ``<dir>/<team slug>/`` for a directory ``<dir>`` of
    ``PRICE_FEED_DIRS`` (a global feed: anywhere under those directories) and must not be a directory or a
    device. Anything else (``file:``, ``ftp:``, a relative path) is refused."""
    source = (source or "").strip()
    if not source:
        raise ValidationError({"source": ["must not be empty"]})
    try:
        if _has_scheme(source):
            scheme = source.split(":", 1)[0].lower()
            if scheme not in outbound.SCHEMES:
                raise SourceRefused(
                    f"must be an http(s) URL or an absolute file path under PRICE_FEED_DIRS, not a {scheme}: URL"
                )
            outbound.check_url(source)
            return source
        path = allowed_path(source, team=team)
        try:
            if path.exists() and not path.is_file():
                raise SourceRefused(f"{source} is not a regular file")
        except OSError as exc:
            raise SourceRefused(f"{source} cannot be read ({exc.strerror or exc})") from None
    except (SourceRefused, outbound.OutboundRefused) as exc:
        raise ValidationError({"source": [str(exc)]}) from None
    except ValueError as exc:  # a URL urllib cannot parse
        raise ValidationError({"source": [f"not a valid URL ({exc})"]}) from None
    return source


_PROC_FD = "/proc/self/fd"


def _opened_path(fd: int) -> Path | None:
    """The real path of the file open as ``fd`` (Linux: ``/proc/self/fd``), or None where it cannot be known."""
    if not os.path.isdir(_PROC_FD):
        return None
    return Path(os.path.realpath(f"{_PROC_FD}/{fd}"))


def _opened_is_allowed(fd: int, resolved: Path, roots: list[Path]) -> bool:
    """Whether the file open as ``fd`` is still under ``roots`` (a directory on the way may have been swapped
    for a symbolic link between ``allowed_path`` and the open). Where the descriptor's path cannot be read,
    the opened file must be the one ``resolved`` names now (device and inode) and ``resolved`` must still be
    its own real path (no symbolic link on the way)."""
    opened = _opened_path(fd)
    if opened is not None:
        return _under(opened, roots)
    try:
        now, current = os.fstat(fd), os.stat(resolved)
    except OSError:
        return False
    same = (now.st_dev, now.st_ino) == (current.st_dev, current.st_ino)
    return same and os.path.realpath(resolved) == str(resolved) and _under(resolved, roots)


class Unreachable(Exception):
    """The source could not be read; the message is the reason."""


class TooLarge(Exception):
    """The source is larger than the limit."""


@dataclass(frozen=True)
class Fetched:
    body: bytes
    content_type: str


def _max_bytes() -> int:
    return int(settings.PRICE_FEED_MAX_BYTES)


def _timeout_s() -> float:
    return float(settings.PRICE_FEED_TIMEOUT_S)


def _limit_text(limit: int) -> str:
    return f"{limit / 1024 / 1024:g} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"


def read_source(source: str, *, team: Team | None) -> Fetched:
    """The bytes of ``source`` read for a feed of ``team`` (at most ``PRICE_FEED_MAX_BYTES``); raises
    ``Unreachable`` or ``TooLarge``. A file path is checked again (``allowed_path``: the team's own
    directory), then the file opened is checked to be still under it before a byte is read."""
    limit = _max_bytes()
    if _has_scheme(source):
        try:
            answer = outbound.request("GET", source, timeout_s=_timeout_s(), max_bytes=limit)
        except outbound.OutboundRefused as exc:
            raise Unreachable(f"refused: {exc}") from None
        except httpx.TimeoutException:
            raise Unreachable(f"no answer within {_timeout_s():g} s") from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise Unreachable(f"could not read the URL ({type(exc).__name__}: {exc})") from None
        if not 200 <= answer.status < 300:
            extra = " (redirects are not followed)" if 300 <= answer.status < 400 else ""
            raise Unreachable(f"the server answered HTTP {answer.status}{extra}")
        if answer.truncated:
            raise TooLarge(f"the source is larger than {_limit_text(limit)}")
        return Fetched(body=answer.body, content_type=str(answer.headers.get("content-type", "")))
    try:
        path = allowed_path(source, team=team)
        roots = allowed_roots(team)
    except SourceRefused as exc:
        raise Unreachable(f"refused: {exc}") from None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreachable(f"{source}: no such file") from None
    except OSError as exc:
        raise Unreachable(f"{source}: cannot be opened ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        if not _opened_is_allowed(handle.fileno(), path, roots):
            where = "a directory of PRICE_FEED_DIRS" if team is None else "the team's own directory"
            raise Unreachable(
                f"refused: {source} changed while it was opened: the file opened is not under {where} "
                f"({_listed(roots)})"
            )
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise Unreachable(f"{source} is not a regular file")
        body = handle.read(limit + 1)
    if len(body) > limit:
        raise TooLarge(f"the source is larger than {_limit_text(limit)}")
    return Fetched(body=body, content_type="")


# --- Polling --------------------------------------------------------------------------------------------

_ENTRY_PATH = re.compile(r"^entries\[(\d+)\](?:\.(.+))?$")


def row_errors(exc: ValidationError) -> list[str]:
    """A publish's refusal as lines naming the row (1 = the first entry; in a CSV the line after the header)
    and the field: ``entries[2].value: must be ...`` becomes ``row 3: value: must be ...``."""
    if not hasattr(exc, "error_dict"):
        return [str(message) for message in exc.messages]
    lines: list[str] = []
    for field, messages in exc.message_dict.items():
        match = _ENTRY_PATH.match(field)
        if match:
            where = f"row {int(match[1]) + 1}" + (f": {match[2]}" if match[2] else "")
        else:
            where = "book" if field == "__all__" else field
        lines.extend(f"{where}: {message}" for message in messages)
    return lines


@dataclass(frozen=True)
class PollOutcome:
    """What one poll did: ``status`` (unchanged, published, refused, unreachable; or ``disabled``/``gone``
    when nothing was read), the book it published, the errors of a failure."""

    status: str  # or "disabled", "gone", "superseded" when nothing was recorded
    book_id: int | None = None
    errors: tuple[str, ...] = ()


def _book_source(feed: PriceFeed, retrieved_at: dt.datetime) -> str:
    """'<feed name>: <url or path>, retrieved <ISO time>', shortened in the middle of the source to fit."""
    when = f", retrieved {retrieved_at.isoformat(timespec='seconds')}"
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
        entries, meta = price_file_parse(text, fmt)
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
        raise _Refused(row_errors(exc)) from None


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
        with transaction.atomic():
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
        with transaction.atomic():
            locked = (
                PriceFeed.objects.select_for_update(of=("self",)).select_related("schedule").get(pk=feed.pk)
            )
            if any(k in clean and clean[k] != getattr(locked, k) for k in ("source", "format", "mode")):
                locked.last_hash = ""
            for key, value in clean.items():
                setattr(locked, key, value)
            locked.updated_at = timezone.now()
            locked.save()
            _sync_schedule(locked, schedule)
    except IntegrityError:
        raise ValidationError({"name": [f"a feed named {clean.get('name')!r} exists already"]}) from None
    return locked


def feed_delete(*, feed: PriceFeed) -> None:
    """Delete a feed and its beat row (the books it published stay)."""
    feed.delete()
