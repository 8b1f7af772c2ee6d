"""Price books: entries checked against the catalog, the team's sites and the solver's limits, each
version published with its complete entries, what it changed, and the re-runs it owes (a ``PriceFanOut``
row of the same transaction)."""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from scenarios import events, fanout
from scenarios.actors import UserLike, user_or_none
from scenarios.models import (
    EVENT_PRICE_BOOK_PUBLISHED,
    PRICE_MODE_PATCH,
    PRICE_MODE_REPLACE,
    PRICE_UNITS,
    Event,
    PriceBook,
    PriceEntry,
    PriceFanOut,
    SiteScenario,
    Team,
)
from solvers import catalog
from solvers.prices import (
    PRICE_ACCELERATOR,
    PRICE_ELECTRICITY,
    PRICE_FIELDS,
    PRICE_NODE,
    price_limits,
    provider_problem,
)

# One number for the API, the management command and this service (``api.limits`` reads it here). It bounds
# both the entries sent and the complete book a patch results in.
MAX_PRICE_ENTRIES = 10_000
PRICE_MODES = (PRICE_MODE_PATCH, PRICE_MODE_REPLACE)
SITE_KEY_PREFIX = "site:"
_PRICE_ENTRY_FIELDS = frozenset({"kind", "key", "value", "unit", "source", "effective_date", "remove"})


def _parse_date(value: Any, path: str, errors: dict[str, list[str]]) -> dt.date | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        errors[path] = ["must be a date YYYY-MM-DD"]
        return None


def unstorable_text(text: str) -> str | None:
    """Why PostgreSQL cannot store ``text`` (a NUL character, or a lone UTF-16 surrogate, which is not
    Unicode), or None. A price file or a feed reaches the service without the API's parsers, which refuse
    both; stored, either was a database error instead of a message naming the field."""
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"contains the unpaired UTF-16 surrogate \\u{ord(text[exc.start]):04x}, which is not Unicode text"
        )
    return None


def _price_number(value: float) -> str:
    """A limit as people read it: 10, 0.5, 100,000,000 (not 1e+08)."""
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.10g}"


def price_limit_text(kind: str) -> str:
    """The range a price of ``kind`` may take, in words, for error messages and the API documentation."""
    low, high = price_limits(kind)
    return f"{_price_number(low)} to {_price_number(high)} {PRICE_UNITS[kind]}"


def price_value_problem(kind: str, value: float, key: str | None = None) -> str | None:
    """Why the solver would refuse ``value`` as a price of ``kind`` (for ``key``), or None when it accepts it.

    The range is the solver's own (``solvers.prices.price_limits``): a book holding a price the solver
    refuses would make every re-run that uses it fail, long after the publish said yes. A node price reaches
    the solver divided by the node's accelerators, so a node of the catalog (``key``) is checked as its price
    divided by THAT node's ``gpus_per_node`` against the per-accelerator limit: 1e11 USD for an 8-GPU node
    is 1.25e10 USD per accelerator, which the solver refuses. Without a catalog node ``key`` the bound is the
    per-accelerator limit times the largest node the solver accepts."""
    field_path = PRICE_FIELDS[kind]
    gpus = _node_gpus(key) if kind == PRICE_NODE else None
    if gpus is not None:
        low, high = price_limits(PRICE_ACCELERATOR)
        if low <= value / gpus <= high:
            return None
        unit = PRICE_UNITS[kind]
        return (
            f"must be from {_price_number(low * gpus)} to {_price_number(high * gpus)} {unit} for the node "
            f"{key!r}: its {gpus} accelerators times the solver's limit of {field_path} "
            f"({price_limit_text(PRICE_ACCELERATOR)} per accelerator); {_price_number(value)} {unit} is "
            f"{_price_number(value / gpus)} per accelerator"
        )
    low, high = price_limits(kind)
    if low <= value <= high:
        return None
    scope = " per accelerator, times the largest node" if kind == PRICE_NODE else ""
    return f"must be from {price_limit_text(kind)} (the solver's limit of {field_path}{scope})"


def _node_gpus(key: str | None) -> int | None:
    """The accelerators of the catalog node ``key`` (``gpus_per_node``), or None for a key not in it."""
    node = catalog.NODES.get(key) if isinstance(key, str) else None
    gpus = node.get("gpus_per_node") if isinstance(node, Mapping) else None
    return gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 1 else None


