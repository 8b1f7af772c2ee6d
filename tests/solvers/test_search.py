"""Design-space search: enumeration against naive loops, counts, ranking, the single-solve consistency
acceptance (1,000 random layouts) and Llama 3 405B's published layout as a baseline."""

from __future__ import annotations

import copy
import dataclasses
import io
import itertools
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import engine, solve
from solvers.cli import search_main
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.report import compose_report
from solvers.search import (
    MAX_TOP,
    R_MEMORY,
    STEP_TERMS,
    count_layouts,
    default_space,
    enumerate_layouts,
    explain_difference,
    layout_dict,
    ledger_for_row,
    ledger_metrics,
    parse_search_request,
    search_resolved,
    search_space,
    space_from_document,
    take,
)
from solvers.search.document import search_document
from solvers.specs import RECOMPUTE_CODE, SCHEDULE_CODE
from tests.profiles import examples

# Llama 3 (2024) Table 4: 405B on 16,384 H100, TP8 CP1 PP16 DP128, 16M-token batch of 8,192-token sequences.
LLAMA3_405B: dict[str, Any] = {
    "name": "Llama 3 405B on 16,384 H100",
    "model": {"preset": "llama3-405b"},
    "cluster": {"node": "dgx-h100", "gpus": 16384, "scale_out": "roce-400g"},
    "training": {
        "seq_len": 8192,
        "global_batch_tokens": 16_777_216,
        "precision": "bf16",
        "layout": {
            "tp": 8,
            "pp": 16,
            "cp": 1,
            "microbatch_seqs": 1,
            "schedule": "interleaved",
            "virtual_stages": 2,
            "sequence_parallel": True,
            "zero_stage": 3,
            "fsdp_reshard_after_forward": False,
            "grad_reduce_dtype": "fp32",
            "recompute": "none",
        },
        "efficiency": {"overlap": {"dp": 0.9}},
    },
    "economics": {"job_days": 54},
}

SMALL: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "layout": "auto"},
}

MOE: dict[str, Any] = {
    "model": {"preset": "mixtral-8x7b"},
    "cluster": {"accelerator": "h100-sxm", "gpus": 128, "gpus_per_node": 8},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 512, "layout": "auto"},
}


def auto(document: dict) -> dict:
    doc = copy.deepcopy(document)
    doc["training"]["layout"] = "auto"
    return doc


@pytest.fixture(scope="module")
def llama() -> object:
    return resolve(auto(LLAMA3_405B))


def specs(resolved: object) -> dict:
    return {"model": resolved.model, "cluster": resolved.cluster, "training": resolved.training}  # type: ignore[attr-defined]


def rows_as_tuples(batch) -> set[tuple]:
    fields = (
        "tp",
        "pp",
        "cp",
        "ep",
        "dp",
        "microbatch_seqs",
        "schedule",
        "virtual_stages",
        "sequence_parallel",
        "zero_stage",
        "fsdp_reshard_after_forward",
        "expert_tp",
        "recompute",
        "grad_reduce_fp32",
    )
    return set(zip(*(getattr(batch, f).tolist() for f in fields), strict=True))


