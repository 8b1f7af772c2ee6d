"""Paired timing of (a), one report per distinct plan, for two checkouts of this project in turn.

Two worker processes (one per checkout, each fresh) solve the same chunks of the distinct plans of
``bench_solve.candidate_plans`` (those either checkout refuses dropped first), in alternating order chunk by chunk, each
document once per process; the figure is the median over chunks of the ratio baseline/this. Both sides see
the same machine load within a chunk, so the ratio moves far less than two figures taken minutes apart.

    .venv/bin/python bench/bench_pair.py --baseline-repo /tmp/base [--rounds 3] [--chunk 25]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_solve import PLANS, REPO, candidate_plans

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import solvers
docs = json.load(open(sys.argv[2]))
clock = time.process_time
for line in sys.stdin:
    a, b = map(int, line.split())
    chunk = docs[a:b]
    t0 = clock()
    for doc in chunk:
        solvers.solve(doc, ranges=False)
    print((clock() - t0) / len(chunk), flush=True)
"""

FILTER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import solvers
ok = []
for doc in json.load(sys.stdin):
    try:
        solvers.solve(doc, ranges=False)
    except solvers.ScenarioError:
        continue
    ok.append(doc)
print(json.dumps(ok))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-repo", required=True, type=Path)
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh process pairs, one pass over the plans each"
    )
    parser.add_argument("--chunk", type=int, default=25, help="plans per timed chunk")
    args = parser.parse_args()
    sides = (str(REPO), str(args.baseline_repo.resolve()))
    docs = [plan["doc"] for plan in candidate_plans(PLANS + 100)]
    for side in sides:  # a plan either checkout refuses is dropped: both time the same documents
        kept = subprocess.run(
            [sys.executable, "-c", FILTER, side],
            input=json.dumps(docs),
            capture_output=True,
            text=True,
            check=True,
        )
        docs = json.loads(kept.stdout)
    docs = docs[:PLANS]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(docs, handle)
    times: dict[str, list[float]] = {side: [] for side in sides}
    ratios: list[float] = []
    for _ in range(args.rounds):
        workers = {
            side: subprocess.Popen(
                [sys.executable, "-c", WORKER, side, handle.name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=side,
            )
            for side in sides
        }
        for n, start in enumerate(range(0, len(docs), args.chunk)):
            taken: dict[str, float] = {}
            for side in sides if n % 2 else sides[::-1]:
                stdin, stdout = workers[side].stdin, workers[side].stdout
                assert stdin is not None and stdout is not None
                stdin.write(f"{start} {start + args.chunk}\n")
                stdin.flush()
                taken[side] = float(stdout.readline())
            if n == 0:
                continue  # the first chunk of a process loads the catalog
            for side in sides:
                times[side].append(taken[side])
            ratios.append(taken[sides[1]] / taken[sides[0]])
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()
    Path(handle.name).unlink()
    this, base = (statistics.median(times[side]) * 1e6 for side in sides)
    print(
        f"(a) paired, {len(docs)} distinct plans, chunks of {args.chunk}, {args.rounds} rounds: this {this:,.1f} us, "
        f"baseline {base:,.1f} us (median chunk means); median chunk ratio baseline/this "
        f"{statistics.median(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
