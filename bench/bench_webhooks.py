"""A price change told to a team: 10,000 plans re-run, 10,000 ``result.stored`` events, each delivered once.

    .venv/bin/python bench/bench_webhooks.py [--plans 10000] [--workers 2] [--batch 100]

Uses a scratch database (``planner_bench_webhooks`` on the local PostgreSQL, dropped and re-created; or
``BENCH_DATABASE_URL``) and the local Redis through a queue of its own, two real worker processes and a
local HTTP receiver on 127.0.0.1 (allow-listed for the benchmark only) that verifies every request's
Standard Webhooks signature and counts the event ids it accepts. Steps: create the plans and solve each once
(the baseline: every re-run then has a delta); register a webhook endpoint for ``result.stored`` with
batches of ``--batch`` events; publish a global book that changes the H100 price and time until the
receiver has accepted every event of the re-runs. It prints the time from publish to the last stored result
and to the last delivery, the requests sent, and whether each event id arrived exactly once (the exit status
is non-zero if not).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness import ROOT, prepare_environment, start_workers, stop_workers

DEFAULT_BENCH_DB = "planner_bench_webhooks"


class Receiver:
    """Verifies each request's signature and counts accepted event ids and requests."""

    def __init__(self) -> None:
        self.secret = ""
        self.events: Counter[str] = Counter()
        self.requests = 0
        self.refused = 0
        self.last_at = 0.0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from standardwebhooks import Webhook

                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    payload = Webhook(receiver.secret).verify(body, dict(self.headers.items()))
                except Exception:
                    with receiver.lock:
                        receiver.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                events = payload["events"] if isinstance(payload, dict) and "events" in payload else [payload]
                with receiver.lock:
                    receiver.requests += 1
                    receiver.events.update(str(event["id"]) for event in events)
                    receiver.last_at = time.perf_counter()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/planner"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _wait(predicate: Any, timeout_s: float, *, beat_s: float = 5.0) -> bool:
    """Wait for ``predicate``, sending the dispatcher its beat every ``beat_s`` as the beat process would
    (deliveries are nudged when their events commit; the beat picks up retries and anything left over)."""
    from celery import current_app

    from scenarios.events import DISPATCH_TASK

    deadline = time.monotonic() + timeout_s
    next_beat = time.monotonic() + beat_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        if time.monotonic() > next_beat:
            current_app.send_task(DISPATCH_TASK)
            next_beat += beat_s
        time.sleep(0.5)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100, help="events per webhook request (1: one each)")
    args = parser.parse_args()
    prepare_environment(database=DEFAULT_BENCH_DB, queue_prefix="bench-webhooks")
    os.environ["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the workers read it from their environment
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    from bench_rerun import _create_plans, _publish_and_rerun

    from integrations import services as webhooks
    from scenarios.models import Event, Team

    call_command("migrate", verbosity=0)
    log_dir = ROOT / "var" / "bench"
    log_dir.mkdir(parents=True, exist_ok=True)
    _create_plans(args.plans)
    receiver = Receiver()
    procs = start_workers(args.workers, log_dir, name_prefix="webhooks")
    try:
        base = _publish_and_rerun(25_000.0, "baseline")
        print(f"baseline: {base['runs']:.0f} first solves stored in {base['total_s']:.1f} s")
        team = Team.objects.get(slug__startswith="bench-")
        created = webhooks.endpoint_create(
            team=team, user=None, url=receiver.url, event_kinds=["result.stored"], batch_size=args.batch
        )
        receiver.secret = created.secret
        first_event = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
        started = time.perf_counter()
        change = _publish_and_rerun(21_000.0, "H100 price cut")
        stored_s = time.perf_counter() - started
        expected = set(
            f"evt_{uid.hex}"
            for uid in Event.objects.filter(id__gt=first_event, kind="result.stored").values_list(
                "uid", flat=True
            )
        )
        # Count first (cheap, and the receiver's threads share this process's interpreter), then check ids.
        delivered = _wait(lambda: len(receiver.events) >= len(expected), timeout_s=600) and expected <= set(
            receiver.events
        )
        last_s = receiver.last_at - started if receiver.last_at else float("nan")
        time.sleep(2.0)  # anything sent twice would arrive now
    finally:
        stop_workers(procs)
        receiver.server.shutdown()
    once = all(receiver.events[event_id] == 1 for event_id in expected)
    extra = sorted(set(receiver.events) - expected)
    print(f"price change told by webhook, {args.workers} worker processes on {os.cpu_count()} cores:")
    print(f"  plans re-run           {change['runs']:.0f} (failed {change['failed']:.0f})")
    print(f"  result.stored events   {len(expected)}")
    print(
        f"  requests accepted      {receiver.requests} (batches of up to {args.batch}); refused {receiver.refused}"
    )
    print(f"  events received        {sum(receiver.events.values())}, distinct {len(receiver.events)}")
    print(f"  publish -> last result {stored_s:.2f} s")
    print(f"  publish -> last event  {last_s:.2f} s")
    print(f"  every event id once    {'yes' if delivered and once and not extra else 'NO'}")
    print(json.dumps({"events": len(expected), "requests": receiver.requests, "last_delivery_s": last_s}))
    return 0 if delivered and once and not extra and len(expected) == change["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
