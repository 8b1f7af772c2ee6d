"""Design-space search speed: layouts evaluated per second on one core, against mlsysim 0.3.0.

Run from the repository root::

    .venv/bin/python bench/bench_search.py [--repeat 5] [--mlsysim-python /tmp/mlsysim-venv/bin/python]

Cases (issue 7): Llama 3 405B on 16,384 H100 (16M-token batch, 8,192-token sequences) and DeepSeek-V3 on
2,048 H800. For each, the whole default space is enumerated, checked with the engine's rules, evaluated
with the engine and ranked (``solvers.search.search_resolved``); the median of ``--repeat`` runs after one
warm-up run is reported. The process is pinned to one CPU first.

mlsysim 0.3.0 runs in its own virtualenv (it pins its own numpy and pint) in a subprocess::

    python3 -m venv /tmp/mlsysim-venv && /tmp/mlsysim-venv/bin/pip install mlsysim==0.3.0

Its ``ParallelismOptimizer`` (power-of-two TP x PP grid, DP derived, each survivor priced with
``DistributedModel``) is timed on the same models and cluster sizes; mlsysim has no H800 node, so its
DeepSeek-V3 run uses DGX H100 nodes (the optimiser's speed does not depend on the GPU's numbers).
Targets: >= 200,000 layouts per second per core; the whole 405B space in under 2 s.
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

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from solvers import engine  # noqa: E402
from solvers.inputs import resolve  # noqa: E402
from solvers.search import (  # noqa: E402
    EVAL_CHUNK_LAYOUTS,
    default_space,
    enumerate_layouts,
    search_resolved,
    take,
)
from solvers.search.document import search_document  # noqa: E402

TARGET_LAYOUTS_PER_S = 200_000
TARGET_405B_S = 2.0
DEFAULT_MLSYSIM_PYTHON = "/tmp/mlsysim-venv/bin/python"

CASES: dict[str, dict[str, Any]] = {
    "llama3-405b / 16,384 H100": {
        "model": {"preset": "llama3-405b"},
        "cluster": {"node": "dgx-h100", "gpus": 16384, "scale_out": "roce-400g"},
        "training": {
            "seq_len": 8192,
            "global_batch_tokens": 16_777_216,
            "precision": "bf16",
            "layout": "auto",
            "efficiency": {"overlap": {"dp": 0.9}},
        },
        "economics": {"job_days": 54},
    },
    "deepseek-v3 / 2,048 H800": {
        "model": {"preset": "deepseek-v3"},
        "cluster": {"node": "hgx-h800", "gpus": 2048},
        "training": {
            "seq_len": 4096,
            "global_batch_seqs": 15360,
            "precision": "fp8",
            "layout": "auto",
            "efficiency": {"overlap": {"pp": 0.9, "dp": 0.9, "ep": 0.9}},
        },
    },
}

# Llama 3 (2024) Table 4's published layout, as the baseline the search must match or beat.
LLAMA3_PUBLISHED_LAYOUT: dict[str, Any] = {
    "tp": 8,
    "pp": 16,
    "cp": 1,
    "microbatch_seqs": 1,
    "schedule": "interleaved",
    "virtual_stages": 2,
    "sequence_parallel": True,
    "zero_stage": 3,
    "fsdp_reshard_after_forward": False,
    "grad_reduce_dtype": "fp32",
    "recompute": "none",
}

# mlsysim side: (registry model name, nodes of 8 GPUs, global batch in sequences, sequence length)
MLSYSIM_CASES: dict[str, tuple[str, int, int, int]] = {
    "llama3-405b / 16,384 H100": ("Llama3_405B", 2048, 2048, 8192),
    "deepseek-v3 / 2,048 H800": ("DeepSeek_V3", 256, 15360, 4096),
}

MLSYSIM_SCRIPT = r"""
import json, statistics, sys, time
from mlsysim.models.registry import Models
from mlsysim.systems.registry import Nodes, Fabrics
from mlsysim.systems.types import Fleet
from mlsysim.engine.solvers.distributed import ParallelismOptimizer, DistributedModel

name, nodes, batch, seq, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model = getattr(Models.Language, name)
fleet = Fleet(name="bench", node=Nodes.DGX_H100, count=nodes, fabric=Fabrics.InfiniBand_NDR)
calls = {"n": 0}
original = DistributedModel.solve
def counted(self, *a, **k):
    calls["n"] += 1
    return original(self, *a, **k)
DistributedModel.solve = counted

def run():
    return ParallelismOptimizer().solve(model, fleet, batch_size=batch, precision="fp16", efficiency=0.5,
                                        seq_len=seq, activation_recomputation=True, max_tp=64, max_pp=128)
run()  # warm-up (imports, pint registry)
times, evaluated = [], 0
for _ in range(repeat):
    calls["n"] = 0
    started = time.perf_counter()
    result = run()
    times.append(time.perf_counter() - started)
    evaluated = calls["n"]
