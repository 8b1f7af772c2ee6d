"""Median time of one full report (step + reliability + checkpoint + energy + carbon + TCO), this solver vs
mlsysim 0.3.0, on the same scenarios with a fixed layout, measured in one run.

mlsysim is not a dependency of this project: install it in a separate virtualenv and point ``--mlsysim-python``
(or ``MLSYSIM_PYTHON``) at that interpreter:

    python3 -m venv /tmp/mlsysim-venv && /tmp/mlsysim-venv/bin/pip install mlsysim==0.3.0
    .venv/bin/python bench/bench_solve.py --mlsysim-python /tmp/mlsysim-venv/bin/python

For mlsysim one "full report" is what its tutorials chain for a training plan (seed 000), with the same
content as ours: ``DistributedModel.solve`` (step time), ``TrainingMemoryModel.solve`` (memory per GPU:
weights, gradients, optimizer state, activations), ``CheckpointModel.solve`` (checkpoint size and write time),
``ReliabilityModel.solve`` (MTBF, Young-Daly interval, goodput), ``EconomicsModel.solve`` (TCO) and
``SustainabilityModel.solve`` (energy, carbon, water). For this solver it is ``solvers.solve(document)``:
parsing and validating the scenario document, resolving presets and defaults, the engine's step, the ledger
and the report with its assumptions. Both sides are timed in-process after one warm-up call, in alternating
rounds (ours, then mlsysim's, five times) so that other load on the machine falls on both, on each
process's CPU time by default (``--clock wall`` for elapsed time); the import of either package is not
counted, nor is building mlsysim's input objects (its model, fleet and grid are built once per scenario,
outside the timed call).

What is cached on our side, and what is not: a scenario document seen before is not parsed again (the
resolved document, and each resolved model, cluster, site and economics part, are kept by content: a plan
or a stored cluster scenario is parsed once), and the assumptions text of the ledger is formatted once per
set of inputs. Every number of the report (step, traffic, memory, reliability, checkpoint, schedule, energy,
carbon, water, TCO) is computed on every call. The "cold" column empties all of these caches before every
call, so it also times parsing, validation and catalog lookups. The last line is the summary: median
microseconds per report on each side and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solvers import solve

# name, our scenario document, mlsysim arguments (same model, node, fabric, GPU count, layout and batch)
SCENARIOS: list[dict[str, Any]] = [
    {
        "name": "Llama 3 70B, 512 H100, TP8",
        "doc": {
            "model": {"preset": "llama3-70b"},
            "cluster": {"node": "dgx-h100", "gpus": 512},
            "site": {"region": "quebec"},
            "training": {"seq_len": 8192, "global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
            "economics": {"job_days": 30, "infra_multiplier": 2.0},
        },
        "mlsysim": {
            "model": "Llama3_70B",
            "node": "DGX_H100",
            "fabric": "InfiniBand_NDR",
            "gpus": 512,
            "batch": 512,
            "seq_len": 8192,
            "tp": 8,
            "pp": 1,
            "microbatches": 8,
            "grid": "Quebec",
        },
    },
    {
        "name": "Llama 3 405B, 16,384 H100, TP8 PP16",
        "doc": {
            "model": {"preset": "llama3-405b"},
            "cluster": {"node": "dgx-h100", "gpus": 16384},
            "site": {"region": "quebec"},
            "training": {"seq_len": 8192, "global_batch_seqs": 2048, "layout": {"tp": 8, "pp": 16}},
            "economics": {"job_days": 30, "infra_multiplier": 2.0},
        },
        "mlsysim": {
            "model": "Llama3_405B",
            "node": "DGX_H100",
            "fabric": "InfiniBand_NDR",
            "gpus": 16384,
            "batch": 2048,
            "seq_len": 8192,
            "tp": 8,
            "pp": 16,
            "microbatches": 16,
            "grid": "Quebec",
        },
    },
    {
        "name": "GPT-3 175B, 1,024 A100, TP8 PP8",
        "doc": {
            "model": {"preset": "gpt3-175b"},
            "cluster": {"node": "dgx-a100-80gb", "gpus": 1024},
            "site": {"region": "poland"},
            "training": {"seq_len": 2048, "global_batch_seqs": 1536, "layout": {"tp": 8, "pp": 8}},
            "economics": {"job_days": 30},
        },
        "mlsysim": {
            "model": "GPT3",
            "node": "DGX_A100",
            "fabric": "InfiniBand_HDR",
            "gpus": 1024,
            "batch": 1536,
            "seq_len": 2048,
            "tp": 8,
            "pp": 8,
            "microbatches": 96,
            "grid": "Poland",
        },
    },
    {
        "name": "Llama 3 8B, 64 H100, DP",
        "doc": {
            "model": {"preset": "llama3-8b"},
            "cluster": {"node": "dgx-h100", "gpus": 64},
            "site": {"region": "us-average"},
            "training": {"seq_len": 8192, "global_batch_seqs": 512, "layout": {"tp": 1, "pp": 1}},
            "economics": {"job_days": 30},
        },
        "mlsysim": {
            "model": "Llama3_8B",
            "node": "DGX_H100",
            "fabric": "InfiniBand_NDR",
            "gpus": 64,
            "batch": 512,
            "seq_len": 8192,
            "tp": 1,
            "pp": 1,
            "microbatches": 8,
            "grid": "US_Avg",
        },
    },
]

# Runs inside the mlsysim virtualenv; reads the scenarios on stdin, prints {name: [seconds per call]} as JSON.
MLSYSIM_SCRIPT = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from mlsysim import Models, Systems
from mlsysim.infrastructure.registry import Grids
from mlsysim.solvers import (CheckpointModel, DistributedModel, EconomicsModel, ReliabilityModel,
                             SustainabilityModel, TrainingMemoryModel)
from mlsysim.systems.types import Fleet

cfg = json.load(sys.stdin)
repeats = cfg["repeats"]
clock = time.process_time if cfg["clock"] == "cpu" else time.perf_counter
dist, mem, ckpt, rel, econ, sust = (DistributedModel(), TrainingMemoryModel(), CheckpointModel(),
                                    ReliabilityModel(), EconomicsModel(), SustainabilityModel())
out = {}
for sc in cfg["scenarios"]:
    a = sc["mlsysim"]
    model = getattr(Models.Language, a["model"])
    node = getattr(Systems.Nodes, a["node"])
    fleet = Fleet(name=sc["name"], node=node, count=a["gpus"] // 8, fabric=getattr(Systems.Fabrics, a["fabric"]))
    grid = getattr(Grids, a["grid"])

    def once():
        step = dist.solve(model=model, fleet=fleet, batch_size=a["batch"], precision="fp16", tp_size=a["tp"],
                          pp_size=a["pp"], microbatch_count=a["microbatches"], seq_len=a["seq_len"])
        mem.solve(model=model, hardware=node.accelerator, batch_size=a["batch"], seq_len=a["seq_len"],
                  precision="fp16", optimizer="adam", tp_size=a["tp"], pp_size=a["pp"],
                  dp_size=a["gpus"] // (a["tp"] * a["pp"]), gradient_accumulation_steps=a["microbatches"])
        ck = ckpt.solve(model=model, hardware=node.accelerator, optimizer="adam", checkpoint_interval_hours=2.0)
        rel.solve(fleet, 720.0, checkpoint_time_s=ck.write_time_seconds.to("s").magnitude)
        econ.solve(fleet=fleet, duration_days=30, infrastructure_multiplier=2.0)
        sust.solve(fleet=fleet, duration_days=30, datacenter=grid)
        return step

    once()
    times = []
    for _ in range(repeats):
        t0 = clock()
        once()
        times.append(clock() - t0)
    out[sc["name"]] = times
print(json.dumps(out))
"""


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_ours(doc: dict[str, Any], repeats: int, clock: str = "cpu") -> list[float]:
    """Seconds of ``repeats`` full reports (after one warm-up call)."""
    now = CLOCKS[clock]
    solve(doc)
    times = []
    for _ in range(repeats):
        t0 = now()
        solve(doc)
        times.append(now() - t0)
    return times


