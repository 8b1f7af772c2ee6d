"""Documented limits of the public API.

Every limit here is enforced with a 400 that names the field path and the limit, and is listed in the
OpenAPI description (``api.schema.LIMITS_MARKDOWN``). Limits on the scenario document itself (GPUs, layers,
batch, ...) are the solver's own (``solvers.inputs.fields``); the API does not keep a second copy of them.
"""

from __future__ import annotations

from django.conf import settings

from scenarios import services

# Request bodies above this are refused before parsing (a scenario document is a few KB).
MAX_BODY_BYTES: int = int(getattr(settings, "DATA_UPLOAD_MAX_MEMORY_SIZE", None) or 1_048_576)
# Deeper JSON than this is not a scenario document; refusing it early keeps the parser off the stack limit.
MAX_JSON_DEPTH = 32
# Integers beyond ±2^53 are not exactly representable in JSON clients (JavaScript, most JSON libraries).
MAX_JSON_INT = 2**53
# Strings longer than this inside a body (names, descriptions, notes, keys) are refused.
MAX_STRING_CHARS = 10_000
# Rows per page (``?page_size=``); the default page is 50 rows.
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# Plans (or pinned results) in one comparison.
MAX_COMPARE_ITEMS = 20
# Entries in one published price book: the service's number (the management command obeys it too).
MAX_PRICE_ENTRIES: int = services.MAX_PRICE_ENTRIES
# Tokens a user may hold at once (revoked tokens do not count).
MAX_ACTIVE_TOKENS_PER_USER = 50


def token_limit_error(user_id: int) -> str | None:
    """Why ``user_id`` may not be issued another token (None when they may): one rule for every way of
    issuing one (the API, the dashboard, ``manage.py create_access``)."""
    from api.models import ApiToken

    if ApiToken.objects.active().filter(user_id=user_id).count() >= MAX_ACTIVE_TOKENS_PER_USER:
        return f"at most {MAX_ACTIVE_TOKENS_PER_USER} active tokens per user; revoke one first"
    return None


# The most digits an id can have: 2**63 - 1, the largest database id, has 19.
MAX_ID_DIGITS = 19


def is_id_text(text: str) -> bool:
    """Whether ``text`` is written in the digits 0-9 only, and no more of them than an id has: ``str.isdigit``
    also takes "²" and other digits that ``int`` refuses, and ``int`` refuses more than 4,300 digits; either
    must be a 400 (or a 404), not a 500."""
    return 0 < len(text) <= MAX_ID_DIGITS and text.isascii() and text.isdigit()
