"""Sources at one configuration (solvers.source_agreement): the key, the floor and the groups."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.source_agreement import configuration_key, format_matched, matched_configurations, weighted_floor

BASE: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "cluster": {"node": "dgx-h100", "gpus": 64},
    "site": {"region": "quebec"},
    "training": {
        "seq_len": 8192,
        "global_batch_seqs": 64,
        "layout": {"tp": 8, "pp": 2, "zero_stage": 1},
    },
}


def _variant(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = doc
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return doc


def test_gpus_batch_fabric_efficiency_site_and_labels_do_not_change_the_configuration() -> None:
    key = configuration_key(BASE)
    same = _variant(
        cluster__gpus=128,
        cluster__scale_out="infiniband-xdr",
        training__global_batch_seqs=256,
        training__efficiency={"overlap": {"tp": 0.5}},
        site__region="iceland",
        name="another label",
    )
    assert configuration_key(same) == key


@pytest.mark.parametrize(
    "changes",
    [
        {"training__layout": {"tp": 4, "pp": 2, "zero_stage": 1}},
        {"training__precision": "fp8"},
        {"training__seq_len": 4096, "training__global_batch_seqs": 128},
        {"cluster__node": "dgx-b200"},
        {"model": {"preset": "llama3-8b"}},
    ],
)
def test_the_layout_precision_sequence_accelerator_and_model_do(changes: dict[str, Any]) -> None:
    assert configuration_key(_variant(**changes)) != configuration_key(BASE)


def test_weighted_floor_worked_examples() -> None:
    assert weighted_floor([4.0, -1.0], [1, 1]) == 2.5
    assert weighted_floor([4.0, -1.0], [3, 1]) == 1.25
    assert weighted_floor([2.0], [5]) == 0.0
    with pytest.raises(ValueError, match="weights"):
        weighted_floor([1.0, 2.0], [1])
    with pytest.raises(ValueError, match="weights"):
        weighted_floor([1.0], [0])


def _row(run_id: str, source: str, error: float, gpus: int = 64, published: float = 0.4) -> dict[str, Any]:
    return {
        "id": run_id,
        "source": source,
        "gpus": gpus,
        "held_out": {"error_points": error, "mfu_published": published},
    }


def test_a_group_needs_two_sources_and_gives_its_gap_and_floor() -> None:
    scenarios = {
        "a1": BASE,
        "a2": _variant(cluster__gpus=128, training__global_batch_seqs=128),
        "b1": _variant(cluster__gpus=256),
        "c1": _variant(training__precision="fp8"),  # another configuration, one source: no group
        "c2": _variant(training__precision="fp8", cluster__gpus=128),
    }
    rows = [
        _row("a1", "a", 3.0),
        _row("a2", "a", 5.0, gpus=128),
        _row("b1", "b", -2.0, gpus=256, published=0.5),
        _row("c1", "c", 9.0),
        _row("c2", "c", 9.0, gpus=128),
    ]
    doc = matched_configurations(scenarios, rows)
    assert len(doc["groups"]) == 1
    group = doc["groups"][0]
    assert group["runs"] == ["a1", "a2", "b1"]
    assert [(s["source"], s["runs"], s["gpus"]) for s in group["sources"]] == [
        ("a", 2, [64, 128]),
        ("b", 1, [256]),
    ]
    assert group["sources"][1]["published_mfu_mean"] == 0.5
    assert group["gap_points"] == 6.0  # source means +4 and -2
    assert group["floor_points"] == 2.0  # c = +4: (2 x 0 + 1 x 6) / 3
    assert group["held_out_mean_abs_points"] == pytest.approx(10.0 / 3.0)
    assert doc["summary"] == {
        "groups": 1,
        "runs": 3,
        "floor_points": 2.0,
        "held_out_points": pytest.approx(10.0 / 3.0),
        "largest_gap_points": 6.0,
    }
    text = "\n".join(format_matched(doc))
    assert "1 groups, 3 runs" in text and "gap 6.0, floor 2.0" in text and "a (2 at 64,128 GPUs)" in text


@given(
    st.lists(
        st.lists(st.floats(min_value=-20.0, max_value=20.0, allow_nan=False), min_size=1, max_size=4),
        min_size=1,
        max_size=5,
    )
)
def test_the_floor_lies_between_zero_and_both_the_error_it_bounds_and_the_gap(
    errors: list[list[float]],
) -> None:
    means = [sum(e) / len(e) for e in errors]
    weights = [len(e) for e in errors]
    floor = weighted_floor(means, weights)
    mean_abs = sum(abs(x) for e in errors for x in e) / sum(weights)
    assert 0.0 <= floor <= mean_abs + 1e-9
    assert floor <= max(means) - min(means) + 1e-9
