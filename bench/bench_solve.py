"""Time full reports on the workload users have, side by side with mlsysim 0.3.0 in one run.

    (a) 500 distinct plans, each document seen once, in a fresh process (models, nodes, GPU counts, sites,
        layouts and prices all vary);
    (b) a price change over the same 500 plans, holding their ``Resolved`` and their engine rows: the
        ledger's TCO, energy and carbon blocks again under the new prices;
    (c) one repeated document.

mlsysim is not a dependency of this project: install it in a separate virtualenv and point ``--mlsysim-python``
(or ``MLSYSIM_PYTHON``) at that interpreter; without it the bench prints only Planner's figures and says so:

    python3.11 -m venv /tmp/mlsysim-venv && /tmp/mlsysim-venv/bin/pip install mlsysim==0.3.0
    .venv/bin/python bench/bench_solve.py --mlsysim-python /tmp/mlsysim-venv/bin/python [--baseline-repo ../main]

``--baseline-repo`` times another checkout of this project (e.g. the main branch) in the same run, each side in
its own fresh processes, so that a change is judged against a figure of the same machine state. Method notes:
``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PLANS = 500

# our preset -> mlsysim's name; mlsysim's node and fabric for ours; our region -> mlsysim's grid
MODELS = {
    "llama3-8b": "Llama3_8B",
    "llama3-70b": "Llama3_70B",
    "llama3-405b": "Llama3_405B",
    "gpt3-175b": "GPT3",
}
NODES = {  # our node preset: (its accelerator preset, mlsysim's node, mlsysim's fabric)
    "dgx-a100-80gb": ("a100-sxm-80gb", "DGX_A100", "InfiniBand_HDR"),
    "dgx-h100": ("h100-sxm", "DGX_H100", "InfiniBand_NDR"),
    "dgx-b200": ("b200", "DGX_B200", "InfiniBand_XDR"),
    "mi300x-platform": ("mi300x", "Server_8x_MI300X", "RoCE_400G"),
}
REGIONS = {
    "quebec": "Quebec",
    "poland": "Poland",
    "us-average": "US_Avg",
    "iceland": "Iceland",
    "norway": "Norway",
    "france": "France",
    "germany": "Germany",
    "texas": "Texas",
    "china-average": "China_Avg",
    "india": "India_Avg",
}
SEQ_LEN = {"llama3-8b": 8192, "llama3-70b": 8192, "llama3-405b": 8192, "gpt3-175b": 2048}
LAYERS = {"llama3-8b": 32, "llama3-70b": 80, "llama3-405b": 126, "gpt3-175b": 96}


def candidate_plans(count: int, seed: int = 14) -> list[dict[str, Any]]:
    """``count`` distinct plans (our document and mlsysim's arguments for the same content), from ``seed``."""
    rng = random.Random(seed)
    seen: set[str] = set()
    plans: list[dict[str, Any]] = []
    while len(plans) < count:
        model = rng.choice(sorted(MODELS))
        node = rng.choice(sorted(NODES))
        region = rng.choice(sorted(REGIONS))
        tp = rng.choice((1, 2, 4, 8))
        pp = rng.choice([p for p in (1, 2, 4, 8, 16) if LAYERS[model] % p == 0])
        dp = rng.choice((2, 4, 8, 16, 32, 64))
        gpus = tp * pp * dp
        if gpus % 8:
            continue
        batch = dp * rng.choice((8, 16, 32))
        electricity = round(rng.uniform(0.03, 0.25), 4)
        unit_price = float(rng.choice((15_000, 20_000, 25_000, 30_000, 35_000)))
        job_days = float(rng.choice((14, 30, 60, 90)))
        multiplier = rng.choice((1.0, 1.5, 2.0))
        doc = {
            "model": {"preset": model},
            "cluster": {
                "node": node,
                "gpus": gpus,
                "accelerator": {"preset": NODES[node][0], "unit_price_usd": unit_price},
            },
            "site": {"region": region, "electricity_usd_per_kwh": electricity},
            "training": {
                "seq_len": SEQ_LEN[model],
                "global_batch_seqs": batch,
                "layout": {"tp": tp, "pp": pp, "zero_stage": 1},
            },
            "economics": {"job_days": job_days, "infra_multiplier": multiplier},
        }
        key = json.dumps(doc, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        _, mls_node, fabric = NODES[node]
        plans.append(
            {
                "doc": doc,
                "mlsysim": {
                    "model": MODELS[model],
                    "node": mls_node,
                    "fabric": fabric,
                    "gpus": gpus,
                    "batch": batch,
                    "seq_len": SEQ_LEN[model],
                    "tp": tp,
                    "pp": pp,
                    "microbatches": max(1, batch // dp),
                    "grid": REGIONS[region],
                    "job_days": job_days,
                    "kwh_price": electricity,
                    "infra_multiplier": multiplier,
                },
            }
        )
    return plans


# The new prices of (b): electricity up a fifth, accelerators down a tenth, and a cloud quote.
def new_prices(doc: dict[str, Any]) -> dict[str, float]:
    return {
        "electricity_usd_per_kwh": round(doc["site"]["electricity_usd_per_kwh"] * 1.2, 6),
        "accelerator_unit_price_usd": doc["cluster"]["accelerator"]["unit_price_usd"] * 0.9,
        "cloud_usd_per_gpu_hour": 2.5,
    }


# Runs in a fresh process of the project's interpreter with ``repo`` first on the path; prints JSON.
PLANNER_SCRIPT = r"""
import json, statistics, sys, time
cfg = json.load(sys.stdin)
sys.path.insert(0, cfg["repo"])
import numpy as np
import solvers
from solvers import ScenarioError, resolve
from solvers import solve as _solve

clock = time.process_time
solve_resolved = solvers.solve_resolved
if cfg.get("ranges"):
    solve = _solve
else:  # point figures only, as mlsysim gives; a checkout without ranges has no switch and gives none
    import inspect
    has_switch = "ranges" in inspect.signature(_solve).parameters
    solve = (lambda doc: _solve(doc, ranges=False)) if has_switch else _solve
    if has_switch:
        solve_resolved = lambda held: solvers.solve_resolved(held, ranges=False)
mode = cfg["mode"]
docs = cfg["docs"]
if mode == "filter":
    ok = []
    for i, doc in enumerate(docs):
        try:
            solve(doc)
        except ScenarioError:
            continue
        ok.append(i)
    print(json.dumps(ok))
elif mode == "a":
    times = []
    for doc in docs:
        t0 = clock()
        solve(doc)
        times.append(clock() - t0)
    print(json.dumps(times))
elif mode == "b":
    # The call site of a price change: the one place that knows how this checkout re-prices a held Resolved.
    held = [resolve(doc) for doc in docs]
    prices = cfg["prices"]
    try:
        from solvers.entry import reprice_many  # this branch: one vectorised ledger over the batch
    except ImportError:
        reprice_many = None
    if reprice_many is not None:
        rows = [solve_resolved(r) for r in held]
        steps = [(r["step"]["step_s"], r["step"]["gpu_busy_fraction"]) for r in rows]
        call = lambda: reprice_many(held, steps, prices)
    else:  # a checkout without it: one LedgerInputs and one compute_ledger per plan
        from solvers.report import _pick_layout
        from solvers.ledger import LedgerInputs, compute_ledger
        picked = [_pick_layout(r)[1] for r in held]
        def call():
            return [
                compute_ledger(LedgerInputs(row["step_s"], row["gpu_busy_fraction"],
                                            float(r.training.global_batch_tokens), **{**r.ledger_fields, **p}))
                for r, row, p in zip(held, picked, prices)
            ]
    call()
    samples = []
    for _ in range(cfg["repeats"]):
        t0 = clock()
        call()
        samples.append((clock() - t0) / len(docs))
    print(json.dumps(samples))
elif mode in ("c", "c_held"):
    doc = docs[0]
    if mode == "c":
        call = lambda: solve(doc)
    else:  # the caller holds the Resolved of its one document
        held = resolve(doc)
        call = lambda: solve_resolved(held)
    for _ in range(20):
        call()
    samples = []
    for _ in range(cfg["repeats"]):
        t0 = clock()
        for _ in range(100):
            call()
        samples.append((clock() - t0) / 100)
    print(json.dumps(samples))
"""

# Runs in a fresh process of the mlsysim interpreter; prints JSON. mlsysim's input objects (model, fleet,
# grid) are built outside the timed call, as a reader of its tutorials would hold them.
MLSYSIM_SCRIPT = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from mlsysim import Models, Systems
from mlsysim.infrastructure.registry import Grids
from mlsysim.solvers import (CheckpointModel, DistributedModel, EconomicsModel, ReliabilityModel,
                             SustainabilityModel, TrainingMemoryModel)
from mlsysim.systems.types import Fleet

cfg = json.load(sys.stdin)
clock = time.process_time
dist, mem, ckpt, rel, econ, sust = (DistributedModel(), TrainingMemoryModel(), CheckpointModel(),
                                    ReliabilityModel(), EconomicsModel(), SustainabilityModel())


def inputs(a):
    node = getattr(Systems.Nodes, a["node"])
    fleet = Fleet(name="plan", node=node, count=a["gpus"] // 8, fabric=getattr(Systems.Fabrics, a["fabric"]))
    return getattr(Models.Language, a["model"]), node, fleet, getattr(Grids, a["grid"])


def report(a, model, node, fleet, grid):
    step = dist.solve(model=model, fleet=fleet, batch_size=a["batch"], precision="fp16", tp_size=a["tp"],
                      pp_size=a["pp"], microbatch_count=a["microbatches"], seq_len=a["seq_len"])
    mem.solve(model=model, hardware=node.accelerator, batch_size=a["batch"], seq_len=a["seq_len"],
              precision="fp16", optimizer="adam", tp_size=a["tp"], pp_size=a["pp"],
              dp_size=a["gpus"] // (a["tp"] * a["pp"]), gradient_accumulation_steps=a["microbatches"])
    ck = ckpt.solve(model=model, hardware=node.accelerator, optimizer="adam", checkpoint_interval_hours=2.0)
    rel.solve(fleet, a["job_days"] * 24.0, checkpoint_time_s=ck.write_time_seconds.to("s").magnitude)
    econ.solve(fleet=fleet, duration_days=a["job_days"], kwh_price=a["kwh_price"],
               infrastructure_multiplier=a["infra_multiplier"])
    sust.solve(fleet=fleet, duration_days=a["job_days"], datacenter=grid)
    return step


def reprice(a, fleet, grid, kwh_price):
    econ.solve(fleet=fleet, duration_days=a["job_days"], kwh_price=kwh_price,
               infrastructure_multiplier=a["infra_multiplier"])
    sust.solve(fleet=fleet, duration_days=a["job_days"], datacenter=grid)


mode = cfg["mode"]
args = cfg["args"]
if mode == "a":
    times = []
    for a in args:
        built = inputs(a)
        t0 = clock()
        report(a, *built)
        times.append(clock() - t0)
elif mode == "b":
    built = [inputs(a) for a in args]
    prices = [p["electricity_usd_per_kwh"] for p in cfg["prices"]]
    for a, b, p in zip(args, built, prices):
        reprice(a, b[2], b[3], p)
    times = []
    for _ in range(cfg["repeats"]):
        t0 = clock()
        for a, b, p in zip(args, built, prices):
            reprice(a, b[2], b[3], p)
        times.append((clock() - t0) / len(args))
elif mode == "c":
    a = args[0]
    built = inputs(a)
    for _ in range(5):
        report(a, *built)
    times = []
    for _ in range(cfg["repeats"]):
        t0 = clock()
        for _ in range(10):
            report(a, *built)
        times.append((clock() - t0) / 10)
print(json.dumps(times))
"""


def _run(python: str, script: str, payload: dict[str, Any]) -> Any:
    """``script`` in a fresh process of ``python``; its last stdout line as JSON."""
    proc = subprocess.run(
        [python, "-c", script],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
        cwd="/",
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark process failed ({python}):\n{proc.stderr.strip()[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mlsysim-python", default=os.environ.get("MLSYSIM_PYTHON", "/tmp/mlsysim-venv/bin/python")
    )
    parser.add_argument("--python", default=sys.executable, help="the project's interpreter")
    parser.add_argument("--baseline-repo", help="another checkout of this project to time in the same run")
    parser.add_argument("--plans", type=int, default=PLANS)
    parser.add_argument(
        "--processes", type=int, default=3, help="fresh processes per side for (a), rounds for (b) and (c)"
    )
    parser.add_argument(
        "--ranges",
        action="store_true",
        help="time reports with their p10/p50/p90 ranges (what the service stores); by default point figures "
        "only, the content of mlsysim's answer",
    )
    parser.add_argument("--repeats", type=int, default=15, help="samples per side for (b) and (c)")
    parser.add_argument("--parts", default="abc", help="which of (a), (b), (c) to run, e.g. 'bc'")
    args = parser.parse_args()

    candidates = candidate_plans(args.plans * 2)
    ok = _run(
        args.python,
        PLANNER_SCRIPT,
        {"repo": str(REPO), "mode": "filter", "docs": [p["doc"] for p in candidates]},
    )
    plans = [candidates[i] for i in ok[: args.plans]]
    if len(plans) < args.plans:
        raise SystemExit(f"only {len(plans)} of {len(candidates)} candidate plans are valid")
    docs = [p["doc"] for p in plans]
    mls_args = [p["mlsysim"] for p in plans]
    prices = [new_prices(d) for d in docs]
    have_mlsysim = Path(args.mlsysim_python).exists()

    sides: dict[str, str] = {"planner": str(REPO)}
    if args.baseline_repo:
        sides["baseline"] = str(Path(args.baseline_repo).resolve())
    a: dict[str, list[float]] = {name: [] for name in (*sides, "mlsysim")}
    a_means: dict[str, list[float]] = {name: [] for name in a}
    for _ in range(
        args.processes if "a" in args.parts else 0
    ):  # alternate the sides, so a change in machine load falls on each
        for name, repo in sides.items():
            times = _run(
                args.python, PLANNER_SCRIPT, {"repo": repo, "mode": "a", "docs": docs, "ranges": args.ranges}
            )
            a[name].append(statistics.median(times))
            a_means[name].append(statistics.fmean(times))
        if have_mlsysim:
            times = _run(args.mlsysim_python, MLSYSIM_SCRIPT, {"mode": "a", "args": mls_args})
            a["mlsysim"].append(statistics.median(times))
            a_means["mlsysim"].append(statistics.fmean(times))
    # (b) and (c) too run in --processes rounds, the sides alternating within each round (a change in the
    # machine's load falls on every side), each figure the median over rounds of a process's median sample.
    rounds: dict[str, dict[str, list[float]]] = {"b": {}, "c": {}, "c_held": {}}
    for _ in range(args.processes):
        for name, repo in sides.items():
            payload = {
                "repo": repo,
                "docs": docs,
                "prices": prices,
                "repeats": args.repeats,
                "ranges": args.ranges,
            }
            for mode in ("b", "c", "c_held"):
                if mode[0] in args.parts:
                    samples = _run(args.python, PLANNER_SCRIPT, {**payload, "mode": mode})
                    rounds[mode].setdefault(name, []).append(statistics.median(samples))
        if have_mlsysim:
            payload = {"args": mls_args, "prices": prices, "repeats": args.repeats}
            for mode in ("b", "c"):
                if mode in args.parts:
                    samples = _run(args.mlsysim_python, MLSYSIM_SCRIPT, {**payload, "mode": mode})
                    rounds[mode].setdefault("mlsysim", []).append(statistics.median(samples))
    b, c, c_held = (
        {name: statistics.median(values) for name, values in rounds[mode].items()}
        for mode in ("b", "c", "c_held")
    )

    print(f"{len(docs)} distinct plans; CPU time (time.process_time); fresh processes; medians")
    if not have_mlsysim:
        print(
            f"mlsysim 0.3.0 not found at {args.mlsysim_python}: Planner's figures only (see --mlsysim-python)"
        )

    def line(label: str, figures: dict[str, float], extra: str = "") -> None:
        parts = [f"{name} {_us(value)}" for name, value in figures.items()]
        ratios = []
        if "mlsysim" in figures:
            ratios.append(f"mlsysim/planner {figures['mlsysim'] / figures['planner']:.1f}x")
        if "baseline" in figures:
            ratios.append(f"baseline/planner {figures['baseline'] / figures['planner']:.2f}x")
        print(f"{label}: " + ", ".join(parts) + (f"; {', '.join(ratios)}" if ratios else "") + extra)

    if "a" in args.parts:
        line("(a) one report per distinct plan, median", {k: statistics.median(v) for k, v in a.items() if v})
        means = {k: statistics.median(v) for k, v in a_means.items() if v}
        line("(a) one report per distinct plan, mean  ", means)
    if "b" in args.parts:
        line("(b) price change per plan, held Resolved ", b, " (target <= 50 us)")
    if "c" in args.parts:
        line("(c) one repeated document, per report    ", c)
        line("(c) the same, its Resolved held           ", c_held)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