def _unknown_key(what: str, name: str, known: Iterable[str], *, prefix: str = "") -> str:
    """'unknown region 'quebeck'; did you mean 'quebec'?': the closest known name (case aside), else the
    list of known names, so a misspelt key is refused rather than stored to match nothing."""
    by_lower = {choice.lower(): choice for choice in sorted(known)}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    if close:
        return f"unknown {what} {name!r}; did you mean {prefix + by_lower[close[0]]!r}?"
    if not by_lower:
        return f"unknown {what} {name!r}; there is none"
    names = sorted(by_lower.values())
    listed = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    return f"unknown {what} {name!r}; known: {listed}"


# The stored key's length: "site:" and a site's name of up to 200 characters.
_KEY_MAX: int = PriceEntry._meta.get_field("key").max_length or 0


def _live_site_names(team: Team) -> frozenset[str]:
    return frozenset(
        SiteScenario.objects.filter(team=team, archived_at__isnull=True).values_list("name", flat=True)
    )


def _price_key_problem(kind: str, key: str, *, site_names: Callable[[], frozenset[str]] | None) -> str | None:
    """Why no plan could ever be priced by ``key``, or None. Catalog keys come from the solver's catalog;
    ``site_names`` lists the team's live sites (None for the global book, which cannot name a team's site)."""
    if kind == PRICE_ACCELERATOR:
        return None if key in catalog.ACCELERATORS else _unknown_key("accelerator", key, catalog.ACCELERATORS)
    if kind == PRICE_NODE:
        return None if key in catalog.NODES else _unknown_key("node", key, catalog.NODES)
    if kind == PRICE_ELECTRICITY:
        if not key.startswith(SITE_KEY_PREFIX):
            return None if key in catalog.REGIONS else _unknown_key("region", key, catalog.REGIONS)
        if site_names is None:
            return "a global book cannot name a team's site: put 'site:' prices in that team's book"
        name, live = key[len(SITE_KEY_PREFIX) :], site_names()
        return None if name in live else _unknown_key("site", name, live, prefix=SITE_KEY_PREFIX)
    provider, colon, accelerator = key.rpartition(":")
    if colon and not provider:
        return (
            f"the provider before ':' is empty: write '<provider>:{accelerator}' (as in 'aws:h100-sxm'), "
            f"or '{accelerator}' alone for any provider"
        )
    if colon and (problem := provider_problem(provider)) is not None:
        return problem
    if accelerator in catalog.ACCELERATORS:
        return None
    return _unknown_key("accelerator", accelerator, catalog.ACCELERATORS, prefix=provider + colon)


def _price_entry_clean(
    raw: Mapping[str, Any],
    path: str,
    errors: dict[str, list[str]],
    *,
    mode: str,
    site_names: Callable[[], frozenset[str]] | None,
) -> dict[str, Any] | None:
    """One entry checked: a price {kind, key, value, ...} or, in a patch, {kind, key, remove: true}."""
    for name in sorted(set(raw) - _PRICE_ENTRY_FIELDS):
        errors[f"{path}.{name}"] = ["unknown field"]
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in PRICE_UNITS:
        errors[f"{path}.kind"] = [f"must be one of {', '.join(sorted(PRICE_UNITS))}"]
        return None
    key = raw.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > _KEY_MAX:
        errors[f"{path}.key"] = [f"must be a non-empty string of at most {_KEY_MAX} characters"]
        return None
    key = key.strip()
    remove = raw.get("remove", False)
    if not isinstance(remove, bool):
        errors[f"{path}.remove"] = ["must be true or false"]
        return None
    if remove:
        return _price_removal_clean(raw, path, errors, kind=kind, key=key, mode=mode)
    problem = _price_key_problem(kind, key, site_names=site_names)
    if problem is not None:
        errors[f"{path}.key"] = [problem]
        return None
    value = raw.get("value")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        try:
            value = float(value)  # an integer of 400 digits is no double: refused below, not an OverflowError
        except (ValueError, OverflowError):
            value = None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors[f"{path}.value"] = [f"must be a finite number from {price_limit_text(kind)}"]
        return None
    problem = price_value_problem(kind, float(value), key)
    if problem is not None:
        errors[f"{path}.value"] = [problem]
        return None
    unit = raw.get("unit") or PRICE_UNITS[kind]
    if unit != PRICE_UNITS[kind]:
        errors[f"{path}.unit"] = [f"{kind} prices are in {PRICE_UNITS[kind]}"]
        return None
    source = raw.get("source") or ""
    if not isinstance(source, str) or len(source) > 500:
        errors[f"{path}.source"] = ["must be a string of at most 500 characters"]
        return None
    problem = unstorable_text(source)
    if problem is not None:
        errors[f"{path}.source"] = [problem]
        return None
    return {
        "kind": kind,
        "key": key,
        "value": float(value),
        "unit": unit,
        "source": source,
        "effective_date": _parse_date(raw.get("effective_date"), f"{path}.effective_date", errors),
    }


