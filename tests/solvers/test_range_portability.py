"""The ranges of a report do not depend on which SIMD code numpy picks for the CPU beyond the 1e-9 relative
that CONVENTIONS.md "Ranges" (Deterministic) and ``tests/solvers/test_golden.py`` allow."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from solvers import solve
from solvers.published import load_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "llama3-405b-16384.yaml"
SCRIPT = (
    "import json, sys\n"
    "from solvers import solve\n"
    "from solvers.published import load_example\n"
    f"json.dump(solve(load_example({EXAMPLE!r}))['ranges'], sys.stdout)\n"
)


def _ranges_with_cpu_features_disabled(features: str) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPY_DISABLE_CPU_FEATURES": features}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(platform.machine().lower() not in {"x86_64", "amd64"}, reason="x86-64 SIMD levels")
def test_ranges_agree_on_a_cpu_with_only_the_baseline_simd() -> None:
    """x86-64-v2 (no AVX2 or FMA) is numpy's baseline: a worker on such a CPU gives the same ranges to 1e-9."""
    here = solve(load_example(EXAMPLE))["ranges"]
    there = _ranges_with_cpu_features_disabled("X86_V3")
    for key, spread in here.items():
        for q, value in spread.items():
            assert there[key][q] == pytest.approx(value, rel=1e-9, abs=0.0), (key, q)
