"""The cost of a report's ranges: ``solve(document)`` against ``solve(document, ranges=False)`` in one run.

    .venv/bin/python bench/bench_ranges.py [--plans 300] [--passes 3]

The documents are the distinct plans of ``bench_solve.candidate_plans`` (models, nodes, GPU counts, regions,
layouts and prices all vary); those the solver refuses are dropped before timing. Each pass solves every
document once with ranges and once without, the side that goes first alternating from one document to the
next, and times each call in CPU time (``time.process_time_ns``). Printed: the median and the mean per report
of each side over all passes, and their ratio (the target is at most 2). Method notes: ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_solve import candidate_plans

from solvers import ScenarioError, solve


def solvable(count: int) -> list[dict[str, Any]]:
    documents = []
    for plan in candidate_plans(count):
        try:
            solve(plan["doc"], ranges=False)
        except ScenarioError:
            continue
        documents.append(plan["doc"])
    return documents


def timed(document: dict[str, Any], ranges: bool) -> float:
    start = time.process_time_ns()
    solve(document, ranges=ranges)
    return (time.process_time_ns() - start) / 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plans", type=int, default=300, help="candidate plans (refused ones are dropped)")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    documents = solvable(args.plans)
    with_ranges: list[float] = []
    without: list[float] = []
    for _ in range(args.passes):
        for i, document in enumerate(documents):
            if i % 2:
                with_ranges.append(timed(document, True))
                without.append(timed(document, False))
            else:
                without.append(timed(document, False))
                with_ranges.append(timed(document, True))
    mean_with, mean_without = statistics.fmean(with_ranges), statistics.fmean(without)
    median_with, median_without = statistics.median(with_ranges), statistics.median(without)
    print(f"{len(documents)} distinct documents x {args.passes} passes, CPU time per report")
    print(
        f"median: with ranges {median_with:,.1f} us, without {median_without:,.1f} us, "
        f"ratio {median_with / median_without:.2f}x"
    )
    print(
        f"mean  : with ranges {mean_with:,.1f} us, without {mean_without:,.1f} us, "
        f"ratio {mean_with / mean_without:.2f}x (target <= 2)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
