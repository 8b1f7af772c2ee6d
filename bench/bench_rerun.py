"""Bulk re-run after a price change: 10,000 plans re-solved and stored by two worker processes.

    .venv/bin/python bench/bench_rerun.py [--plans 10000] [--workers 2] [--no-baseline]

Uses a scratch database (``planner_bench`` on the local PostgreSQL, dropped and re-created; or
``BENCH_DATABASE_URL``) and the local Redis (``REDIS_URL``, default redis://127.0.0.1:6379/0) through a queue
of its own. Steps: create the plans; publish a global price book and solve every plan once (the baseline,
so that each re-run stores a delta against a previous result); then publish a book that changes the H100
price and time (a) the enqueue: publish + finding the changed plans + bulk INSERT of the runs + sending
them in chunks, and (b) the total until every run is stored. Target: total < 60 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

from harness import ROOT, prepare_environment, start_workers, stop_workers

DEFAULT_BENCH_DB = "planner_bench"


def _create_plans(count: int) -> None:
    from scenarios import services
    from scenarios.models import Plan

    team = services.team_create(name="Bench", slug=f"bench-{uuid.uuid4().hex[:6]}")
    cluster = services.scenario_create(
        kind="cluster",
        team=team,
        name="h100-64",
        user=None,
        document={"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    )
    model = services.scenario_create(
        kind="model", team=team, name="llama3-8b", user=None, document={"preset": "llama3-8b"}
    )
    site = services.scenario_create(
        kind="site", team=team, name="quebec", user=None, document={"region": "quebec"}
    )
    training = {
        "seq_len": 8192,
        "global_batch_tokens": 4194304,
        "precision": "bf16",
        "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1},
    }
    # The first plan goes through the service (full validation); the rest differ only in total tokens.
    services.plan_create(
        team=team,
        user=None,
        name="plan-00000",
        cluster=cluster,
        model=model,
        site=site,
        training={**training, "total_tokens": 1.0e12},
    )
    Plan.objects.bulk_create(
        [
            Plan(
                team=team,
                name=f"plan-{i:05d}",
                cluster_id=cluster.pk,
                model_id=model.pk,
                site_id=site.pk,
                training={**training, "total_tokens": 1.0e12 + i * 1.0e9},
                economics={},
            )
            for i in range(1, count)
        ],
        batch_size=2000,
    )


def _wait_for_runs(book_id: int, expected: int, timeout_s: float = 900) -> tuple[int, int]:
    from scenarios.models import Run

    deadline = time.monotonic() + timeout_s
    while True:
        done = Run.objects.filter(price_book_id=book_id, status__in=["succeeded", "failed"])
        finished = done.count()
        if finished >= expected or time.monotonic() > deadline:
            return finished, done.filter(status="failed").count()
        time.sleep(0.2)


def _publish_and_rerun(h100_usd: float, label: str) -> dict[str, float]:
    from scenarios import fanout, services

    started = time.perf_counter()
    book = services.price_book_publish(
        team=None,
        user=None,
        name=label,
        fan_out="none",
        entries=[
            {"kind": "accelerator", "key": "h100-sxm", "value": h100_usd, "source": "benchmark"},
            {"kind": "electricity", "key": "quebec", "value": 0.05},
        ],
    )
    outcome = fanout.price_book_fan_out(price_book_id=book.pk)
    enqueued_s = time.perf_counter() - started
    finished, failed = _wait_for_runs(book.pk, outcome.runs_created)
    total_s = time.perf_counter() - started
    return {
        "plans_checked": outcome.plans_checked,
        "runs": outcome.runs_created,
        "messages": outcome.messages,
        "finished": finished,
        "failed": failed,
        "enqueue_s": enqueued_s,
        "total_s": total_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-baseline", action="store_true", help="skip the first solve of every plan")
    args = parser.parse_args()
    prepare_environment(database=DEFAULT_BENCH_DB, queue_prefix="bench-rerun")
    import django

    django.setup()
    from django.core.management import call_command

    from scenarios.models import Result

    call_command("migrate", verbosity=0)
    log_dir = ROOT / "var" / "bench"
    log_dir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    _create_plans(args.plans)
    print(f"created {args.plans} plans in {time.perf_counter() - t:.1f} s")
    procs = start_workers(args.workers, log_dir, name_prefix="rerun")
    try:
        if not args.no_baseline:
            base = _publish_and_rerun(25_000.0, "baseline")
            print(
                f"baseline: {base['runs']:.0f} first solves stored in {base['total_s']:.1f} s "
                f"(enqueue {base['enqueue_s']:.1f} s)"
            )
        change = _publish_and_rerun(21_000.0, "H100 price cut")
    finally:
        stop_workers(procs)
    deltas = Result.objects.filter(version=2).exclude(delta={}).count()
    print(f"price change re-run with {args.workers} worker processes on {os.cpu_count()} cores:")
    print(f"  plans checked          {change['plans_checked']:.0f}")
    print(f"  runs queued            {change['runs']:.0f} in {change['messages']:.0f} messages")
    print(
        f"  enqueue time           {change['enqueue_s']:.2f} s  (publish + find changed plans + insert runs + send)"
    )
    print(f"  total time             {change['total_s']:.2f} s  (until every result is stored)")
    print(f"  throughput             {change['finished'] / change['total_s']:.0f} plans/s")
    print(f"  failed runs            {change['failed']:.0f}; results with a delta: {deltas}")
    print(f"  target                 total < 60 s: {'met' if change['total_s'] < 60 else 'NOT met'}")
    return 0 if change["failed"] == 0 and change["finished"] == change["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