def naive_enumeration(resolved, space) -> tuple[set[tuple], int]:
    """The same space and rules with plain loops: the reference the vectorised enumeration must equal."""
    model, cluster, training = resolved.model, resolved.cluster, resolved.training
    seqs = training.global_batch_tokens // training.seq_len
    out: set[tuple] = set()
    candidates = 0
    moe = model.moe is not None
    for tp, cp, pp in itertools.product(space.tp, space.cp, space.pp):
        for ep in space.ep if moe else (1,):
            for etp_opt in space.expert_tp if moe and tp > 1 else (0,):
                for mb in space.microbatch_seqs:
                    scheds = [(s, 1) for s in space.schedule if s != "interleaved"]
                    if "interleaved" in space.schedule:
                        pos = space.schedule.index("interleaved")
                        scheds = (
                            [(s, 1) for s in space.schedule[:pos]]
                            + [("interleaved", v) for v in space.virtual_stages]
                            + [(s, 1) for s in space.schedule[pos + 1 :]]
                        )
                    if pp == 1:
                        scheds = scheds[:1]
                        scheds = [(scheds[0][0], scheds[0][1])]
                    for sched, v in scheds:
                        for sp in space.sequence_parallel if tp > 1 else (False,):
                            for z in space.zero_stage:
                                for reshard in space.fsdp_reshard_after_forward if z == 3 else (True,):
                                    for rc in space.recompute:
                                        for g in space.grad_reduce_dtype:
                                            candidates += 1
                                            mp = tp * cp * pp
                                            if cluster.gpus % mp or model.heads % tp or training.seq_len % cp:
                                                continue
                                            if pp > model.layers:
                                                continue
                                            dp = cluster.gpus // mp
                                            if moe and (model.moe.experts % ep or (dp * cp) % ep):
                                                continue
                                            if seqs % (dp * mb):
                                                continue
                                            m = seqs // (dp * mb)
                                            if sched == "interleaved" and (pp * v > model.layers or m % pp):
                                                continue
                                            if sched == "dualpipe" and (pp % 2 or m < 2 * pp or m % 2):
                                                continue
                                            etp = tp if (etp_opt == 0 or tp == 1) else etp_opt
                                            out.add(
                                                (
                                                    tp,
                                                    pp,
                                                    cp,
                                                    ep,
                                                    dp,
                                                    mb,
                                                    SCHEDULE_CODE[sched],
                                                    v,
                                                    sp,
                                                    z,
                                                    reshard,
                                                    etp,
                                                    RECOMPUTE_CODE[rc],
                                                    g == "fp32",
                                                )
                                            )
    return out, candidates


# ---------------------------------------------------------------------------------------------------------
# enumeration
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("document", [SMALL, MOE], ids=["dense", "moe"])
def test_enumeration_equals_naive_loops(document: dict) -> None:
    resolved = resolve(document)
    space = default_space(**specs(resolved))
    if resolved.model.moe is None:
        space = space_from_document({"zero_stage": [1, 3], "recompute": ["none", "full"]}, default=space)
    else:
        space = space_from_document(
            {"zero_stage": [1], "recompute": ["selective"], "grad_reduce_dtype": ["bf16"]}, default=space
        )
    enum = enumerate_layouts(**specs(resolved), space=space)
    expected, candidates = naive_enumeration(resolved, space)
    got = rows_as_tuples(enum.layouts)
    assert len(got) == len(enum.layouts), "the enumeration produced duplicate layouts"
    assert got == expected
    assert enum.candidates == candidates
    assert enum.candidates == len(enum.layouts) + sum(enum.rejected.values())


def test_enumerated_layouts_pass_the_engine_rules(llama) -> None:
    enum = enumerate_layouts(**specs(llama), space=default_space(**specs(llama)))
    codes, _ = engine.layout_rule_codes(**specs(llama), layouts=enum.layouts)
    assert len(enum.layouts) > 100_000
    assert np.all(codes == 0)


def test_default_space_covers_the_axes(llama) -> None:
    space = default_space(**specs(llama))
    assert {1, 2, 4, 8, 16}.issubset(space.tp)  # within a node and across nodes
    assert 16 in space.pp and 126 in space.pp and 7 in space.pp  # uneven and even stages
    assert 1 in space.cp and 2 in space.cp
    assert set(space.schedule) == {"gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe"}
    moe = resolve(MOE)
    moe_space = default_space(**specs(moe))
    assert moe_space.ep == (1, 2, 4, 8)