def _price_removal_clean(
    raw: Mapping[str, Any], path: str, errors: dict[str, list[str]], *, kind: str, key: str, mode: str
) -> dict[str, Any] | None:
    """A removal names a key and nothing else (a value beside it would be ignored, so it is refused).
    Its key is not checked against the catalog: a key published before keys were checked must be removable."""
    if mode != PRICE_MODE_PATCH:
        errors[f"{path}.remove"] = ["only a patch removes keys: a replace lists the whole book"]
        return None
    extra = sorted(name for name in set(raw) & _PRICE_ENTRY_FIELDS - {"kind", "key", "remove"})
    for name in extra:
        if raw[name] not in (None, ""):
            errors[f"{path}.{name}"] = ["a removal takes only kind and key"]
    if any(f"{path}.{name}" in errors for name in extra):
        return None
    return {"kind": kind, "key": key, "remove": True}


def price_entries_validate(
    entries: Sequence[Mapping[str, Any]], *, team: Team | None = None, mode: str = PRICE_MODE_PATCH
) -> list[dict[str, Any]]:
    """Check the entries sent for a new version of ``team``'s book (None: the global book); return clean
    dicts, a price {kind, key, value, unit, source, effective_date} or a removal {kind, key, remove: True}.

    Errors name the entry path: a value outside the solver's limits, a unit that is not the kind's, a key
    the solver's catalog (or, for ``site:<name>``, the team's live sites) does not know, with the closest
    known key, a duplicate (kind, key), a removal outside a patch."""
    if mode not in PRICE_MODES:
        raise ValidationError({"mode": [f"must be one of {', '.join(PRICE_MODES)}"]})
    if not isinstance(entries, Sequence) or isinstance(entries, str | bytes):
        raise ValidationError({"entries": ["must be a list"]})
    if not entries:
        raise ValidationError({"entries": ["must list at least one price"]})
    if len(entries) > MAX_PRICE_ENTRIES:
        raise ValidationError({"entries": [f"at most {MAX_PRICE_ENTRIES} prices per book"]})
    site_names: Callable[[], frozenset[str]] | None = None
    if team is not None:
        site_names = functools.cache(functools.partial(_live_site_names, team))
    errors: dict[str, list[str]] = {}
    clean: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, raw in enumerate(entries):
        path = f"entries[{i}]"
        if not isinstance(raw, Mapping):
            errors[path] = ["must be an object"]
            continue
        entry = _price_entry_clean(raw, path, errors, mode=mode, site_names=site_names)
        if entry is None:
            continue
        identity = (entry["kind"], entry["key"])
        if identity in seen:
            errors[f"{path}.key"] = [f"duplicate of entries[{seen[identity]}] ({identity[0]} {identity[1]})"]
            continue
        seen[identity] = i
        clean.append(entry)
    if errors:
        raise ValidationError(errors)
    return clean


_ENTRY_VALUES = ("kind", "key", "value", "unit", "source", "effective_date")


def _book_entries(book: PriceBook | None) -> dict[tuple[str, str], dict[str, Any]]:
    """A stored version's complete entries by (kind, key)."""
    if book is None:
        return {}
    rows = PriceEntry.objects.filter(price_book=book).order_by("kind", "key").values(*_ENTRY_VALUES)
    return {(row["kind"], row["key"]): dict(row) for row in rows}


def _resulting_entries(
    clean: Sequence[Mapping[str, Any]], *, previous: PriceBook | None, mode: str
) -> list[dict[str, Any]]:
    """The complete entry set of the new version: a replace is its entries; a patch is the previous
    version's entries with each sent price set and each removal deleted (a removal of a key the previous
    version does not hold is refused: it would change nothing and probably names the wrong key)."""
    if mode == PRICE_MODE_REPLACE:
        return [dict(entry) for entry in clean]
    result = _book_entries(previous)
    errors: dict[str, list[str]] = {}
    for i, entry in enumerate(clean):
        identity = (entry["kind"], entry["key"])
        if not entry.get("remove"):
            result[identity] = dict(entry)
        elif result.pop(identity, None) is None:
            where = f"v{previous.version}" if previous is not None else "the book (it has no version yet)"
            # ``clean`` has one entry per entry sent (validation raised otherwise): i is the sent index.
            errors[f"entries[{i}].key"] = [
                f"nothing to remove: {entry['kind']} {entry['key']!r} is not in {where}"
            ]
    if errors:
        raise ValidationError(errors)
    if len(result) > MAX_PRICE_ENTRIES:
        raise ValidationError(
            {"entries": [f"the book would hold {len(result)} prices; at most {MAX_PRICE_ENTRIES}"]}
        )
    return [result[identity] for identity in sorted(result)]


