"""CPU instructions per report of a distinct plan (the workload of ``bench_solve.py`` (a)), counted by valgrind.

Timings on a shared machine move by 5 to 30 % from one run to the next, so a change of a few percent cannot be
seen in them. An instruction count can: it is the same from run to run (to about 0.01 %) whatever the load.
It is not time (a cache miss or a branch mispredicted costs more than an instruction), so it judges a change
to the Python code of a report, not one that trades instructions for memory traffic; a speed target is still
checked by ``bench_solve.py``.

Method: the distinct plans of ``bench_solve.candidate_plans`` that this checkout accepts (those it refuses are
dropped first) are written to a file; for each checkout, ``valgrind --tool=callgrind`` runs a fresh
interpreter that imports the solver, solves ten plans of another seed (so that the first measured report
pays no first-call costs), then solves each of the N plans once. The same process without the N plans is
counted too, and the figure is the difference over N: instructions per report, imports and warm-up left out.
numpy's BLAS threads are held to one (``OPENBLAS_NUM_THREADS=1``), the hash seed fixed and address-space
randomisation turned off (``setarch -R`` where it exists), as otherwise idle threads and hashing add noise.

    .venv/bin/python bench/bench_instructions.py [--baseline-repo PATH] [--plans 200]

``--baseline-repo`` counts another checkout (e.g. ``git worktree add /tmp/base main``) over the same plans and
prints the ratio baseline/this. Needs valgrind (``apt-get install valgrind``); without it the script says so
and exits with status 2. Each count takes about a minute on one core. Method notes: ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_pair import FILTER  # the same check of which plans a checkout accepts
from bench_solve import PLANS, REPO, candidate_plans

WARM_UP = 10

SOLVE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import solvers
for doc in json.load(open(sys.argv[2])):
    solvers.solve(doc, ranges=False)
if sys.argv[3] == "measure":
    for doc in json.load(open(sys.argv[4])):
        solvers.solve(doc, ranges=False)
"""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _accepted(python: str, repo: Path, documents: list[dict[str, object]]) -> list[dict[str, object]]:
    proc = subprocess.run(
        [python, "-c", FILTER, str(repo)],
        input=json.dumps(documents),
        capture_output=True,
        text=True,
        check=True,
    )
    accepted: list[dict[str, object]] = json.loads(proc.stdout)
    return accepted


def _instructions(python: str, repo: Path, warm: Path, plans: Path, mode: str) -> int:
    """Instructions valgrind counts for one fresh interpreter running ``SOLVE`` in ``mode``."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        python,
        "-c",
        SOLVE,
        str(repo),
        str(warm),
        mode,
        str(plans),
    ]
    if shutil.which("setarch"):
        command = ["setarch", "-R", *command]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd="/")
    found = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed for {repo}:\n{proc.stderr.strip()[-3000:]}")
    return int(found.group(1))


def per_report(python: str, repo: Path, warm: Path, plans: Path, count: int) -> float:
    """Instructions per report: the measured run less the run that stops after the warm-up, over ``count``."""
    measured = _instructions(python, repo, warm, plans, "measure")
    base = _instructions(python, repo, warm, plans, "warm-up only")
    return (measured - base) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-repo", type=Path, help="another checkout to count over the same plans")
    parser.add_argument(
        "--plans", type=int, default=200, help=f"distinct plans counted (bench_solve: {PLANS})"
    )
    parser.add_argument("--python", default=sys.executable, help="the project's interpreter")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print(
            "valgrind not found: install it (apt-get install valgrind) to count instructions", file=sys.stderr
        )
        return 2

    candidates = [p["doc"] for p in candidate_plans(args.plans * 2)]
    documents = _accepted(args.python, REPO, candidates)[: args.plans]
    others = [p["doc"] for p in candidate_plans(WARM_UP * 3, seed=7)]
    warm_up = _accepted(args.python, REPO, others)[:WARM_UP]
    if len(documents) < args.plans:
        raise SystemExit(f"only {len(documents)} distinct plans are valid")
    sides = {"planner": REPO}
    if args.baseline_repo:
        sides["baseline"] = args.baseline_repo.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as scratch:
        plans_file = Path(scratch) / "plans.json"
        warm_file = Path(scratch) / "warm.json"
        plans_file.write_text(json.dumps(documents))
        warm_file.write_text(json.dumps(warm_up))
        counts = {
            name: per_report(args.python, repo, warm_file, plans_file, len(documents))
            for name, repo in sides.items()
        }
    print(f"{len(documents)} distinct plans, each solved once (ranges off); valgrind callgrind; instructions")
    line = ", ".join(f"{name} {value:,.0f}" for name, value in counts.items())
    if "baseline" in counts:
        line += f"; baseline/planner {counts['baseline'] / counts['planner']:.4f}x"
    print(f"per report: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
