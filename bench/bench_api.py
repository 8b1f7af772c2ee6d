"""API load benchmark: compare of 5 plans beside the cheapest authenticated endpoint, under 50 connections.

    .venv/bin/python bench/bench_api.py [--duration 10] [--rounds 3] [--connections 50] [--workers 4]

Uses a scratch database (``planner_bench_api`` on the local PostgreSQL, dropped and re-created; or
``BENCH_DATABASE_URL``) and the local Redis (``REDIS_URL``, default redis://127.0.0.1:6379/0). Seeds one
team with five solved plans, serves the app with gunicorn on loopback (DEBUG off), and drives it with wrk
(``apt-get install -y wrk``) using a real API token:

  * floor:   GET /api/v1/teams/                  (the caller's one team: authentication, roles, one row)
  * compare: GET /api/v1/compare/?plans=a,b,c,d,e (five latest results with deltas against the first)

It prints requests/s and p99 latency of both in one run. Target: compare keeps >= 50% of the floor's
throughput with a p99 within 2x. The compare throttle is lifted for the run (``THROTTLE_COMPARE``): the
benchmark measures capacity, not the per-token policy. Exit status 0 when the target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BENCH_DB = "planner_bench_api"
PLANS = 5


def _prepare_environment() -> None:
    if not os.environ.get("BENCH_DATABASE_URL"):
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DEFAULT_BENCH_DB}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DEFAULT_BENCH_DB}"')
        os.environ["BENCH_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{DEFAULT_BENCH_DB}"
    os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    # Served as in production: DEBUG off (no query log), throttling of compare lifted (see the docstring).
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["THROTTLE_COMPARE"] = "100000000/min"
    sys.path.insert(0, str(ROOT))


def _seed() -> tuple[str, list[int]]:
    """One team, one admin with a token, and PLANS solved plans; returns the token and the plan ids."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from api.models import ApiToken
    from scenarios import services
    from scenarios.adapters import REPORT_PROMOTED_FIELDS, plan_revisions
    from scenarios.models import Plan, Result
    from solvers import SOLVER_VERSION, canonical_hash, solve

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
    plan_ids: list[int] = []
    for tp in (1, 2, 4, 8, 8):
        pp = 1 if tp < 8 or len(plan_ids) == 3 else 2
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
        )
        document = services.plan_document(plan=plan)
        report: dict[str, Any] = dict(solve(document))
        revisions = plan_revisions(plan=plan)
        promoted = {name: report[a][b] for name, (a, b) in REPORT_PROMOTED_FIELDS.items()}
        result = Result.objects.create(
            plan=plan,
            team=team,
            version=1,
            input_snapshot={"document": document},
            prices={},
            input_hash=canonical_hash(document),
            solver_version=SOLVER_VERSION,
            report=report,
            cluster_revision=revisions.cluster,
            model_revision=revisions.model,
            site_revision=revisions.site,
            **promoted,
        )
        Plan.objects.filter(pk=plan.pk).update(latest_result=result)
        plan_ids.append(plan.pk)
    _, token = ApiToken.issue(user=user, name="bench")
    return token, plan_ids


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Measure:
    name: str
    requests_per_s: float
    p99_ms: float
    non_2xx: int
    requests: int


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def _wrk(name: str, url: str, token: str, args: argparse.Namespace) -> Measure:
    cmd = [
        "wrk",
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{args.duration}s",
        "--latency",
        "-H",
        f"Authorization: Bearer {token}",
        url,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return Measure(
        name=name, requests_per_s=rps, p99_ms=p99, non_2xx=int(bad.group(1)) if bad else 0, requests=total
    )


def _median(measures: list[Measure]) -> Measure:
    """The median round by throughput, with the median p99 and the total counts of all rounds."""
    by_rps = sorted(measures, key=lambda m: m.requests_per_s)
    p99s = sorted(m.p99_ms for m in measures)
    mid = by_rps[len(by_rps) // 2]
    return Measure(
        name=mid.name,
        requests_per_s=mid.requests_per_s,
        p99_ms=p99s[len(p99s) // 2],
        non_2xx=sum(m.non_2xx for m in measures),
        requests=sum(m.requests for m in measures),
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per endpoint and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median is reported")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1), help="gunicorn workers")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")
    _prepare_environment()
    token, plan_ids = _seed()
    from django.db import connections

    connections.close_all()
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "planner.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--worker-class",
            "sync",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=os.environ.copy(),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    floor_url = f"{base}/teams/"
    compare_url = f"{base}/compare/?plans={','.join(map(str, plan_ids))}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(compare_url, headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(request, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("gunicorn did not answer")
            time.sleep(0.2)
        # Warm every worker's connections and caches before measuring.
        _wrk("warm-up", compare_url, token, argparse.Namespace(**{**vars(args), "duration": 2}))
        # Alternating rounds, so that load from other processes on the machine falls on both endpoints alike.
        floors, compares = [], []
        for _ in range(args.rounds):
            floors.append(_wrk("teams (floor)", floor_url, token, args))
            compares.append(_wrk(f"compare of {PLANS} plans", compare_url, token, args))
        floor, compare = _median(floors), _median(compares)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(20)

    print(
        f"gunicorn {args.workers} sync workers, wrk {args.threads} threads, {args.connections} connections, "
        f"{args.rounds} x {args.duration} s per endpoint (median round), {os.cpu_count()} CPUs"
    )
    print(f"{'endpoint':<22} {'req/s':>10} {'p99 ms':>10} {'requests':>10} {'non-2xx':>8}")
    for m in (floor, compare):
        print(f"{m.name:<22} {m.requests_per_s:>10.1f} {m.p99_ms:>10.2f} {m.requests:>10} {m.non_2xx:>8}")
    share = compare.requests_per_s / floor.requests_per_s
    p99_ratio = compare.p99_ms / floor.p99_ms
    ok = share >= 0.5 and p99_ratio <= 2.0 and floor.non_2xx == 0 and compare.non_2xx == 0
    print(
        f"compare / floor: throughput {share:.0%} (target >= 50%), p99 {p99_ratio:.2f}x (target <= 2x): "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
