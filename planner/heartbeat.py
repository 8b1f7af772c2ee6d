"""Liveness heartbeats of workers and beat, kept in one Redis sorted set: member = process, score = time.

A reader counts members whose score is recent (ZCOUNT), one round trip whatever the number of workers.
Redis keeps nothing on disk; after a Redis restart the set refills within one heartbeat period.
"""

from __future__ import annotations

import contextlib
import time
from functools import lru_cache

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

KEY = "planner:heartbeats"


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    # One immediate retry at most: /healthz must answer within about a second when the broker is down
    # (redis-py's default of 3 retries with exponential backoff made it take ~4 s), and a heartbeat
    # missed now is written again one period later.
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=1.0, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 1)
    )


def write(name: str) -> None:
    """Record that ``name`` (e.g. "worker:celery@host", "beat:host") is alive now; never raises."""
    try:
        pipe = client().pipeline()
        now = time.time()
        pipe.zadd(KEY, {name: now})
        # Trim members that stopped long ago so the set stays small.
        pipe.zremrangebyscore(KEY, "-inf", now - 10 * settings.HEARTBEAT_STALE_S)
        pipe.execute()
    except redis.RedisError:
        pass  # the broker being down is reported by /healthz itself


def clear(name: str) -> None:
    with contextlib.suppress(redis.RedisError):
        client().zrem(KEY, name)


def alive(prefix: str) -> list[str]:
    """Names with the given prefix ("worker:" or "beat:") that wrote within HEARTBEAT_STALE_S."""
    now = time.time()
    members = client().zrangebyscore(KEY, now - settings.HEARTBEAT_STALE_S, "+inf")
    names = [m.decode() if isinstance(m, bytes) else str(m) for m in members]
    return [n for n in names if n.startswith(prefix)]