@dataclass(frozen=True)
class PriceBookChanges:
    """What a version changed against the previous version of its scope, key by key: ``added`` and
    ``removed`` [{kind, key, value}], ``changed`` [{kind, key, before, after}] (values), ``unchanged`` the
    number of keys whose value stayed (their source or date may have been restated)."""

    added: list[dict[str, Any]]
    changed: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    unchanged: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def price_book_changes(*, book: PriceBook) -> PriceBookChanges:
    """The difference between ``book``'s entries and those of the previous version of its scope (every
    entry is added for a first version)."""
    before, after = _book_entries(fanout.previous_book(book)), _book_entries(book)
    added = [
        {"kind": k, "key": key, "value": after[(k, key)]["value"]}
        for k, key in after
        if (k, key) not in before
    ]
    removed = [
        {"kind": k, "key": key, "value": before[(k, key)]["value"]}
        for k, key in before
        if (k, key) not in after
    ]
    changed = [
        {"kind": k, "key": key, "before": before[(k, key)]["value"], "after": after[(k, key)]["value"]}
        for k, key in after
        if (k, key) in before and before[(k, key)]["value"] != after[(k, key)]["value"]
    ]
    unchanged = sum(1 for identity in after if identity in before) - len(changed)
    return PriceBookChanges(
        added=sorted(added, key=_kind_key),
        changed=sorted(changed, key=_kind_key),
        removed=sorted(removed, key=_kind_key),
        unchanged=unchanged,
    )


def _kind_key(item: Mapping[str, Any]) -> tuple[str, str]:
    return item["kind"], item["key"]


@dataclass(frozen=True)
class PriceBookSummary:
    """The answer to a publish: what the version changed and how many live plans it re-runs."""

    changes: PriceBookChanges
    plans_to_rerun: int

    def as_dict(self) -> dict[str, Any]:
        return {"changes": self.changes.as_dict(), "plans_to_rerun": self.plans_to_rerun}


def price_book_summary(*, book: PriceBook, plans_to_rerun: int | None = None) -> PriceBookSummary:
    """``price_book_changes`` and the number of live plans whose resolved prices the version changes,
    counted by the rule the fan-out re-runs them by (``fanout.plans_with_price_changes``). A caller that
    already ran the fan-out passes its count instead of comparing every plan a second time."""
    if plans_to_rerun is None:
        plans_to_rerun = fanout.plans_to_rerun(book=book)
    return PriceBookSummary(changes=price_book_changes(book=book), plans_to_rerun=plans_to_rerun)


def _record_published(book: PriceBook) -> None:
    """The ``price_book.published`` event, in the publishing transaction: what the version changed and how
    many plans it re-runs (``published_summary`` answers the publish from it, so it is counted once)."""
    if book.team_id is None:
        # A global book's event is read by every team: it says what changed, not how many plans other teams
        # have (the operator's command prints that count).
        summary_dict: dict[str, Any] = {
            "changes": price_book_changes(book=book).as_dict(),
            "plans_to_rerun": None,
        }
    else:
        summary_dict = price_book_summary(book=book).as_dict()
    payload = {
        "price_book": book.pk,
        "team": book.team_id,
        "version": book.version,
        "name": book.name,
        "mode": book.mode,
        "based_on": book.based_on_id,
        "source": book.source,
        **summary_dict,
    }
    events.record(
        [
            events.event(
                kind=EVENT_PRICE_BOOK_PUBLISHED,
                team_id=book.team_id,
                payload=payload,
                dedupe_key=f"{EVENT_PRICE_BOOK_PUBLISHED}:{book.pk}",
            )
        ]
    )


def published_summary(*, book: PriceBook) -> dict[str, Any]:
    """``changes`` and ``plans_to_rerun`` as the publish recorded them in its event."""
    payload = Event.objects.get(dedupe_key=f"{EVENT_PRICE_BOOK_PUBLISHED}:{book.pk}").payload
    return {"changes": payload["changes"], "plans_to_rerun": payload["plans_to_rerun"]}


