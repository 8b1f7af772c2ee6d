"""Sweeps: ranges, limits refused before any work, one row per point with its best layout, the front."""

from __future__ import annotations

import copy

import pytest

from solvers import sweep as sweep_module
from solvers.errors import ScenarioError
from solvers.sweep import (
    MAX_SWEEP_POINTS,
    plan_sweep,
    point_document,
    range_values,
    sweep_document,
    sweep_front,
)

BASE = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "total_tokens": 1.0e11},
    "search": {"space": {"zero_stage": [1], "recompute": ["selective"], "grad_reduce_dtype": ["bf16"]}},
}


def with_sweep(**sweep: object) -> dict:
    doc = copy.deepcopy(BASE)
    doc["sweep"] = sweep
    return doc


def test_ranges() -> None:
    assert range_values({"start": 25, "stop": 100, "step": 25}, path="r") == (25, 50, 75, 100)
    assert range_values({"start": 1024, "stop": 8192, "factor": 2}, path="r") == (1024, 2048, 4096, 8192)
    assert range_values({"start": 0.1, "stop": 0.3, "step": 0.1}, path="r") == pytest.approx((0.1, 0.2, 0.3))
    with pytest.raises(ScenarioError) as info:
        range_values({"start": 1, "stop": 2, "step": 1, "factor": 2}, path="sweep.axes[0].range")
    assert info.value.first.path == "sweep.axes[0].range"
    with pytest.raises(ScenarioError) as info:
        range_values({"start": 4, "stop": 2, "step": 1}, path="sweep.axes[0].range")
    assert info.value.first.path == "sweep.axes[0].range.step"


def test_too_many_points_is_refused_before_any_work(monkeypatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("no point may be searched")

    monkeypatch.setattr(sweep_module, "search_resolved", refuse)
    doc = with_sweep(
        axes=[
            {"field": "cluster.gpus", "range": {"start": 8, "stop": 8 * 101, "step": 8}},
            {
                "field": "economics.infra_multiplier",
                "values": [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9],
            },
        ]
    )
    with pytest.raises(ScenarioError) as info:
        sweep_document(doc)
    assert info.value.first.path == "sweep.axes"
    assert f"{MAX_SWEEP_POINTS:,}" in info.value.first.message
    assert "cluster.gpus (101)" in info.value.first.message


def test_sweep_spec_errors_name_the_field() -> None:
    with pytest.raises(ScenarioError) as info:
        plan_sweep(with_sweep(axes=[{"field": "training.layout.tp", "values": [1, 2]}]))
    assert info.value.first.path == "sweep.axes[0].field"
    with pytest.raises(ScenarioError) as info:
        plan_sweep(with_sweep(axes=[{"field": "gpus", "values": [1]}]))
    assert info.value.first.path == "sweep.axes[0].field"
    with pytest.raises(ScenarioError) as info:
        plan_sweep(with_sweep(axes=[{"field": "cluster.gpus", "values": [8, 16]}], mode="zip", colour=1))
    assert info.value.first.path == "sweep.colour"
    with pytest.raises(ScenarioError) as info:
        plan_sweep(
            with_sweep(
                axes=[
                    {"field": "cluster.gpus", "values": [8, 16]},
                    {"field": "site.region", "values": ["quebec"]},
                ],
                mode="zip",
            )
        )
    assert info.value.first.path == "sweep.mode"


def test_point_document_sets_nested_fields_without_touching_the_base() -> None:
    base = {"cluster": {"scale_out": "roce-400g"}}
    doc = point_document(base, {"cluster.scale_out.bandwidth_gb_s": 100, "site.region": "iceland"})
    assert doc == {
        "cluster": {"scale_out": {"preset": "roce-400g", "bandwidth_gb_s": 100}},
        "site": {"region": "iceland"},
    }
    assert base == {"cluster": {"scale_out": "roce-400g"}}


def test_sweep_rows_best_layouts_and_front() -> None:
    seen: list[tuple[int, int]] = []
    doc = with_sweep(
        axes=[
            {"field": "cluster.gpus", "values": [32, 64, 60]},
            {"field": "site.region", "values": ["quebec", "poland"]},
        ],
        pareto=["wall_clock_days", "total_usd", "total_kgco2e"],
    )
    out = sweep_document(doc, progress=lambda done, total: seen.append((done, total)))
    assert out["points"] == 6 and len(out["rows"]) == 6
    assert seen[-1] == (6, 6)
    by_point = {(r["point"]["cluster.gpus"], r["point"]["site.region"]): r for r in out["rows"]}
    # 60 GPUs in 8-GPU nodes is not a whole number of nodes: that point fails with the field named
    bad = by_point[(60, "quebec")]
    assert "error" in bad and bad["error"]["path"].startswith("cluster")
    assert out["failed"] == 2 and out["solved"] == 4
    fast, slow = by_point[(64, "quebec")], by_point[(32, "quebec")]
    assert fast["best"]["metrics"]["wall_clock_days"] < slow["best"]["metrics"]["wall_clock_days"]
    # same layouts and times in Poland, more carbon
    assert by_point[(64, "poland")]["best"]["layout"] == fast["best"]["layout"]
    assert (
        by_point[(64, "poland")]["best"]["metrics"]["total_kgco2e"] > fast["best"]["metrics"]["total_kgco2e"]
    )
    front = out["pareto"]
    assert front and all("best" in out["rows"][i] for i in front)
    assert sweep_front(out["rows"], out["pareto_objectives"]) == front
    names = out["pareto_objectives"]
    points = [[out["rows"][i]["best"]["metrics"][n] for n in names] for i in front]
    for a in points:
        assert not any(all(x <= y for x, y in zip(b, a, strict=True)) and b != a for b in points)
    # the lowest-carbon point cannot be dominated on a front that includes carbon
    lowest = min(
        (i for i, r in enumerate(out["rows"]) if "best" in r),
        key=lambda i: out["rows"][i]["best"]["metrics"]["total_kgco2e"],
    )
    assert lowest in front


def test_sweep_main_exit_codes(tmp_path) -> None:
    import io
    import json

    from solvers.cli import sweep_main

    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(with_sweep(axes=[{"field": "cluster.gpus", "values": [32, 64]}])))
    out, err = io.StringIO(), io.StringIO()
    assert sweep_main([str(path), "--compact"], stdout=out, stderr=err) == 0
    assert json.loads(out.getvalue())["solved"] == 2
    path.write_text(json.dumps(with_sweep(axes=[{"field": "cluster.gpus", "values": [32, 60]}])))
    out, err = io.StringIO(), io.StringIO()
    assert sweep_main([str(path)], stdout=out, stderr=err) == 1
    out, err = io.StringIO(), io.StringIO()
    path.write_text(json.dumps(with_sweep(axes=[{"field": "cluster.gpus"}])))
    assert sweep_main([str(path)], stdout=out, stderr=err) == 2
    assert "sweep.axes[0]" in err.getvalue()
