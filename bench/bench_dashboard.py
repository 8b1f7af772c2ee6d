"""Dashboard benchmark: the compare page's server time for 10 solved plans, and the bytes the dashboard ships.

    DJANGO_SETTINGS_MODULE=planner.settings DATABASE_URL=postgres://... \\
        .venv/bin/python bench/bench_dashboard.py [--runs 30] [--plans 10]

Scratch data only: the benchmark creates a database of its own next to DATABASE_URL's (its name plus
``_bench_dashboard``, on the same server), migrates it, and drops it at the end; DATABASE_URL's own rows are
never read or written. In it: one team and its admin, and ``--plans`` plans of Llama 3 70B on 1,024 H100s in
as many layouts, each solved through the worker's own code path (``execution.run_execute``), so that every
stored report is real-sized (assumptions ledger included) and current.

It times ``GET /compare/?plans=...&baseline=...`` through ``django.test.Client`` signed in as the admin (DEBUG
off, as served): ``--runs`` distinct requests (the baseline rotates over the plans), after one warm-up, and
prints the median and p90 server time, the page's query count and size. Then it sums the JS and CSS the
dashboard ships (``web/static/web/**/*.js|css``, the vendored Chart.js included).

Targets: p90 <= 200 ms for 10 plans; JS + CSS <= 300 KB. Exit status 0 when both are met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "web" / "static" / "web"
TARGET_P90_MS = 200.0
BUDGET_BYTES = 300 * 1000
# Layouts (tp, pp) of the compared plans: 1,024 GPUs, a 16 M-token batch of 8,192-token sequences.
LAYOUTS = ((1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (2, 2), (4, 2), (8, 2), (4, 4), (8, 4), (2, 4), (1, 4))


def _scratch_database() -> tuple[str, str]:
    """(the scratch database's URL, the maintenance URL to drop it with); creates it empty."""
    import psycopg

    base = os.environ.get("DATABASE_URL")
    if not base:
        raise SystemExit("DATABASE_URL is not set: point it at the PostgreSQL server to use")
    parts = urlsplit(base)
    name = f"{parts.path.lstrip('/') or 'planner'}_bench_dashboard"
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}")), maintenance


def _drop(url: str, maintenance: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _seed(plans: int) -> tuple[Any, list[int]]:
    """A team, its admin, and ``plans`` plans each solved once as a worker would; (user, plan ids)."""
    from django.contrib.auth import get_user_model

    from scenarios import execution, services
    from scenarios.runs import execute

    execute.enqueue_runs = lambda **_: 0  # executed below, not via a broker
    user = get_user_model().objects.create_user(username="bench", password=secrets.token_urlsafe(16))
    team = services.team_create(name="Bench", slug="bench", owner=user)
    cluster = services.scenario_create(
        kind="cluster",
        team=team,
        name="pod",
        user=user,
        document={"accelerator": "h100-sxm", "gpus": 1024, "gpus_per_node": 8},
    )
    model = services.scenario_create(
        kind="model", team=team, name="m", document={"preset": "llama3-70b"}, user=user
    )
    site = services.scenario_create(
        kind="site", team=team, name="s", document={"region": "quebec"}, user=user
    )
    ids: list[int] = []
    for tp, pp in LAYOUTS[:plans]:
        plan = services.plan_create(
            team=team,
            user=user,
            name=f"tp{tp}-pp{pp}",
            cluster=cluster,
            model=model,
            site=site,
            training={
                "seq_len": 8192,
                "global_batch_tokens": 16777216,
                "total_tokens": 1.5e13,
                "precision": "bf16",
                "layout": {"tp": tp, "pp": pp, "cp": 1, "microbatch_seqs": 1, "zero_stage": 1},
            },
            economics={"amortization_years": 3, "cloud_usd_per_gpu_hour": 2.5},
        )
        run = services.run_request(plan=plan, user=user)
        claim = execution.Claim(task_id=str(uuid.uuid4()), retries=0, worker="bench")
        outcome = execution.run_execute(run_id=run.pk, claim=claim)
        if outcome.status != "succeeded":
            raise SystemExit(f"plan {plan.name} did not solve: {outcome}")
        ids.append(plan.pk)
    return user, ids


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _time_compare(user: Any, ids: list[int], runs: int) -> dict[str, Any]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(user)
    plans = ",".join(map(str, ids))

    def url(i: int) -> str:
        return f"/compare/?plans={plans}&baseline={ids[i % len(ids)]}"

    warm = client.get(url(0))
    if warm.status_code != 200:
        raise SystemExit(f"GET {url(0)} -> {warm.status_code}: {warm.content[:300]!r}")
    with CaptureQueriesContext(connection) as captured:
        client.get(url(1))
    queries = len(captured.captured_queries)  # read now: the next request clears the log
    times_ms: list[float] = []
    for i in range(runs):
        started = time.perf_counter()
        response = client.get(url(i))
        times_ms.append((time.perf_counter() - started) * 1e3)
        if response.status_code != 200:
            raise SystemExit(f"GET {url(i)} -> {response.status_code}")
    return {
        "median_ms": statistics.median(times_ms),
        "p90_ms": _percentile(times_ms, 0.9),
        "min_ms": min(times_ms),
        "max_ms": max(times_ms),
        "queries": queries,
        "page_bytes": len(warm.content),
    }


def _shipped_bytes() -> dict[str, int]:
    files = sorted(p for p in STATIC.rglob("*") if p.suffix in (".js", ".css") and p.is_file())
    return {str(p.relative_to(STATIC)): p.stat().st_size for p in files}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30, help="timed requests (distinct URLs)")
    parser.add_argument("--plans", type=int, default=10, choices=range(2, len(LAYOUTS) + 1), metavar="2..12")
    args = parser.parse_args()
    url, maintenance = _scratch_database()
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    # Served as in production: DEBUG off (no query log kept on every request).
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    sys.path.insert(0, str(ROOT))
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        user, ids = _seed(args.plans)
        print(f"seeded {len(ids)} solved plans in {time.perf_counter() - started:.1f} s")
        page = _time_compare(user, ids, args.runs)
        from django.db import connections

        connections.close_all()
    finally:
        _drop(url, maintenance)
    print(
        f"compare page, {len(ids)} plans, {args.runs} requests: median {page['median_ms']:.1f} ms, "
        f"p90 {page['p90_ms']:.1f} ms (min {page['min_ms']:.1f}, max {page['max_ms']:.1f}); "
        f"{page['queries']} queries; {page['page_bytes'] / 1000:.1f} kB of HTML"
    )
    shipped = _shipped_bytes()
    total = sum(shipped.values())
    for name, size in shipped.items():
        print(f"  {name:<40} {size:>9,} B")
    print(f"JS + CSS shipped: {total:,} B ({total / 1000:.1f} kB) of the {BUDGET_BYTES / 1000:.0f} kB budget")
    ok_time = page["p90_ms"] <= TARGET_P90_MS
    ok_bytes = total <= BUDGET_BYTES
    print(
        f"target p90 <= {TARGET_P90_MS:.0f} ms: {'met' if ok_time else 'MISSED'}; budget: {'met' if ok_bytes else 'MISSED'}"
    )
    return 0 if ok_time and ok_bytes else 1


if __name__ == "__main__":
    raise SystemExit(main())
