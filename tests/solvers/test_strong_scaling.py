"""Strong scaling never raises MFU: more GPUs, everything else fixed (model, global batch, tp, pp, cp, microbatch,
schedule), with the step effects on (their fitted defaults).

Along every strong-scaling series of the validation corpus the series' first scenario is re-solved at each GPU
count of the series (the data-parallel degree grows), and along a synthetic series of Llama 3 70B on 256 to
16,384 H100.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from solvers import solve
from solvers.errors import ScenarioError
from solvers.published import validation_corpus

RUNS = validation_corpus().runs
SERIES = sorted({r.series for r in RUNS if r.series and r.series_kind == "strong"})


def _at(document: dict[str, Any], gpus: int) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out["cluster"]["gpus"] = gpus
    layout = out["training"].get("layout")
    if isinstance(layout, dict):
        layout.pop("dp", None)
    return out


def _mfus(document: dict[str, Any], counts: list[int]) -> list[float]:
    values = []
    for gpus in counts:
        try:
            values.append(float(solve(_at(document, gpus))["step"]["mfu"]))
        except ScenarioError:  # a count the layout cannot divide: not part of the property
            continue
    return values


def _assert_non_increasing(values: list[float]) -> None:
    assert len(values) >= 2
    for before, after in itertools.pairwise(values):
        assert after <= before * (1 + 1e-12), values


@pytest.mark.parametrize("series", SERIES)
def test_corpus_strong_series_never_gain_mfu(series: str) -> None:
    members = sorted((r for r in RUNS if r.series == series), key=lambda r: r.scenario["cluster"]["gpus"])
    counts = sorted({int(r.scenario["cluster"]["gpus"]) for r in members})
    first = members[0].scenario
    values = _mfus(first, counts)
    if len(values) < len(counts):
        # The batch cannot be split at the first run's layout on more GPUs (the series itself shrinks the
        # microbatch, or widens tensor parallelism to keep the data-parallel degree): each count takes those of
        # its own run, everything else from the first run.
        values = []
        for run in members:
            document = _at(first, int(run.scenario["cluster"]["gpus"]))
            own = run.scenario["training"]["layout"]
            for key in ("microbatch_seqs", "tp", "sequence_parallel"):
                if key in own:
                    document["training"]["layout"][key] = own[key]
            values.append(float(solve(document)["step"]["mfu"]))
    _assert_non_increasing(values)


def test_synthetic_strong_series_never_gains_mfu() -> None:
    document = {
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": "dgx-h100", "gpus": 256},
        "training": {
            "seq_len": 8192,
            "global_batch_tokens": 16 * 1024 * 1024,
            "layout": {"tp": 8, "pp": 4, "microbatch_seqs": 1, "schedule": "1f1b"},
        },
    }
    _assert_non_increasing(_mfus(document, [256, 512, 1024, 2048, 4096, 8192, 16384]))
