"""Where a report of a distinct plan spends its time, stage by stage, on the workload of ``bench_solve.py`` (a).

The distinct plans of ``bench_solve.candidate_plans`` that the engine's rules accept are solved once each
(``solve(doc, ranges=False)``) in this process, after 50 plans of another seed have warmed the imports (the
solver keeps nothing between calls, so the first pass that sorts out refused plans leaves no state behind).
Each stage below is wrapped in a ``time.perf_counter`` pair for the run; the wrappers cost about 0.2 us a
call, a few us a report. A stage's figure is its total time over the plans divided by their count (stages
nest: the parsers and the engine step run inside ``resolve_with_document``, so the rows do not add up to the
total; ``rest`` is the total less the top-level stages). Wall time, so run it on a quiet machine. Speed work
needs this split: a stage that holds a tenth of a report can give at most a tenth.

    .venv/bin/python bench/bench_stages.py [--plans 500]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_solve import candidate_plans  # noqa: E402

import solvers  # noqa: E402
from solvers import ScenarioError  # noqa: E402
from solvers import entry as entry_module  # noqa: E402
from solvers.inputs import scenario as scenario_module  # noqa: E402

# (module, function, top level): a top-level stage runs once per report outside every other listed stage.
STAGES: tuple[tuple[Any, str, bool], ...] = (
    (entry_module, "resolve_with_document", True),
    (scenario_module, "parse_model", False),
    (scenario_module, "parse_cluster", False),
    (scenario_module, "parse_site", False),
    (scenario_module, "parse_economics", False),
    (scenario_module, "parse_training", False),
    (scenario_module, "_solve_notes", False),
    (scenario_module, "all_plain_finite", False),
    (scenario_module, "canonical_hash", False),
    (scenario_module, "evaluate_step", False),
    (entry_module, "compute_ledger", True),
    (entry_module, "compose", True),
)


def _timed(fn: Callable[..., Any], label: str, totals: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - t0

    return wrapper


def solvable(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for doc in docs:
        try:
            solvers.solve(doc, ranges=False)
        except ScenarioError:
            continue
        out.append(doc)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plans", type=int, default=500)
    args = parser.parse_args()
    for doc in solvable([p["doc"] for p in candidate_plans(50, seed=7)]):  # imports and first calls
        solvers.solve(doc, ranges=False)
    plans = solvable([p["doc"] for p in candidate_plans(args.plans)])
    totals = {name: 0.0 for _, name, _ in STAGES}
    originals = [(module, name, getattr(module, name)) for module, name, _ in STAGES]
    for module, name, original in originals:
        setattr(module, name, _timed(original, name, totals))
    solved = len(plans)
    t0 = time.perf_counter()
    try:
        for doc in plans:
            solvers.solve(doc, ranges=False)
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
    total = time.perf_counter() - t0
    per = 1e6 / max(solved, 1)
    print(
        f"{solved} distinct plans solved once each (ranges off); wall time per report {total * per:,.1f} us"
    )
    print(f"{'stage':<24} {'us/report':>10} {'share':>7}")
    top = 0.0
    for _, name, top_level in STAGES:
        top += totals[name] if top_level else 0.0
        indent = "" if top_level else "  "
        print(f"{indent + name:<24} {totals[name] * per:>10.1f} {totals[name] / total:>7.1%}")
    print(f"{'rest':<24} {(total - top) * per:>10.1f} {(total - top) / total:>7.1%}")


if __name__ == "__main__":
    main()