median = statistics.median(times)
print(json.dumps({"evaluated": evaluated, "median_s": median, "layouts_per_s": evaluated / median,
                  "best": result.best_config}))
"""


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity on this platform)"


def bench_case(document: dict[str, Any], repeat: int) -> dict[str, Any]:
    resolved = resolve(document)
    specs: dict[str, Any] = {
        "model": resolved.model,
        "cluster": resolved.cluster,
        "training": resolved.training,
    }
    space = default_space(**specs)
    search_resolved(resolved, space=space)  # warm-up
    totals, enums, evals = [], [], []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        enum = enumerate_layouts(**specs, space=space)
        enums.append(time.perf_counter() - started)
        started = time.perf_counter()
        for start in range(0, len(enum.layouts), EVAL_CHUNK_LAYOUTS):
            engine.evaluate(**specs, layouts=take(enum.layouts, slice(start, start + EVAL_CHUNK_LAYOUTS)))
        evals.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = search_resolved(resolved, space=space)
        totals.append(time.perf_counter() - started)
    assert result is not None
    total = statistics.median(totals)
    return {
        "candidates": result.candidates,
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "enumerate_s": statistics.median(enums),
        "engine_s": statistics.median(evals),
        "search_s": total,
        "layouts_per_s": result.evaluated / total,
        "engine_layouts_per_s": result.evaluated / statistics.median(evals),
        "best_step_s": float(result.metrics["step_s"][0]),
        "best": {
            k: int(getattr(result.layouts, k)[0])
            for k in ("tp", "cp", "pp", "ep", "dp", "microbatch_seqs", "virtual_stages", "zero_stage")
        },
    }


def bench_mlsysim(python: str, case: str, repeat: int) -> dict[str, Any] | None:
    if not Path(python).exists():
        return None
    name, nodes, batch, seq = MLSYSIM_CASES[case]
    completed = subprocess.run(
        [python, "-c", MLSYSIM_SCRIPT, name, str(nodes), str(batch), str(seq), str(repeat)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else "failed"}
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mlsysim-python", default=DEFAULT_MLSYSIM_PYTHON)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    pinned = pin_to_one_core()
    figures: dict[str, Any] = {"pinning": pinned, "cases": {}}
    for case, document in CASES.items():
        ours = bench_case(document, args.repeat)
        theirs = bench_mlsysim(args.mlsysim_python, case, args.repeat)
        figures["cases"][case] = {"planner": ours, "mlsysim_0_3_0": theirs}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"design-space search, one core ({pinned}), median of {args.repeat} runs after a warm-up")
        for case, pair in figures["cases"].items():
            ours, theirs = pair["planner"], pair["mlsysim_0_3_0"]
            print(f"\n{case}")
            print(
                f"  planner: {ours['candidates']:,} candidates -> {ours['evaluated']:,} evaluated, "
                f"{ours['feasible']:,} fit; enumerate {ours['enumerate_s'] * 1e3:.0f} ms, engine "
                f"{ours['engine_s'] * 1e3:.0f} ms, whole search {ours['search_s']:.2f} s"
            )
            print(
                f"  planner: {ours['layouts_per_s']:,.0f} layouts/s end to end "
                f"({ours['engine_layouts_per_s']:,.0f} layouts/s engine only); best step "
                f"{ours['best_step_s']:.3f} s at {ours['best']}"
            )
            if theirs is None:
                print(f"  mlsysim 0.3.0: not installed at {args.mlsysim_python} (see this file's docstring)")
            elif "error" in theirs:
                print(f"  mlsysim 0.3.0: failed: {theirs['error']}")
            else:
                print(
                    f"  mlsysim 0.3.0 ParallelismOptimizer: {theirs['evaluated']} layouts priced in "
                    f"{theirs['median_s'] * 1e3:.0f} ms = {theirs['layouts_per_s']:,.0f} layouts/s "
                    f"(best {theirs['best']}); planner is {ours['layouts_per_s'] / theirs['layouts_per_s']:,.0f}x "
                    "faster per layout"
                )
        published = json.loads(json.dumps(CASES["llama3-405b / 16,384 H100"]))
        published["training"]["layout"] = LLAMA3_PUBLISHED_LAYOUT
        versus = search_document(published, top=0)["baseline"]
        print(
            f"\nLlama 3 405B published TP8 CP1 PP16 DP128 (fits in memory: {versus['fits']}) vs the search's best:\n"
            f"  {versus['versus_best']['summary']}"
        )
        first = figures["cases"]["llama3-405b / 16,384 H100"]["planner"]
        rate_ok = all(
            p["planner"]["layouts_per_s"] >= TARGET_LAYOUTS_PER_S for p in figures["cases"].values()
        )
        print(
            f"\ntargets: >= {TARGET_LAYOUTS_PER_S:,} layouts/s per core: {'met' if rate_ok else 'NOT met'}; "
            f"405B space in < {TARGET_405B_S:g} s: {'met' if first['search_s'] < TARGET_405B_S else 'NOT met'} "
            f"({first['search_s']:.2f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
