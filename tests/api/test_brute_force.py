"""Brute force: wrong passwords lock the log-in (django-axes, admin and dashboard), wrong tokens get 429."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from api.throttling import FailedTokenThrottle
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

PASSWORD = "right-horse-battery-staple-1"
LIMIT = settings.AXES_FAILURE_LIMIT


@pytest.fixture
def staff() -> object:
    return get_user_model().objects.create_user(
        username="operator", password=PASSWORD, is_staff=True, is_superuser=True
    )


def attempt(client: Client, path: str, password: str, username: str = "operator") -> int:
    return client.post(path, {"username": username, "password": password}).status_code


def expire_lockouts() -> None:
    """Move every recorded failure back past the cool-off, as if that much time had passed."""
    from axes.models import AccessAttempt

    AccessAttempt.objects.update(
        attempt_time=timezone.now() - timedelta(hours=settings.AXES_COOLOFF_TIME, minutes=1)
    )


@pytest.mark.parametrize("path", ["/admin/login/", "/login/"])
def test_sixth_attempt_is_refused_even_with_the_right_password(staff: object, path: str) -> None:
    assert LIMIT == 5
    client = Client()
    assert [attempt(client, path, "wrong") for _ in range(LIMIT - 1)] == [200] * (LIMIT - 1)
    assert attempt(client, path, "wrong") == 429  # the fifth failure locks
    locked = client.post(path, {"username": "operator", "password": PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed log-ins" in locked.content
    # Another address is not locked out by this one's failures (the lockout is per user name and address).
    assert attempt(Client(REMOTE_ADDR="10.0.0.9"), path, PASSWORD) == 302
    # After the cool-off the right password works again.
    expire_lockouts()
    assert attempt(client, path, PASSWORD) == 302


def test_a_success_resets_the_count(staff: object) -> None:
    client = Client()
    for _ in range(LIMIT - 1):
        assert attempt(client, "/login/", "wrong") == 200
    assert attempt(client, "/login/", PASSWORD) == 302
    client.logout()
    for _ in range(LIMIT - 1):
        assert attempt(client, "/login/", "wrong") == 200
    assert attempt(client, "/login/", PASSWORD) == 302


@pytest.fixture
def token_failure_rate(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The configured rate (the test suite turns it off elsewhere), with the addresses' counts cleared
    before and after (the count lives in Redis, outside the test's transaction)."""
    rates: dict[str, str] = dict(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"])  # type: ignore[call-overload]
    monkeypatch.setattr(FailedTokenThrottle, "THROTTLE_RATES", rates)
    keys = [
        FailedTokenThrottle.cache_format % {"scope": "token_failure", "ident": address}
        for address in ("127.0.0.1", "10.0.0.7")
    ]
    cache.delete_many(keys)
    yield int(rates["token_failure"].split("/")[0])
    cache.delete_many(keys)


def test_random_tokens_end_in_429(world: World, token_failure_rate: int) -> None:
    guesser = APIClient()
    statuses = []
    for _ in range(30):
        guesser.credentials(HTTP_AUTHORIZATION=f"Bearer pln_{secrets.token_urlsafe(32)}")
        statuses.append(guesser.get("/api/v1/teams/").status_code)
    assert statuses[:token_failure_rate] == [401] * token_failure_rate
    assert set(statuses[token_failure_rate:]) == {429}
    guesser.credentials(HTTP_AUTHORIZATION=f"Bearer {world.alice.token}")
    refused = guesser.get("/api/v1/teams/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    # Another client address is not affected.
    other = APIClient(REMOTE_ADDR="10.0.0.7")
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {world.alice.token}")
    assert other.get("/api/v1/teams/").status_code == 200


def test_forwarded_for_is_ignored_without_a_trusted_proxy(world: World, token_failure_rate: int) -> None:
    """A guesser cannot dodge the count by sending a new X-Forwarded-For each time."""
    guesser = APIClient()
    statuses = []
    for number in range(token_failure_rate + 1):
        guesser.credentials(
            HTTP_AUTHORIZATION=f"Bearer pln_{secrets.token_urlsafe(32)}",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{number}",
        )
        statuses.append(guesser.get("/api/v1/teams/").status_code)
    assert statuses[-1] == 429