def test_the_default_space_keeps_a_stated_fp32_gradient_reduction(llama) -> None:
    """The gradient reduction's dtype is the training's numerics (Llama 3 §3.3.2): a layout stating FP32
    keeps only FP32 in the default space, halving its layouts; BF16, or no layout, keeps both."""
    both = default_space(**specs(llama))
    assert both.grad_reduce_dtype == ("bf16", "fp32")
    assert default_space(**specs(llama), stated_layout={"grad_reduce_dtype": "bf16"}) == both
    kept = default_space(**specs(llama), stated_layout={"tp": 8, "grad_reduce_dtype": "fp32"})
    assert kept == dataclasses.replace(both, grad_reduce_dtype=("fp32",))
    assert 2 * count_layouts(**specs(llama), space=kept) == count_layouts(**specs(llama), space=both)
    # search.space still overrides the default
    assert space_from_document({"grad_reduce_dtype": ["bf16"]}, default=kept).grad_reduce_dtype == ("bf16",)


def test_layout_limit_is_refused_before_any_evaluation(llama, monkeypatch) -> None:
    def refuse(**_: object) -> None:
        raise AssertionError("evaluate must not run")

    monkeypatch.setattr(engine, "evaluate", refuse)
    with pytest.raises(ScenarioError) as info:
        search_resolved(llama, space=search_space(llama, auto(LLAMA3_405B), None), max_layouts=1_000)
    assert info.value.first.path == "search.space"
    assert "1,000" in info.value.first.message


def test_space_errors_name_the_item() -> None:
    resolved = resolve(SMALL)
    base = default_space(**specs(resolved))
    with pytest.raises(ScenarioError) as info:
        space_from_document({"tp": [8, 0], "schedule": ["zigzag"], "colour": [1]}, default=base)
    paths = {e.path for e in info.value.errors}
    assert paths == {"search.space.tp[1]", "search.space.schedule[0]", "search.space.colour"}


# ---------------------------------------------------------------------------------------------------------
# acceptance: the vectorised path and the single-layout path give identical reports
# ---------------------------------------------------------------------------------------------------------


def test_thousand_random_layouts_vectorised_equals_single(llama) -> None:
    enum = enumerate_layouts(**specs(llama), space=default_space(**specs(llama)))
    pick = np.random.default_rng(2024).choice(len(enum.layouts), 1_000, replace=False)
    batch = take(enum.layouts, pick)
    columns = engine.evaluate(**specs(llama), layouts=batch)
    ledger = ledger_metrics(
        ledger_fields=llama.ledger_fields,
        tokens_per_step=float(llama.training.global_batch_tokens),
        step_s=columns.step_s,
        busy=columns.gpu_busy_fraction,
    )
    for i in range(1_000):
        layout = layout_dict(batch, i)
        # engine: a batch of one gives exactly the batch's row
        single = engine.evaluate(**specs(llama), layouts=take(batch, np.array([i])))
        assert single.row(0) == columns.row(i)
        # whole report: the single solve of this layout equals the report composed from the batch row
        document = copy.deepcopy(LLAMA3_405B)
        document["training"]["layout"] = layout
        report = solve(document)
        fixed = resolve(document)
        composed = compose_report(
            resolved=fixed, layout=layout, row=columns.row(i), ledger=ledger_for_row(fixed, columns.row(i))
        )
        assert composed == report
        # the ledger over arrays gives each layout's cost and carbon exactly
        assert report["tco"]["usd_per_million_tokens"] == ledger["usd_per_million_tokens"][i]
        assert report["tco"]["total_usd"] == ledger["total_usd"][i]
        assert report["carbon"]["total_kgco2e"] == ledger["total_kgco2e"][i]


# ---------------------------------------------------------------------------------------------------------
# acceptance: at least as fast as Llama 3's published layout, and why
# ---------------------------------------------------------------------------------------------------------


