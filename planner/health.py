"""GET /healthz: database, broker, workers and beat, each "ok" or the reason it is not.

200 when every part is healthy, 503 naming the parts that are down; never 500. It stays cheap under load:
one ``SELECT 1``, one Redis ``PING`` and one ``ZRANGEBYSCORE`` over the heartbeat set (workers and beat
write it themselves), and the answer is reused for HEALTH_CACHE_S within a process.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis
from django.db import connection
from django.db.utils import Error as DatabaseError
from django.http import HttpRequest, JsonResponse

from planner import heartbeat

HEALTH_CACHE_S = 1.0
_cache_lock = threading.Lock()
_cached: tuple[float, dict[str, Any], int] | None = None


def _check() -> tuple[dict[str, Any], int]:
    report: dict[str, Any] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        report["database"] = {"status": "ok"}
    except DatabaseError as exc:
        report["database"] = {"status": "down", "error": str(exc).strip().splitlines()[0][:200]}
    try:
        heartbeat.client().ping()
        report["broker"] = {"status": "ok"}
        workers = heartbeat.alive("worker:")
        beats = heartbeat.alive("beat:")
        report["workers"] = (
            {"status": "ok", "alive": len(workers)}
            if workers
            else {"status": "down", "error": "no worker heartbeat in the last HEARTBEAT_STALE_S seconds"}
        )
        report["beat"] = (
            {"status": "ok", "alive": len(beats)}
            if beats
            else {"status": "down", "error": "no beat heartbeat in the last HEARTBEAT_STALE_S seconds"}
        )
    except (redis.RedisError, ValueError, OSError) as exc:  # ValueError: a broker URL redis-py cannot read
        message = str(exc)[:200]
        report["broker"] = {"status": "down", "error": message}
        report["workers"] = {"status": "unknown", "error": "broker down: heartbeats unreadable"}
        report["beat"] = {"status": "unknown", "error": "broker down: heartbeats unreadable"}
    down = [part for part, state in report.items() if state["status"] != "ok"]
    body = {"status": "ok" if not down else "degraded", "down": down, "checks": report}
    return body, 200 if not down else 503


def healthz(request: HttpRequest) -> JsonResponse:
    global _cached
    now = time.monotonic()
    with _cache_lock:
        cached = _cached
    if cached is None or now - cached[0] > HEALTH_CACHE_S:
        body, status = _check()
        with _cache_lock:
            _cached = (now, body, status)
    else:
        _, body, status = cached
    return JsonResponse(body, status=status)
