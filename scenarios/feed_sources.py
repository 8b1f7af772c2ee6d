"""Where a price feed may read from, and reading it: an http(s) URL through the SSRF guard
(``scenarios.outbound``), or a file under ``PRICE_FEED_DIRS`` (a team's feed only under its own slug's
directory), checked again at every read, at most ``PRICE_FEED_MAX_BYTES`` in ``PRICE_FEED_TIMEOUT_S``."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError

from scenarios import outbound
from scenarios.models import (
    Team,
)
from scenarios.price_files import has_scheme

# --- Sources --------------------------------------------------------------------------------------------


class SourceRefused(ValueError):
    """The source may not be read (its scheme, host or path); the message is the reason."""


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
        if has_scheme(source):
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
    if has_scheme(source):
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