def test_search_matches_or_beats_llama3_published_layout() -> None:
    out = search_document(LLAMA3_405B, top=3)
    baseline = out["baseline"]
    assert (
        baseline["layout"]["tp"] == 8 and baseline["layout"]["pp"] == 16 and baseline["layout"]["dp"] == 128
    )
    assert out["best"]["step"]["step_s"] <= baseline["step_s"]
    why = baseline["versus_best"]
    # step_s = compute + bubble + exposed exchanges, so the term deltas add up to the step delta
    assert sum(why["delta_s"].values()) == pytest.approx(why["delta_step_s"], rel=1e-9, abs=1e-12)
    assert why["terms_by_impact"][0] in STEP_TERMS
    largest = why["terms_by_impact"][0]
    assert abs(why["delta_s"][largest]) == max(abs(v) for v in why["delta_s"].values())
    print("\nLlama 3 405B, 16,384 H100:", why["summary"])
    # the published layout evaluated by the search is the single solve's number
    assert baseline["step_s"] == solve(LLAMA3_405B)["step"]["step_s"]


def test_search_within_published_parallel_degrees_is_no_slower() -> None:
    """Narrowed to TP8 CP1 PP16, the search is at least as fast as every variant of the published layout
    (recompute none, selective, full) that fits in memory under the same assumptions."""
    doc = copy.deepcopy(LLAMA3_405B)
    doc["search"] = {"space": {"tp": [8], "cp": [1], "pp": [16]}}
    out = search_document(doc, top=0)
    assert out["best"]["layout"]["tp"] == 8 and out["best"]["layout"]["pp"] == 16
    assert out["best"]["memory"]["fits"]
    fitting = []
    for recompute in ("none", "selective", "full"):
        variant = copy.deepcopy(LLAMA3_405B)
        variant["training"]["layout"]["recompute"] = recompute
        report = solve(variant)
        if report["memory"]["fits"]:
            fitting.append(report["step"]["step_s"])
    assert fitting, "no recompute variant of the published layout fits: the comparison would be empty"
    assert out["best"]["step"]["step_s"] <= min(fitting)


# ---------------------------------------------------------------------------------------------------------
# ranking, objectives, output
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["step_s", "usd_per_million_tokens", "total_usd", "total_kgco2e"])
def test_best_is_the_minimum_of_the_objective(objective: str) -> None:
    resolved = resolve(SMALL)
    result = search_resolved(resolved, objective=objective, space=search_space(resolved, SMALL, None))
    values = result.metrics[objective]
    assert values[0] == values.min()
    assert np.all(np.diff(values) >= 0)
    assert result.evaluated - result.feasible == result.rejected.get(R_MEMORY, 0)
    # every ranked layout fits and its metrics are the engine's
    columns = engine.evaluate(**specs(resolved), layouts=result.layouts)
    assert bool(np.all(columns.fits))
    assert np.array_equal(columns.step_s, result.metrics["step_s"])


def test_search_output_follows_the_contract() -> None:
    out = search_document(SMALL, top=4, pareto=["step_s", "memory_bytes"])
    for key in (
        "objective",
        "evaluated",
        "feasible",
        "elapsed_s",
        "rejected",
        "best",
        "alternatives",
        "pareto",
    ):
        assert key in out
    assert out["objective"] == "step_s"
    assert out["best"]["memory"]["fits"] is True
    assert out["best"]["search"]["evaluated"] == out["evaluated"]
    assert 0 < len(out["alternatives"]) <= 4
    steps = [out["best"]["step"]["step_s"]] + [a["step_s"] for a in out["alternatives"]]
    assert steps == sorted(steps)
    front = [(p["metrics"]["step_s"], p["metrics"]["memory_bytes"]) for p in out["pareto"]]
    for a in front:
        assert not any(b[0] <= a[0] and b[1] <= a[1] and b != a for b in front)
    json.dumps(out, allow_nan=False)


