"""Wait until /healthz is green, then print where the service is (used by ``./dev up``).

Green means green for longer than ``planner.health.HEALTH_CACHE_S``: each web process reuses its last answer
for that long, so one 200 from one process does not yet mean that another process will not still answer a
503 it computed while a worker or beat was starting.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

from planner.health import HEALTH_CACHE_S

TIMEOUT_S = 120.0
POLL_S = 0.5


def main(base_url: str) -> int:
    deadline = time.monotonic() + TIMEOUT_S
    last = "no answer yet"
    green_since: float | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as res:
                body = json.load(res)
            now = time.monotonic()
            green_since = now if green_since is None else green_since
            if now - green_since > HEALTH_CACHE_S:
                parts = ", ".join(f"{name} {state['status']}" for name, state in body["checks"].items())
                print(
                    f"\nPlanner is up: {base_url}/api/v1/docs/  (health {base_url}/healthz: {parts})\n",
                    flush=True,
                )
                return 0
        except urllib.error.HTTPError as exc:
            green_since = None
            last = exc.read().decode(errors="replace")[:300]
        except (urllib.error.URLError, OSError) as exc:
            green_since = None
            last = str(exc)
        time.sleep(POLL_S)
    print(f"\nPlanner did not become healthy within {TIMEOUT_S:.0f} s: {last}\n", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"))
