"""Wait until /healthz is green, then print where the service is (used by ``./dev up``)."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

TIMEOUT_S = 120.0


def main(base_url: str) -> int:
    deadline = time.monotonic() + TIMEOUT_S
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as res:
                body = json.load(res)
                parts = ", ".join(f"{name} {state['status']}" for name, state in body["checks"].items())
                print(
                    f"\nPlanner is up: {base_url}/api/v1/docs/  (health {base_url}/healthz: {parts})\n",
                    flush=True,
                )
                return 0
        except urllib.error.HTTPError as exc:
            last = exc.read().decode(errors="replace")[:300]
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.5)
    print(f"\nPlanner did not become healthy within {TIMEOUT_S:.0f} s: {last}\n", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"))
