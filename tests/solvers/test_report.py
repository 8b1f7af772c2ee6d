"""The report document (solvers.report): contract shape, hash, warnings, errors, no NaN."""

from __future__ import annotations

import json
import math
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import engine, solve, solve_many, solve_resolved
from solvers.canonical import canonical_hash
from solvers.entry import SOLVER_VERSION
from solvers.errors import ScenarioError, SolverInternalError
from solvers.inputs import resolve
from solvers.published import load_example
from solvers.report import _plain_checked, reason_to_error
from tests.profiles import examples

CONTRACT_KEYS = {
    "schema_version",
    "solver_version",
    "input_hash",
    "layout",
    "step",
    "traffic",
    "memory",
    "reliability",
    "schedule",
    "energy",
    "carbon",
    "tco",
    "assumptions",
    "warnings",
}
DIMS = {"tp", "cp", "pp", "dp", "ep"}


def doc() -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": "dgx-h100", "gpus": 512},
        "site": {"region": "quebec"},
        "training": {
            "global_batch_seqs": 512,
            "total_tokens": 1.0e12,
            "layout": {"tp": 8, "pp": 4, "microbatch_seqs": 1, "zero_stage": 1, "recompute": "selective"},
        },
    }


def walk_numbers(value: Any, path: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk_numbers(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk_numbers(v, f"{path}[{i}]")
    elif isinstance(value, float):
        yield path, value


def test_report_has_every_contract_field() -> None:
    report = solve(doc())
    assert set(report) >= CONTRACT_KEYS
    assert report["schema_version"] == 1 and report["solver_version"] == SOLVER_VERSION
    assert {
        "tp",
        "pp",
        "cp",
        "ep",
        "dp",
        "microbatch_seqs",
        "microbatches",
        "schedule",
        "virtual_stages",
        "zero_stage",
        "recompute",
        "sequence_parallel",
    } <= set(report["layout"])
    step = report["step"]
    for key in (
        "model_flops_per_token",
        "compute_s",
        "bubble_s",
        "bubble_fraction",
        "step_s",
        "tokens_per_s",
        "mfu",
        "mfu_bf16",
        "hfu",
    ):
        assert isinstance(step[key], float), key
    assert set(step["comm_s"]) == DIMS and set(step["exposed_comm_s"]) == DIMS
    assert set(report["traffic"]["bytes_per_gpu"]) == DIMS
    assert "nic_duty_cycle" in report["traffic"]
    assert {
        "weights_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "total_bytes",
        "capacity_bytes",
        "fits",
    } <= set(report["memory"])
    rel = report["reliability"]
    assert {
        "node_mtbf_h",
        "cluster_mtbf_h",
        "expected_failures",
        "checkpoint_bytes",
        "checkpoint_write_s",
        "checkpoint_interval_h",
        "lost_h",
        "goodput",
    } <= set(rel)
    assert {"checkpoint_writes", "rework", "restarts"} <= set(rel["lost_h"])
    assert {"ideal_days", "wall_clock_days"} <= set(report["schedule"])
    assert {"it_kwh", "facility_kwh"} <= set(report["energy"])
    assert {"operational_kgco2e", "embodied_kgco2e", "total_kgco2e", "water_l"} <= set(report["carbon"])
    assert {
        "capex_usd",
        "maintenance_usd",
        "electricity_usd",
        "total_usd",
        "usd_per_million_tokens",
        "cloud_usd",
    } <= set(report["tco"])


def test_layout_echoes_the_scenario_and_resolved_dp() -> None:
    layout = solve(doc())["layout"]
    assert (layout["tp"], layout["pp"], layout["dp"]) == (8, 4, 16)
    assert layout["microbatches"] == 512 // 16
    assert layout["recompute"] == "selective"


def test_input_hash_is_the_canonical_hash_of_the_resolved_scenario() -> None:
    report = solve(doc())
    assert report["input_hash"] == canonical_hash(resolve(doc()).document)
    renamed = {**doc(), "name": "another label"}
    assert solve(renamed)["input_hash"] == report["input_hash"]
    changed = doc()
    changed["site"]["region"] = "poland"
    assert solve(changed)["input_hash"] != report["input_hash"]


def test_report_is_finite_json() -> None:
    report = solve(doc())
    json.dumps(report, allow_nan=False)
    for path, value in walk_numbers(report):
        assert math.isfinite(value), path


def test_step_and_ledger_agree() -> None:
    report = solve(doc())
    step = report["step"]
    assert step["tokens_per_s"] == pytest.approx(512 * 8192 / step["step_s"])
    assert report["schedule"]["ideal_days"] == pytest.approx(
        1.0e12 / (512 * 8192) * step["step_s"] / 86400, rel=0.01
    )
    assert 0 < report["reliability"]["goodput"] <= 1


def test_assumptions_come_from_schema_engine_conventions_and_ledger() -> None:
    keys = [a["key"] for a in solve(doc())["assumptions"]]
    assert "model.params" in keys and "cluster.scale_out.achievable_factor" in keys
    assert "step.model_flops_per_token" in keys
    assert any(k.startswith(("reliability.", "checkpoint.", "tco.", "carbon.")) for k in keys)


def test_plan_that_does_not_fit_is_a_warning_not_an_error() -> None:
    d = doc()
    d["training"]["layout"] = {"tp": 1, "pp": 1, "zero_stage": 0}
    report = solve(d)
    assert report["memory"]["fits"] is False
    assert any(w.startswith("memory:") and "memory.fits is false" in w for w in report["warnings"])


def test_engine_rule_becomes_a_scenario_error_with_a_path() -> None:
    d = doc()
    d["training"]["global_batch_seqs"] = 100  # not a multiple of dp (16) x microbatch (1)
    with pytest.raises(ScenarioError) as info:
        solve(d)
    assert info.value.errors[0].path.startswith("training.")
    assert info.value.errors[0].message


def test_a_layout_that_breaks_an_engine_rule_resolves_and_fails_to_solve() -> None:
    """``resolve`` evaluates a given layout's step once and keeps the rule it breaks; ``solve_resolved``
    raises it as ``solve`` does, every time (the held ``Resolved`` is only read)."""
    d = doc()
    d["training"]["global_batch_seqs"] = 100
    resolved = resolve(d)
    assert resolved.step is None and resolved.layout_rule
    with pytest.raises(ScenarioError) as held:
        solve_resolved(resolved)
    with pytest.raises(ScenarioError) as again:
        solve_resolved(resolved)
    with pytest.raises(ScenarioError) as fresh:
        solve(d)
    assert held.value.as_dict() == again.value.as_dict() == fresh.value.as_dict()


def test_a_held_step_is_the_engine_row_of_the_layout() -> None:
    resolved = resolve(doc())
    assert resolved.layout is not None and resolved.step is not None
    row, rule = engine.evaluate_one(
        model=resolved.model, cluster=resolved.cluster, training=resolved.training, layout=resolved.layout
    )
    assert rule is None and row == dict(resolved.step)
    auto = doc()
    auto["training"]["layout"] = "auto"
    held = resolve(auto)
    assert held.layout is None and held.step is None and held.layout_rule is None


def test_auto_layout_picks_a_feasible_layout() -> None:
    d = doc()
    d["training"]["layout"] = "auto"
    report = solve(d)
    search = report["search"]
    assert search["candidates"] >= search["evaluated"] >= search["feasible"] >= 1
    assert report["memory"]["fits"] is True
    layout = report["layout"]
    assert layout["tp"] * layout["pp"] * layout["cp"] * layout["dp"] == 512


def test_solve_is_deterministic() -> None:
    assert solve(doc()) == solve(doc())


def test_solve_many_keeps_order_and_reports_errors_in_place() -> None:
    bad = doc()
    bad["cluster"]["gpus"] = 0
    out = solve_many([doc(), bad, doc()])
    assert len(out) == 3
    assert "input_hash" in out[0] and "input_hash" in out[2]
    assert cast(dict[str, Any], out[1])["error"]["path"] == "cluster.gpus"


def test_reason_to_error_parses_engine_rule_text() -> None:
    err = reason_to_error("training.layout.tp: tp*cp*pp (=96) must divide gpus (=16384)")
    assert err.path == "training.layout.tp"
    assert err.message.startswith("tp*cp*pp")
    loose = reason_to_error("something odd happened")
    assert loose.path == "training.layout"


def test_non_finite_value_is_an_internal_error_naming_the_field() -> None:
    with pytest.raises(SolverInternalError, match=r"step\.mfu"):
        _plain_checked({"step": {"mfu": float("nan")}}, "")
    with pytest.raises(SolverInternalError, match=r"x\[1\]"):
        _plain_checked({"x": [1.0, float("inf")]}, "")


def test_auto_layout_counts_rejections_by_rule() -> None:
    d = doc()
    d["training"]["layout"] = "auto"
    search = solve(d)["search"]
    rejected = search["rejected"]
    assert all(isinstance(k, str) and isinstance(v, int) and v > 0 for k, v in rejected.items())
    # Every candidate is either feasible or counted under exactly one rule (memory included).
    assert search["candidates"] - search["feasible"] == sum(rejected.values())
    assert any(k.startswith("memory.fits") for k in rejected) or search["evaluated"] == search["feasible"]


def test_auto_layout_that_cannot_fit_is_an_error() -> None:
    d = {
        "model": {"preset": "llama3-405b"},
        "cluster": {"node": "dgx-a100-40gb", "gpus": 8},
        "training": {"layout": "auto"},
    }
    with pytest.raises(ScenarioError) as info:
        solve(d)
    assert info.value.errors[0].path == "training.layout"
    assert "fits in memory" in info.value.errors[0].message


@settings(max_examples=examples(60), deadline=None)
@given(
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4, 8]),
    micro=st.sampled_from([1, 2, 4]),
    zero=st.integers(0, 3),
    recompute=st.sampled_from(["none", "selective", "full"]),
    schedule=st.sampled_from(["gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe"]),
    region=st.sampled_from(["quebec", "poland", None]),
    total=st.one_of(st.none(), st.floats(1e9, 1e13)),
    job_days=st.one_of(st.none(), st.floats(0.5, 400)),
)
def test_any_report_is_finite_or_a_scenario_error(
    tp: int,
    pp: int,
    micro: int,
    zero: int,
    recompute: str,
    schedule: str,
    region: str | None,
    total: float | None,
    job_days: float | None,
) -> None:
    d = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "site": {"region": region},
        "training": {
            "global_batch_seqs": 512,
            "total_tokens": total,
            "layout": {
                "tp": tp,
                "pp": pp,
                "microbatch_seqs": micro,
                "zero_stage": zero,
                "recompute": recompute,
                "schedule": schedule,
                "virtual_stages": 2 if schedule == "interleaved" else 1,
            },
        },
        "economics": {"job_days": job_days},
    }
    try:
        report = solve(d)
    except ScenarioError as exc:
        assert exc.errors[0].path.startswith("training.")
        return
    json.dumps(report, allow_nan=False)
    assert report["step"]["step_s"] > 0


@pytest.mark.parametrize("name", ["deepseek-v3-2048xh800.yaml", "mixtral-8x7b-256xh200.yaml"])
def test_a_preset_names_itself_once_in_each_assumption_source(name: str) -> None:
    """A field given by a model preset cites the preset once: ``model preset 'x': <source>``."""
    document = load_example(name)
    sources = [entry["source"] for entry in solve(document, ranges=False)["assumptions"]]
    assert sources
    assert all(source.count("model preset '") <= 1 for source in sources), [
        s for s in sources if s.count("model preset '") > 1
    ]