def time_ours_cold(doc: dict[str, Any], repeats: int, clock: str = "cpu") -> list[float]:
    """Seconds of full reports with every cache emptied before each (every part parsed, every note formatted)."""
    from solvers import ledger, schema

    now = CLOCKS[clock]
    times = []
    for _ in range(repeats):
        schema._PART_CACHE.clear()
        schema._RESOLVED_CACHE.clear()
        ledger._NOTES_CACHE.clear()
        t0 = now()
        solve(doc)
        times.append(now() - t0)
    return times


def time_stages(doc: dict[str, Any], repeats: int) -> dict[str, float]:
    """Median CPU seconds of each stage of one report: parse/resolve, engine, ledger, report composition."""
    from solvers.report import _ledger, _pick_layout, compose_report
    from solvers.schema import layout_from_batch, resolve

    stages: dict[str, list[float]] = {"resolve": [], "engine": [], "ledger": [], "compose": []}
    for _ in range(repeats):
        t0 = time.process_time()
        resolved = resolve(doc)
        t1 = time.process_time()
        layouts, columns, index, search = _pick_layout(resolved)
        row = columns.row(index)
        t2 = time.process_time()
        ledger = _ledger(resolved, row)
        t3 = time.process_time()
        compose_report(
            resolved=resolved, layout=layout_from_batch(layouts, index), row=row, ledger=ledger, search=search
        )
        t4 = time.process_time()
        for name, seconds in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            stages[name].append(seconds)
    return {name: statistics.median(values) for name, values in stages.items()}


