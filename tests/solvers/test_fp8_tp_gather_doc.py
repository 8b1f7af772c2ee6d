"""docs/CONVENTIONS.md's `fp8_tp_gather` row states the share of the tensor-parallel all-reduces left with full
recompute as the engine computes it: the row's own list of FP8 gathers (the forward's, the recomputed forward's
and the backward's, a quarter of an all-reduce each) gives 3 - 3/4 = 2.25 of 3."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from solvers import solve
from tests.solvers.test_per_op_recompute import DOC as PER_OP_DOC

ROOT = Path(__file__).resolve().parents[2]

# test_per_op_recompute's Llama 3 8B at TP 8 with sequence parallelism, in FP8 with full recompute
DOC: dict[str, Any] = copy.deepcopy(PER_OP_DOC)
DOC["training"]["precision"] = "fp8"
DOC["training"]["layout"]["recompute"] = "full"


def _tp_bytes(gather: bool) -> float:
    doc = copy.deepcopy(DOC)
    doc["training"]["efficiency"] = {"effects": {"fp8_tp_gather": gather}}
    return solve(doc, ranges=False)["traffic"]["bytes_per_gpu"]["tp"]


def test_conventions_full_recompute_share_matches_the_engine() -> None:
    text = (ROOT / "docs" / "CONVENTIONS.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `fp8_tp_gather`"))
    stated = re.search(r"with `full` ([0-9.]+) of 3", row)
    assert stated is not None
    engine = 3.0 * _tp_bytes(True) / _tp_bytes(False)  # 2.25
    assert float(stated.group(1)) == round(engine, 2)  # the doc says 2