def test_explain_difference_names_the_moved_term() -> None:
    base_row = {t: 1.0 for t in STEP_TERMS} | {"step_s": 7.0}
    cand_row = dict(base_row) | {"bubble_s": 0.25, "exposed_comm_s_pp": 1.25, "step_s": 6.5}
    why = explain_difference(
        baseline_layout={"pp": 16, "virtual_stages": 2},
        baseline_row=base_row,
        candidate_layout={"pp": 16, "virtual_stages": 8},
        candidate_row=cand_row,
    )
    assert why["terms_by_impact"] == ["bubble_s", "exposed_comm_s_pp"]
    assert why["layout_changes"] == {"virtual_stages": [2, 8]}
    assert "pipeline bubble -0.750 s" in why["summary"]


def test_request_errors_name_the_field() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_search_request({**SMALL, "search": {"objective": "speed", "top": MAX_TOP + 1, "colour": 1}})
    assert {e.path for e in info.value.errors} == {"search.objective", "search.top", "search.colour"}
    with pytest.raises(ScenarioError) as info:
        parse_search_request(SMALL, pareto=["step_s"])
    assert info.value.first.path == "search.pareto"


def test_search_main_prints_json_and_exit_codes(tmp_path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(SMALL))
    out, err = io.StringIO(), io.StringIO()
    assert search_main([str(path), "--top", "2", "--objective", "total_usd"], stdout=out, stderr=err) == 0
    printed = json.loads(out.getvalue())
    assert printed["objective"] == "total_usd" and len(printed["alternatives"]) <= 2
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO("model: {preset: llama3-8b}\ncluster: {gpus: 0}\n")
    assert search_main(["-"], stdin=stdin, stdout=out, stderr=err) == 2
    assert "cluster.gpus" in err.getvalue() and "Traceback" not in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert search_main([str(tmp_path / "missing.yaml")], stdout=out, stderr=err) == 2
    assert "cannot read" in err.getvalue()


def test_no_fitting_layout_is_an_error_naming_memory() -> None:
    doc = copy.deepcopy(SMALL)
    doc["model"] = {"preset": "llama3-405b"}
    doc["cluster"] = {"accelerator": "h100-sxm", "gpus": 8, "gpus_per_node": 8}
    with pytest.raises(ScenarioError) as info:
        search_document(doc)
    assert info.value.first.path == "training.layout"
    assert "fits in memory" in info.value.first.message


def test_invalid_given_layout_is_reported_and_the_search_still_runs() -> None:
    doc = copy.deepcopy(SMALL)
    doc["training"]["layout"] = {"tp": 3}
    out = search_document(doc, top=1)
    assert out["baseline"]["error"]["path"] == "training.layout.tp"
    assert out["best"]["memory"]["fits"]


def test_count_layouts_matches_the_enumeration(llama) -> None:
    space = default_space(**specs(llama))
    assert count_layouts(**specs(llama), space=space) == len(
        enumerate_layouts(**specs(llama), space=space).layouts
    )


_SMALL_BEST: dict[str, float] = {}


def _small_best_step() -> float:
    if "step_s" not in _SMALL_BEST:
        _SMALL_BEST["step_s"] = float(
            search_resolved(
                resolve(SMALL),
                pareto=("step_s", "memory_bytes"),
                space=search_space(resolve(SMALL), SMALL, None),
            ).metrics["step_s"][0]
        )
    return _SMALL_BEST["step_s"]


@settings(max_examples=examples(15), deadline=None)
@given(
    tp=st.sets(st.sampled_from([1, 2, 4, 8, 16, 32]), min_size=1),
    pp=st.sets(st.sampled_from([1, 2, 4, 8, 16, 32]), min_size=1),
    schedule=st.sets(
        st.sampled_from(["gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe"]), min_size=1
    ),
    recompute=st.sets(st.sampled_from(["none", "selective", "full"]), min_size=1),
)
def test_narrowing_the_space_never_finds_a_faster_layout(tp, pp, schedule, recompute) -> None:
    resolved = resolve(SMALL)
    space = space_from_document(
        {"tp": sorted(tp), "pp": sorted(pp), "schedule": sorted(schedule), "recompute": sorted(recompute)},
        default=default_space(**specs(resolved)),
    )
    try:
        narrow = search_resolved(resolved, space=space, pareto=("step_s", "memory_bytes"))
    except ScenarioError as exc:
        assert exc.first.path == "training.layout"  # nothing valid or nothing fits in the narrow space
        return
    assert float(narrow.metrics["step_s"][0]) >= _small_best_step()
    assert set(np.asarray(narrow.layouts.tp).tolist()) <= tp


