"""Every scenario in examples/ solves at once, with a finite report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from solvers import solve
from solvers.cli import load_yaml

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert len(EXAMPLES) >= 25
    assert {"llama3-405b-16384.yaml", "deepseek-v3-2048xh800.yaml", "seed003-30b-dp-64xh100.yaml"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_solves(path: Path) -> None:
    document = load_yaml(path.read_text(encoding="utf-8"))
    assert isinstance(document.get("name"), str) and document["name"]
    report = solve(document)
    text = json.dumps(report, allow_nan=False)
    assert "NaN" not in text
    assert report["step"]["step_s"] > 0 and math.isfinite(report["step"]["step_s"])
    assert 0 < report["step"]["mfu"] < 1
    assert 0 < report["reliability"]["goodput"] <= 1
