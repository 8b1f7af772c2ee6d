"""A sweep of 1,000 points run as a job, first on ONE worker process, then on TWO, through the REST API.

    .venv/bin/python bench/bench_sweep.py [--points 1000] [--workers 1,2] [--narrow]

Uses a scratch database (``planner_bench_sweep`` on the local PostgreSQL, dropped and re-created; or
``BENCH_DATABASE_URL``) and the local Redis (``REDIS_URL``, default redis://127.0.0.1:6379/0) through a queue
of its own. For each worker count: start that many ``celery worker -c 1`` processes, POST
/api/v1/plans/{id}/sweep/ (Llama 3 8B on 64 GPUs; accelerator x region x scale-out bandwidth, every point
searching its best layout), poll GET /api/v1/runs/{id}/ for points_done / points_total until the run
succeeds, and stop the workers. Each worker count sweeps its own plan, so neither finds the other's stored
result. Prints both wall times and their ratio; the issue's target is that two workers finish faster.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from typing import Any

from harness import ROOT, prepare_environment, start_workers, stop_workers

DEFAULT_BENCH_DB = "planner_bench_sweep"
ACCELERATORS = ["h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb"]
REGIONS = ["quebec", "virginia", "iceland", "poland", "texas"]
NARROW_SPACE: dict[str, Any] = {"tp": [1, 2, 4, 8], "cp": [1, 2], "pp": [1, 2, 4], "microbatch_seqs": [1, 2]}


def _client_and_plans(count: int) -> tuple[Any, list[Any]]:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from api.models import ApiToken
    from scenarios import services

    user = get_user_model().objects.create_user(username=f"bench-{uuid.uuid4().hex[:6]}", password=None)
    team = services.team_create(name="Bench sweep", slug=f"bench-sweep-{uuid.uuid4().hex[:6]}", owner=user)
    cluster = services.scenario_create(
        kind="cluster", team=team, name="h100-64", user=user,
        document={"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    )  # fmt: skip
    model = services.scenario_create(
        kind="model", team=team, name="llama3-8b", user=user, document={"preset": "llama3-8b"}
    )
    site = services.scenario_create(
        kind="site", team=team, name="quebec", user=user, document={"region": "quebec"}
    )
    training = {
        "seq_len": 8192,
        "global_batch_tokens": 4194304,
        "total_tokens": 1.0e12,
        "precision": "bf16",
        "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1},
    }
    plans = [
        services.plan_create(
            team=team,
            user=user,
            name=f"sweep-{i}",
            cluster=cluster,
            model=model,
            site=site,
            training=training,
        )
        for i in range(count)
    ]
    _, secret = ApiToken.issue(user=user, name="bench")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client, plans


def _axes(points: int) -> list[dict[str, Any]]:
    per_combo = len(ACCELERATORS) * len(REGIONS)
    if points % per_combo:
        raise SystemExit(f"--points must be a multiple of {per_combo}")
    steps = points // per_combo
    return [
        {"field": "cluster.accelerator", "values": ACCELERATORS},
        {"field": "site.region", "values": REGIONS},
        {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 10, "stop": 10 * steps, "step": 10}},
    ]


def _sweep(client: Any, plan: Any, body: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    response = client.post(f"/api/v1/plans/{plan.pk}/sweep/", body, format="json")
    if response.status_code != 202:
        raise SystemExit(f"sweep refused: {response.status_code} {response.json()}")
    accepted_s = time.perf_counter() - started
    url = response.json()["url"]
    trace: list[tuple[float, int, int]] = []
    while True:
        run = client.get(url).json()
        elapsed = time.perf_counter() - started
        if not trace or trace[-1][1] != run["points_done"]:
            trace.append((elapsed, run["points_done"], run["points_total"]))
        if run["status"] in ("succeeded", "failed"):
            return {"run": run, "wall_s": elapsed, "accepted_s": accepted_s, "trace": trace}
        time.sleep(0.2)  # light polling: the driver shares the cores with the workers


def _progress_line(trace: list[tuple[float, int, int]]) -> str:
    marks = [f"{t:.1f}s:{done}/{total}" for t, done, total in trace]
    if len(marks) > 12:
        step = len(marks) / 12
        marks = [marks[int(i * step)] for i in range(12)] + [marks[-1]]
    return "  ".join(marks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker process counts")
    parser.add_argument("--narrow", action="store_true", help="search a narrowed layout space at every point")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",") if c.strip()]
    # The API's per-token budget is not what this measures (the poll loop makes thousands of requests).
    os.environ.setdefault("THROTTLE_RUN", "100000/min")
    prepare_environment(database=DEFAULT_BENCH_DB, queue_prefix="bench-sweep")
    import django

    django.setup()
    from django.core.management import call_command

    from scenarios.models import Result

    call_command("migrate", verbosity=0)
    log_dir = ROOT / "var" / "bench"
    log_dir.mkdir(parents=True, exist_ok=True)
    client, plans = _client_and_plans(len(counts))
    body: dict[str, Any] = {"axes": _axes(args.points), "objective": "usd_per_million_tokens"}
    if args.narrow:
        body["space"] = NARROW_SPACE
    outcomes: dict[int, dict[str, Any]] = {}
    for count, plan in zip(counts, plans, strict=True):
        procs = start_workers(count, log_dir, name_prefix="sweep", log_level="INFO")
        try:
            outcomes[count] = _sweep(client, plan, body)
        finally:
            stop_workers(procs)
        run = outcomes[count]["run"]
        result = Result.objects.get(pk=run["result"]) if run["result"] else None
        chunks = result.report["chunks"] if result else {}
        print(
            f"{count} worker process(es): {run['status']} in {outcomes[count]['wall_s']:.1f} s "
            f"({run['points_done']}/{run['points_total']} points, {chunks.get('count')} chunks of "
            f"{chunks.get('points_per_chunk')}; 202 after {outcomes[count]['accepted_s'] * 1000:.0f} ms)"
        )
        print(f"  progress via GET /api/v1/runs/{run['id']}/: {_progress_line(outcomes[count]['trace'])}")
        if result is not None:
            best = result.report["best"]
            print(
                f"  best point {best['point']}: {best['metrics']['usd_per_million_tokens']:.4f} USD per "
                f"million tokens, layout tp{best['layout']['tp']} pp{best['layout']['pp']} "
                f"dp{best['layout']['dp']}; Pareto front {len(result.report['pareto'])} points"
            )
    print(f"sweep of {args.points} points on {os.cpu_count()} cores:")
    for count in counts:
        print(f"  {count} worker process(es)   {outcomes[count]['wall_s']:.1f} s")
    ok = all(o["run"]["status"] == "succeeded" for o in outcomes.values())
    if 1 in outcomes and 2 in outcomes:
        ratio = outcomes[1]["wall_s"] / outcomes[2]["wall_s"]
        print(f"  speed-up 1 -> 2 workers  {ratio:.2f}x  (target: > 1, two workers faster)")
        ok = ok and ratio > 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
