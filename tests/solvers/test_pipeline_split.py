"""The scenario field ``training.pipeline_split`` (how layers are assigned to pipeline stages) and its use by
the ``pipeline_ends`` effect."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.effects import pipeline_stages
from solvers.entry import solve
from solvers.errors import ScenarioError
from solvers.inputs.fields import TABLE
from solvers.specs import PIPELINE_SPLITS

# Nemotron-4 340B as DGX Cloud Benchmarking 25.05 ran it on GB200 (corpus/dgxc-benchmarking-2505.yaml).
DOC: dict[str, Any] = {
    "model": {
        "name": "Nemotron-4 340B",
        "layers": 96,
        "hidden": 18432,
        "ffn_hidden": 73728,
        "heads": 96,
        "kv_heads": 8,
        "vocab": 256000,
        "gated_mlp": False,
        "tied_embeddings": False,
        "dropout": False,
    },
    "cluster": {"node": "gb200-nvl72", "gpus": 128, "gpus_per_node": 64},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 32,
        "precision": "bf16",
        "layout": {
            "tp": 8,
            "pp": 4,
            "cp": 1,
            "microbatch_seqs": 1,
            "schedule": "interleaved",
            "virtual_stages": 12,
            "sequence_parallel": True,
        },
    },
}


def _step(**training: Any) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    for key, value in training.items():
        if key == "layout":
            doc["training"]["layout"].update(value)
        else:
            doc["training"][key] = value
    return dict(solve(doc, ranges=False)["step"])


def test_the_field_defaults_to_balanced() -> None:
    row = TABLE["training.pipeline_split"]
    assert row.default == "balanced" and tuple(row.choices) == PIPELINE_SPLITS == ("balanced", "even")
    assert _step() == _step(pipeline_split="balanced")


def test_an_unknown_split_is_refused_with_the_field_path() -> None:
    doc = copy.deepcopy(DOC)
    doc["training"]["pipeline_split"] = "uneven"
    with pytest.raises(ScenarioError) as caught:
        solve(doc, ranges=False)
    assert [e.path for e in caught.value.errors] == ["training.pipeline_split"]


def test_an_even_split_puts_the_output_layer_on_top_of_the_last_stage() -> None:
    """Nemotron-4 340B, p = 4: the output layer is 1.29 layer equivalents; balanced, the planner hides it
    (factor 1.0); even, the last stage holds 24 + 1.29 against the spread's 24.32: 1.040 more compute."""
    balanced, even = _step(), _step(pipeline_split="even")
    assert even["compute_s"] / balanced["compute_s"] == pytest.approx(1.040, abs=0.001)
    assert even["step_s"] > balanced["step_s"]


def test_without_pipeline_stages_or_the_switch_the_split_changes_nothing() -> None:
    single = {"layout": {"pp": 1, "schedule": "1f1b", "virtual_stages": 1, "tp": 8}}
    assert _step(pipeline_split="even", **single) == _step(**single)
    off = {"efficiency": {"effects": {"pipeline_ends": False}}}
    assert _step(pipeline_split="even", **off) == _step(**off)


@settings(max_examples=200, deadline=None)
@given(
    layers=st.integers(1, 200),
    pp=st.integers(2, 64),
    share=st.floats(0.0, 0.5),
    ratio=st.floats(1.0, 2.0),
)
def test_an_even_split_is_never_faster_than_a_balanced_one(
    layers: int, pp: int, share: float, ratio: float
) -> None:
    """A planner can always keep the even assignment, so balancing never makes the busiest stage heavier."""
    stages = np.array([pp])
    balanced = float(
        pipeline_stages(layers=layers, pp=stages, output_layer_share=share, output_rate_ratio=ratio).ends[0]
    )
    even = float(
        pipeline_stages(
            layers=layers, pp=stages, output_layer_share=share, output_rate_ratio=ratio, even_split=True
        ).ends[0]
    )
    assert even >= balanced - 1e-12
