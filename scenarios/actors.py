"""Who acts on the scenarios wing: a user, or nobody (the sweeper, beat, a management command)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

UserLike = User | AnonymousUser | None


def user_or_none(user: UserLike) -> User | None:
    """The user to record as the author (``created_by``, ``requested_by``); None for anonymous or nobody."""
    return user if isinstance(user, User) else None
