"""Loaded into test workers with ``celery worker --include tests.scenarios.worker_hooks``.

Wraps the solve executor so fault tests can hold solves in flight and crash a worker on purpose:
  SCENARIOS_TEST_SOLVE_DELAY_S  seconds each solve sleeps before solving (keeps many runs "running")
  plans named "crash-*"         the pool process exits hard mid-solve (like a segfault or the OOM killer)
"""

from __future__ import annotations

import os
import time
from typing import Any

from scenarios import execution

_solve = execution.EXECUTORS["solve"]


def _solve_for_tests(document: dict[str, Any], run: Any, claim: Any) -> dict[str, Any]:
    if run.plan.name.startswith("crash-"):
        os._exit(137)
    delay_s = float(os.environ.get("SCENARIOS_TEST_SOLVE_DELAY_S", "0") or 0)
    if delay_s:
        time.sleep(delay_s)
    return _solve(document, run, claim)


execution.register_executor("solve", _solve_for_tests)
