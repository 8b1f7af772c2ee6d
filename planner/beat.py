"""The beat scheduler: django-celery-beat's database scheduler (schedules are rows, editable in the admin),
plus a liveness heartbeat written on every tick so /healthz can report beat."""

from __future__ import annotations

import socket
import time
from typing import Any

from django_celery_beat.schedulers import DatabaseScheduler

from planner import heartbeat


class HeartbeatDatabaseScheduler(DatabaseScheduler):
    _last_heartbeat = 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        from django.conf import settings

        now = time.monotonic()
        if now - self._last_heartbeat >= settings.HEARTBEAT_PERIOD_S:
            heartbeat.write(f"beat:{socket.gethostname()}")
            self._last_heartbeat = now
        interval: float = super().tick(*args, **kwargs)
        # Wake at least once per heartbeat period even when the next task is far away.
        return min(interval, float(settings.HEARTBEAT_PERIOD_S))