def fan_out_state(*, book: PriceBook) -> str:
    """The book's re-runs after its publish committed: "queued" (sent, or done), "deferred" (the broker was
    down: the sweeper sends them later), "none" (published with ``fan_out="none"``)."""
    fan_out = PriceFanOut.objects.filter(pk=book.pk).values_list("enqueued_at", "done_at").first()
    if fan_out is None:
        return "none"
    return "deferred" if fan_out[0] is None and fan_out[1] is None else "queued"


def price_book_publish(
    *,
    team: Team | None,
    user: UserLike,
    name: str,
    entries: Sequence[Mapping[str, Any]],
    notes: str = "",
    source: str = "",
    mode: str = PRICE_MODE_PATCH,
    fan_out: str = "async",
) -> PriceBook:
    """Publish the next version of the global book (``team=None``) or of a team's override book.

    ``mode`` says what the entries are. "patch" (the default): changes to the previous version of the same
    scope; each entry sets its (kind, key), ``{"kind", "key", "remove": true}`` deletes a key the previous
    version holds, and every other key is carried over, so publishing cloud prices alone cannot drop an
    earlier accelerator or electricity override. "replace": the entries are the whole book, and keys they do
    not list are dropped. Either way the stored version holds the complete resulting entries (readers take
    the newest version as it is), with ``mode`` and ``based_on`` (the version a patch was applied to).

    Entries are checked before anything is stored: keys against the solver's catalog and the team's live
    sites (with the closest known key), values against the solver's own limits (``price_limits``), so a
    book cannot hold a price that matches nothing or that every re-run would refuse.
    ``price_book_summary`` tells what the version changed and how many plans it re-runs.

    After commit, every plan whose resolved prices changed gets a re-run (``fan_out``: "async" sends the
    fan-out to a worker, "sync" does it in this process, "caller" leaves it to the caller, which runs
    ``fanout.price_book_fan_out`` after the commit, "none" skips it). Every mode but "none" writes the book's
    ``PriceFanOut`` row in the book's transaction, so a process that dies before its fan-out is done leaves
    the row for the sweeper to send again."""
    if fan_out not in {"async", "sync", "caller", "none"}:
        raise ValidationError({"fan_out": ["must be async, sync, caller or none"]})
    if not name or not name.strip():
        raise ValidationError({"name": ["must not be empty"]})
    for label, text in (("name", name.strip()), ("source", source), ("notes", notes)):
        limit = getattr(PriceBook._meta.get_field(label), "max_length", None)
        if limit is not None and len(text) > limit:
            raise ValidationError({label: [f"must be at most {limit} characters, got {len(text):,}"]})
        problem = unstorable_text(text)
        if problem is not None:
            raise ValidationError({label: [problem]})
    clean = price_entries_validate(entries, team=team, mode=mode)
    with transaction.atomic():
        # One publisher per scope at a time, so versions count 1..n without a failed duplicate and a patch
        # is applied to the version that is still the newest when it is stored. A team's publish also holds
        # the global scope's lock shared (a global publish holds it alone), so a global and a team book are
        # never open at once: book ids follow commit order, which ``fanout.book_in_force`` relies on.
        with connection.cursor() as cursor:
            if team is not None:
                cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [7_400_001, 0])
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [7_400_001, team.pk if team else 0])
        last = PriceBook.objects.filter(team=team).order_by("-version").first()
        resulting = _resulting_entries(clean, previous=last, mode=mode)
        book = PriceBook.objects.create(
            team=team,
            version=(last.version if last else 0) + 1,
            name=name.strip(),
            notes=notes,
            source=source,
            mode=mode,
            based_on=last if mode == PRICE_MODE_PATCH else None,
            created_by=user_or_none(user),
            published_at=timezone.now(),
        )
        PriceEntry.objects.bulk_create([PriceEntry(price_book=book, **entry) for entry in resulting])
        _record_published(book)
        book_id = book.pk
        if fan_out != "none":
            # The re-runs the book owes are a row of the same transaction; the message is only a hint
            # (``scenarios.queue``): with the broker down the publish still succeeds and the sweeper sends it.
            PriceFanOut.objects.create(price_book=book, enqueued_at=timezone.now())
        if fan_out == "async":
            fanout.enqueue_price_fan_out(price_book_id=book_id)
    if fan_out == "sync":
        fanout.price_book_fan_out(price_book_id=book_id)
    return book