def test_engine_rules_beyond_the_enumeration_are_counted_by_reason() -> None:
    """expert_tp = 16 with tp = 8 passes the enumeration's rules but not the engine's (ep*expert_tp must
    divide tp*cp*dp): those layouts are counted under the engine's rule, numbers blanked."""
    resolved = resolve(MOE)
    space = space_from_document(
        {"tp": [8], "expert_tp": [16], "zero_stage": [1], "recompute": ["full"]},
        default=default_space(**specs(resolved)),
    )
    result = search_resolved(resolved, space=space, pareto=("step_s", "memory_bytes"))
    engine_keys = [k for k in result.rejected if k.startswith("training.layout.expert_tp")]
    assert engine_keys and all("N" in k for k in engine_keys)
    memory = result.rejected.get(R_MEMORY, 0)
    assert memory == result.evaluated - result.feasible
    assert result.candidates == result.evaluated + sum(result.rejected.values()) - memory
    assert np.all(np.asarray(result.layouts.expert_tp) == 16)


class _Captured(Exception):
    """Raised by the spy in place of a search: the space it was given."""

    def __init__(self, space: object) -> None:
        super().__init__("captured")
        self.space = space


def _spy(**kwargs: Any) -> None:
    raise _Captured(kwargs["space"])


def _searched_space(monkeypatch, module: object, run: Any) -> object:
    """The space ``run`` hands to ``module.search_resolved`` (the search itself is not run)."""
    monkeypatch.setattr(module, "search_resolved", lambda resolved, **kwargs: _spy(**kwargs))
    try:
        run()
    except _Captured as captured:
        return captured.space
    raise AssertionError("no search was run")


@pytest.mark.parametrize("stated", [None, "bf16", "fp32"])
@pytest.mark.parametrize(
    "raw",
    [
        None,
        {"tp": [8]},
        {"grad_reduce_dtype": ["bf16"]},
        {"grad_reduce_dtype": ["fp32", "bf16"], "pp": [1, 2]},
    ],
)
def test_every_search_path_builds_the_same_space(monkeypatch, stated: str | None, raw: Any) -> None:
    """A search document, a sweep point and ``search_space`` of the resolved scenario build one space for
    every stated layout and ``search.space``: the stated FP32 gradient reduction is kept on each path."""
    import solvers.search.document as document_module
    import solvers.sweep as sweep_module

    doc = copy.deepcopy(SMALL)
    if stated is not None:
        doc["training"]["layout"] = {"tp": 8, "pp": 1, "grad_reduce_dtype": stated}
    if raw is not None:
        doc["search"] = {"space": copy.deepcopy(raw)}
    scenario = {k: v for k, v in doc.items() if k != "search"}
    resolved = resolve(auto(scenario))
    expected = search_space(resolved, scenario, raw)
    if raw is None or "grad_reduce_dtype" not in raw:
        assert expected.grad_reduce_dtype == (("fp32",) if stated == "fp32" else ("bf16", "fp32"))
    else:
        assert expected.grad_reduce_dtype == tuple(raw["grad_reduce_dtype"])
    from_document = _searched_space(monkeypatch, document_module, lambda: search_document(doc))
    sweep = {**copy.deepcopy(doc), "sweep": {"axes": [{"field": "cluster.gpus", "values": [64]}]}}
    plan = sweep_module.plan_sweep(sweep)
    from_sweep = _searched_space(monkeypatch, sweep_module, lambda: sweep_module.sweep_point(plan, 0))
    assert from_document == expected
    assert from_sweep == expected
