"""Every published example, the scenario JSON Schema and a layout search give the recorded documents, bit for bit.

The recorded file is the reference for refactors of the solver: a change that moves any number shows up here, and
must then be a deliberate solver change (a new ``SOLVER_VERSION`` and a CHANGELOG "Solver changes" entry) with the
file rewritten by ``python tests/solvers/test_golden.py --write``.

One exception to "bit for bit": the Monte Carlo ``ranges`` are compared to 1e-9 relative. numpy computes the
exponentials and logarithms of the samples' arrays with code chosen for the CPU (SVML on AVX-512, the C library
elsewhere), which differ in the last bits (a few ulp, about 1e-15 relative); the recorded file was written on one
CPU and the tests run on others. Every point figure is compared exactly, and on one machine every path gives the
same bits for ranges too (``tests/solvers/test_ranges.py``). A change of method moves ranges by far more than
1e-9 and is caught.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from solvers import scenario_json_schema, solve
from solvers.cli import load_yaml
from solvers.search.document import search_document

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "examples.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SEARCHED = "quickstart-llama3-8b-64xh100.yaml"


def _document(name: str) -> Any:
    return load_yaml((ROOT / "examples" / name).read_text(encoding="utf-8"))


def _without_timing(value: Any) -> Any:
    """Drops ``elapsed_s``, a search's own wall-clock time: the one figure that is not a function of the input."""
    if isinstance(value, dict):
        return {key: _without_timing(item) for key, item in value.items() if key != "elapsed_s"}
    if isinstance(value, list):
        return [_without_timing(item) for item in value]
    return value


def current() -> dict[str, Any]:
    reports = {
        path.stem: _without_timing(solve(load_yaml(path.read_text(encoding="utf-8")))) for path in EXAMPLES
    }
    searched = _document(SEARCHED)
    search = _without_timing(search_document(searched, top=5))
    return {"reports": reports, "schema": scenario_json_schema(), "search": search}


def _recorded() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False))


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return _canonical(current())


# Relative tolerance of a range's quantile against the recorded one (module docstring).
RANGES_REL = 1e-9


def _split_ranges(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """The report without its ``ranges``, and the ranges' quantiles by (figure, quantile)."""
    rest = {key: value for key, value in report.items() if key != "ranges"}
    flat = {
        f"{figure}.{q}": value
        for figure, quantiles in (report.get("ranges") or {}).items()
        for q, value in quantiles.items()
    }
    return rest, flat


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_report_is_unchanged(path: Path, now: dict[str, Any]) -> None:
    rest, ranges = _split_ranges(now["reports"][path.stem])
    recorded_rest, recorded_ranges = _split_ranges(_recorded()["reports"][path.stem])
    assert rest == recorded_rest
    assert ranges.keys() == recorded_ranges.keys()
    assert ranges == pytest.approx(recorded_ranges, rel=RANGES_REL, abs=0.0)


def test_a_moved_range_is_caught() -> None:
    """The tolerance is far below any change of method: a range moved by 1e-7 fails."""
    recorded = {"figure.p10": 1.0, "figure.p50": 2.0}
    assert pytest.approx(recorded, rel=RANGES_REL, abs=0.0) == {"figure.p10": 1.0 + 1e-15, "figure.p50": 2.0}
    assert pytest.approx(recorded, rel=RANGES_REL, abs=0.0) != {"figure.p10": 1.0 + 1e-7, "figure.p50": 2.0}


def test_every_example_is_recorded(now: dict[str, Any]) -> None:
    assert set(now["reports"]) == set(_recorded()["reports"])


def test_json_schema_is_unchanged(now: dict[str, Any]) -> None:
    assert now["schema"] == _recorded()["schema"]


def test_search_is_unchanged(now: dict[str, Any]) -> None:
    assert now["search"] == _recorded()["search"]


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/solvers/test_golden.py --write")
    GOLDEN.write_text(json.dumps(_canonical(current()), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
