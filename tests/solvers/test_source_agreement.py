"""Sources at one configuration (solvers.source_agreement): the key, the floor and the groups."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvers.source_agreement import (
    configuration_key,
    format_matched,
    matched_configurations,
    run_keys,
    spread_floor,
)

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


def test_the_same_run_also_shares_gpus_batch_and_fabric() -> None:
    configuration, same_run = run_keys(BASE)
    relabelled = _variant(site__region="iceland", training__efficiency={"overlap": {"tp": 0.5}}, name="x")
    assert run_keys(relabelled) == (configuration, same_run)
    for changes in (
        {"cluster__gpus": 128},
        {"training__global_batch_seqs": 128},
        {"cluster__scale_out": "infiniband-xdr"},
    ):
        other = run_keys(_variant(**changes))
        assert other[0] == configuration and other[1] != same_run, changes


@pytest.mark.parametrize(
    "changes",
    [
        {"training__layout": {"tp": 4, "pp": 2, "zero_stage": 1}},
        {"training__layout": {"tp": 8, "pp": 2, "zero_stage": 3}},
        {"training__layout": {"tp": 8, "pp": 2, "zero_stage": 1, "microbatch_seqs": 2}},
        {"training__precision": "fp8"},
        {"training__seq_len": 4096, "training__global_batch_seqs": 128},
        {"cluster__node": "dgx-b200"},
        {"model": {"preset": "llama3-8b"}},
    ],
)
def test_the_layout_precision_sequence_accelerator_and_model_do(changes: dict[str, Any]) -> None:
    assert configuration_key(_variant(**changes)) != configuration_key(BASE)


def test_spread_floor_worked_examples() -> None:
    assert spread_floor([4.0, -1.0]) == 2.5
    assert spread_floor([4.0, 4.0, 4.0, -1.0]) == 1.25
    assert spread_floor([2.0]) == 0.0
    assert spread_floor([38.8, 39.1]) == pytest.approx(0.15)


@pytest.mark.parametrize("values", [[], [math.nan], [1.0, math.inf]])
def test_spread_floor_refuses_no_values_and_non_finite_ones(values: list[float]) -> None:
    with pytest.raises(ValueError, match="finite"):
        spread_floor(values)


@given(
    st.lists(st.floats(-20.0, 20.0, allow_nan=False), min_size=1, max_size=12),
    st.floats(-30.0, 30.0, allow_nan=False),
)
def test_the_floor_is_the_least_mean_distance(values: list[float], c: float) -> None:
    floor = spread_floor(values)
    assert floor <= sum(abs(v - c) for v in values) / len(values) + 1e-9
    # the minimum over the values themselves (where a piecewise linear convex sum has one) is the same
    assert floor == pytest.approx(
        min(sum(abs(v - x) for v in values) for x in values) / len(values), abs=1e-9
    )


def _row(run_id: str, source: str, error: float, gpus: int = 64, published: float = 0.4) -> dict[str, Any]:
    return {
        "id": run_id,
        "source": source,
        "gpus": gpus,
        "held_out": {"error_points": error, "mfu_published": published},
    }


def test_groups_need_two_sources_and_same_runs_give_the_published_spread() -> None:
    scenarios = {
        "a1": BASE,
        "a2": _variant(cluster__gpus=128, training__global_batch_seqs=128),
        "b1": _variant(
            cluster__gpus=128, training__global_batch_seqs=128, site__region="iceland"
        ),  # a2's run
        "b2": _variant(cluster__gpus=256),
        "c1": _variant(training__precision="fp8"),  # another configuration, one source: no group
        "c2": _variant(training__precision="fp8", cluster__gpus=128),
    }
    rows = [
        _row("a1", "a", 3.0),
        _row("a2", "a", 5.0, gpus=128, published=0.40),
        _row("b1", "b", -1.0, gpus=128, published=0.43),
        _row("b2", "b", -3.0, gpus=256, published=0.5),
        _row("c1", "c", 9.0),
        _row("c2", "c", 9.0, gpus=128),
    ]
    doc = matched_configurations(scenarios, rows)
    assert len(doc["groups"]) == 1
    group = doc["groups"][0]
    assert group["runs"] == ["a1", "a2", "b1", "b2"]
    assert [(s["source"], s["runs"], s["gpus"]) for s in group["sources"]] == [
        ("a", 2, [64, 128]),
        ("b", 2, [128, 256]),
    ]
    assert group["sources"][1]["published_mfu_mean"] == pytest.approx(0.465)
    assert group["gap_points"] == 6.0  # source means +4 and -2
    assert group["held_out_mean_abs_points"] == 3.0
    assert len(doc["same_runs"]) == 1
    same = doc["same_runs"][0]
    assert same["runs"] == ["a2", "b1"] and same["sources"] == ["a", "b"] and same["gpus"] == 128
    assert same["published_mfu"] == [0.40, 0.43]
    assert same["floor_points"] == pytest.approx(1.5)  # 40% and 43%: any c between them, mean distance 1.5
    assert same["held_out_mean_abs_points"] == 3.0
    assert doc["summary"] == {
        "groups": 1,
        "runs": 4,
        "largest_gap_points": 6.0,
        "held_out_points": 3.0,
        "same_run_sets": 1,
        "same_run_runs": 2,
        "same_run_floor_points": pytest.approx(1.5),
        "same_run_held_out_points": 3.0,
    }
    text = "\n".join(format_matched(doc))
    assert "1 groups, 4 runs" in text and "gap 6.0: a (2 at 64,128 GPUs)" in text
    assert "1 sets, 2 runs; any model errs on them by at least 1.50 points" in text
    assert "128 GPUs, a / b: 40.0%, 43.0% (floor 1.50)" in text


def test_without_same_runs_the_section_says_so() -> None:
    scenarios = {"a1": BASE, "b1": _variant(cluster__gpus=128)}
    doc = matched_configurations(scenarios, [_row("a1", "a", 1.0), _row("b1", "b", 2.0, gpus=128)])
    assert doc["summary"]["same_run_sets"] == 0 and doc["summary"]["same_run_floor_points"] == 0.0
    assert format_matched(doc)[-1].endswith("batch and fabric): none")
