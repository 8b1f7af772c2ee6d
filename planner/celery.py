"""The Celery application: configured from Django settings (``CELERY_`` namespace), tasks autodiscovered.

Workers write a liveness heartbeat to Redis from a bootstep timer (see ``planner.heartbeat``), so
``/healthz`` can tell whether a worker is alive without broadcasting a ping to every worker per request.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class HeartbeatStep(bootsteps.StartStopStep):
    """Writes this worker's heartbeat every HEARTBEAT_PERIOD_S while the worker's timer runs."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.tref: Any = None

    def start(self, parent: Any) -> None:
        from django.conf import settings

        from planner import heartbeat

        name = f"worker:{parent.hostname}"

        def beat() -> None:
            heartbeat.write(name)

        beat()
        self.tref = parent.timer.call_repeatedly(settings.HEARTBEAT_PERIOD_S, beat)

    def stop(self, parent: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        from planner import heartbeat

        heartbeat.clear(f"worker:{parent.hostname}")


app.steps["worker"].add(HeartbeatStep)