def time_mlsysim(python: str, repeats: int, clock: str = "cpu") -> dict[str, list[float]]:
    payload = json.dumps(
        {
            "repeats": repeats,
            "clock": clock,
            "scenarios": [{"name": s["name"], "mlsysim": s["mlsysim"]} for s in SCENARIOS],
        }
    )
    proc = subprocess.run(
        [python, "-c", MLSYSIM_SCRIPT],
        input=payload,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"mlsysim run failed ({python}):\n{proc.stderr.strip()[-2000:]}")
    result: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mlsysim-python", default=os.environ.get("MLSYSIM_PYTHON", "/tmp/mlsysim-venv/bin/python")
    )
    parser.add_argument("--repeats", type=int, default=300, help="timed calls per scenario and side")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="the calls are split into this many alternating rounds of each side, so that a change in "
        "machine load during the run falls on both",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: each process's CPU time (time.process_time; other load on the machine does not inflate "
        "it); wall: elapsed time (time.perf_counter)",
    )
    args = parser.parse_args()
    rounds = max(1, args.rounds)
    per_round = max(1, args.repeats // rounds)
    ours: dict[str, list[float]] = {s["name"]: [] for s in SCENARIOS}
    cold: dict[str, list[float]] = {s["name"]: [] for s in SCENARIOS}
    theirs: dict[str, list[float]] = {s["name"]: [] for s in SCENARIOS}
    for _ in range(rounds):
        for s in SCENARIOS:
            ours[s["name"]].extend(time_ours(s["doc"], per_round, args.clock))
            cold[s["name"]].extend(time_ours_cold(s["doc"], max(1, per_round // 5), args.clock))
        for name, samples in time_mlsysim(args.mlsysim_python, per_round, args.clock).items():
            theirs[name].extend(samples)
    print(
        f"{'scenario':<38} {'planner (us)':>13} {'cold (us)':>10} {'mlsysim 0.3.0 (us)':>19} {'ratio':>8}"
    )
    ratios = []
    for s in SCENARIOS:
        name = s["name"]
        mine, fresh, other = (statistics.median(x[name]) for x in (ours, cold, theirs))
        ratios.append(other / mine)
        print(
            f"{name:<38} {mine * 1e6:>13.1f} {fresh * 1e6:>10.1f} {other * 1e6:>19.1f} {other / mine:>7.1f}x"
        )
    ours_median = statistics.median(statistics.median(v) for v in ours.values())
    cold_median = statistics.median(statistics.median(v) for v in cold.values())
    theirs_median = statistics.median(statistics.median(v) for v in theirs.values())
    stages = time_stages(SCENARIOS[0]["doc"], args.repeats)
    parts = ", ".join(f"{name} {seconds * 1e6:.0f} us" for name, seconds in stages.items())
    print(f"planner stages, {SCENARIOS[0]['name']}: {parts}")
    print(
        f"'cold': the resolved-document, resolved-part and ledger-notes caches emptied before each call "
        f"(median {cold_median * 1e6:.0f} us); {rounds} alternating rounds, {per_round} calls per round; "
        f"clock: {args.clock}"
    )
    print(
        f"SUMMARY ({args.clock} time): one full report {ours_median * 1e6:.0f} us (planner) vs "
        f"{theirs_median * 1e6:.0f} us "
        f"(mlsysim 0.3.0): {theirs_median / ours_median:.1f}x faster (per-scenario ratios "
        f"{min(ratios):.1f}x-{max(ratios):.1f}x, geometric mean {statistics.geometric_mean(ratios):.1f}x; "
        "target >= 50x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
