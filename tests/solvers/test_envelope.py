"""The validated envelope: the data file is derived from the runs, the features are the layout's, and the search
says how close each layout it returns is to the validated runs (issue 13, item 3)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import numpy as np
import pytest

from solvers import solve
from solvers.cli import main
from solvers.envelope import envelope_document, envelope_is_current
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.published import load_example
from solvers.search import envelope as envelope_module
from solvers.search import load_envelope, parse_search_request, search_resolved, search_space, support_blocks
from solvers.search.document import search_document
from solvers.search.envelope import envelope_from_dict, layout_features
from solvers.step_uncertainty import read_outside_target
from solvers.sweep import sweep_document
from solvers.validation import TARGET_MAX_POINTS

LLAMA3_405B = "llama3-405b-16384.yaml"


def _features(document: dict[str, Any]) -> dict[str, Any]:
    r = resolve(document)
    features = layout_features(model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts)
    return {k: v[0] for k, v in features.items()}


# ---------------------------------------------------------------------------------------------------------
# the data file and the features
# ---------------------------------------------------------------------------------------------------------


def test_the_data_file_is_what_the_runs_give() -> None:
    """``python -m solvers envelope --write`` after any change to corpus/ or the published cases."""
    assert envelope_is_current(), "run `python -m solvers envelope --write`"
    out = io.StringIO()
    assert main(["envelope", "--check"], stdout=out, stderr=io.StringIO()) == 0


def test_every_validated_run_is_in_the_envelope_once() -> None:
    document = envelope_document()
    ids = [r["id"] for r in document["runs"]]
    assert len(ids) == len(set(ids))
    assert "llama3-405b-16384" in ids or any(i.startswith("llama3-2024-405b-16384") for i in ids)
    # every run's features lie inside the ranges of its class, by construction of the ranges
    envelope = load_envelope()
    for run in envelope.runs:
        ranges = envelope.ranges(run.model_class)
        for name, value in run.features.items():
            if value is None:
                continue
            spec = ranges[name]
            if "min" in spec:
                assert spec["min"] <= value <= spec["max"]
            else:
                assert value in spec["values"]


def test_runs_the_model_misses_held_out_are_not_validated() -> None:
    """A corpus run missed by more than 8 MFU points held out (``outside_target``, written by the fit) is left out
    of the envelope and listed under ``skipped`` with its error; every other corpus run is in it."""
    target_points, missed = read_outside_target()
    assert target_points == TARGET_MAX_POINTS
    assert missed and all(abs(error) > target_points for error in missed.values())
    document = envelope_document()
    ids = {r["id"] for r in document["runs"]}
    skipped = {s["id"]: s["reason"] for s in document["skipped"]}
    for run_id, error in missed.items():
        assert run_id not in ids
        assert f"{error:+.2f} MFU points" in skipped[run_id]
    assert "mlperf-v51-nvidia-gb200-512-llama31-8b" in missed


def test_features_of_llama3_published_layout() -> None:
    """Table 4's TP8 CP1 PP16 with 8 virtual stages (examples/llama3-405b-16384.yaml)."""
    f = _features(load_example(LLAMA3_405B))
    assert f["tokens_per_gpu"] == 8192.0 and f["cp"] == 1.0
    assert np.isnan(f["tokens_per_cp_rank"])  # no context parallelism: the feature does not apply
    assert f["layers_per_stage"] == 126 / 16 and f["layers_per_chunk"] == 126 / 128
    assert not f["tp_across_nodes"] and f["generation"] == "hopper"
    assert "experts_per_gpu" not in f


def test_sequence_parallelism_does_not_shrink_the_gemm_rows_but_cp_does() -> None:
    doc = load_example(LLAMA3_405B)
    doc["training"]["layout"]["sequence_parallel"] = False
    assert _features(doc)["tokens_per_gpu"] == 8192.0
    doc["training"]["layout"].update({"cp": 4, "pp": 4, "virtual_stages": 2})
    f = _features(doc)
    assert f["tokens_per_gpu"] == 2048.0 and f["tokens_per_cp_rank"] == 2048.0


def test_moe_layouts_count_experts_per_gpu() -> None:
    r = resolve(load_example("deepseek-v3-2048xh800.yaml"))
    f = layout_features(model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts)
    assert r.model.moe is not None
    assert f["experts_per_gpu"][0] == r.model.moe.experts / int(r.layouts.ep[0])


# ---------------------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama3_searches() -> dict[bool, dict[str, Any]]:
    doc = load_example(LLAMA3_405B)
    return {flag: search_document(doc, top=3, within_validated=flag) for flag in (True, False)}


def test_the_layout_the_issue_names_carries_the_out_of_envelope_warning() -> None:
    """Llama 3 405B at 8K on 16,384 H100 with tp 2, cp 16, pp 64 (two layers a stage, 512 tokens per GPU per
    microbatch), which the engine used to rank first: its support says no validated run is like it, and why."""
    doc = load_example(LLAMA3_405B)
    doc["training"]["layout"].update({"tp": 2, "cp": 16, "pp": 64, "virtual_stages": 1, "schedule": "1f1b"})
    r = resolve(doc)
    block = support_blocks(
        model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=load_envelope()
    )[0]
    assert block["within_validated"] is False
    assert any(
        reason.startswith("512 tokens per GPU per microbatch; validated dense runs go down to ")
        for reason in block["reasons"]
    ), block["reasons"]


def test_unfiltered_best_for_llama3_405b_no_longer_has_tiny_per_gpu_shapes(llama3_searches) -> None:
    """With the matrix-shape effect the engine no longer prefers 512-token microbatches: ranked over every
    layout, its best for Llama 3 405B keeps at least 2,048 tokens per GPU per microbatch, and the published
    layout itself is a validated run."""
    out = llama3_searches[False]
    best, baseline = out["best"], out["baseline"]
    assert out["within_validated"] is False
    assert best["support"]["features"]["tokens_per_gpu"]["value"] >= 2048
    assert baseline["support"]["within_validated"] and baseline["support"]["distance"] == 0.0


def test_default_search_best_for_llama3_405b_is_within_5_percent_or_warns(llama3_searches) -> None:
    """Done-when (issue 13), as a search answers by default (within_validated true).

    Measured: the best inside the envelope is tp 4, cp 2, pp 16 (interleaved 8, FP32 reduce-scatter as the
    scenario states), predicted 4.87% faster than Table 4's layout (6.280 s against 6.601 s) at 1.8.0 (its
    corrections, the context-parallel exchange's backward gather among them, and their refit); 4.90% (6.264 s
    against 6.587 s) once torchtitan's
    op-level selective checkpointing (recompute per_op) was stated on its rows and FP8 training gathers its TP
    inputs and output gradients in FP8 (the fp8_tp_gather effect), whose refit raised the Hopper efficiency
    0.6628 -> 0.6632 and the attention rate factor 0.635 -> 0.645 and lowered the FP8 rate factor 0.8930 -> 0.8796;
    4.89% (6.276 s against 6.599 s) once KempnerForge's
    rows stated that their TP leaves the vocabulary whole (training.tp_vocab_parallel false), whose refit raised
    the Hopper efficiency 0.6607 -> 0.6628 and lowered the FP8 rate factor 0.8954 -> 0.8930; 4.88% (6.290 s
    against 6.613 s) once KempnerForge's
    rows stated their 4-GPU NVLink mesh (cluster.scale_up.mesh_gpus) and FSDP2's gathers in every microbatch with
    one reduce-scatter a step (zero3_exchange gather_every_microbatch), whose refit lowered the Hopper efficiency
    0.6613 -> 0.6607 and raised the FP8 rate factor 0.8950 -> 0.8954; 4.89% (6.287 s against 6.610 s) once a pipeline
    flush per gradient-accumulation step (training.pipeline_flush_microbatches) and DeepEP's one copy per target
    GPU (model.moe.max_gpus_per_token) were stated on NeMo AutoModel's rows, whose refit lowered the Hopper
    efficiency 0.6614 -> 0.6613; 4.89% (6.286 s against 6.609 s) once NeMo AutoModel's
    table joined the corpus (nemo-automodel-2026), whose refit lowered the Hopper efficiency 0.6647 -> 0.6614 and
    raised the FP8 rate factor 0.8914 -> 0.8949; 4.90% (6.265 s against 6.588 s) once KempnerForge's,
    Trainy's and torchtitan's async-TP benchmarks joined the corpus (kempnerforge-2026, trainy-2025-h200,
    torchtitan-2025-async-tp) and torchtitan's rows stated their FP32 gradient reduction, whose refit lowered the
    Hopper efficiency 0.6709 -> 0.6647 and raised the FP8 rate factor 0.8803 -> 0.8914; 4.92% (6.233 s against 6.556 s) once Megatron-Bridge's
    26.02 rows (megatron-bridge-2602) joined the corpus, whose refit raised the Hopper efficiency 0.6702 -> 0.6709
    and the FP8 rate factor 0.8787 -> 0.8803; 4.92% (6.235 s against 6.558 s) once audits stated
    that the DeepSeek-V3, Qwen3 and Grok 1 runs on NVIDIA's code (Megatron-Bridge, MLPerf v6.0, DGX Cloud) train
    without dropout, a RoCE fabric and an achieved scale-out rate, whose refit raised the Hopper efficiency 0.6701 -> 0.6702; 4.92%
    (6.236 s against 6.559 s) once audits of Korthikanti et al.'s, Megatron-Bridge 25.09's and MLPerf v6.0's rows corrected their embeddings, gradient dtype,
    expert TP, recompute and vocabulary, whose refit lowered the Hopper efficiency 0.6702 -> 0.6701; 4.92% (6.235 s
    against 6.558 s) once DGX Cloud 25.01's Llama 3.1 405B rows stated their GPT-2 vocabulary (51,200 padded), whose
    refit lowered the Hopper efficiency 0.6714 -> 0.6702; 4.93% (6.227 s against 6.550 s) once MLPerf's Llama 3.1
    405B rows stated the benchmark's vocabulary (the Mixtral tokenizer's 32,000 tokens, padded by TP), whose refit
    lowered the Hopper efficiency 0.6717 -> 0.6714; the same once a flex dispatcher
    (training.moe_token_dispatcher: DeepEP, HybridEP) paid the padded share of the time per local expert, whose refit
    lowered the Hopper efficiency 0.6726 -> 0.6717; 4.94% (6.219 s against 6.542 s) once Megatron-Bridge's
    25.09 rows (megatron-bridge-2509, padded token drop) joined the corpus, whose refit raised the Hopper efficiency
    0.6671 -> 0.6726; 4.91% (6.251 s against 6.574 s) once a dispatch padded
    to capacity paid only its fitted share of the time per local expert (expert_kernel_padded_share), whose refit
    lowered the Hopper efficiency 0.6732 -> 0.6671; 4.94% (6.215 s against 6.537 s) once GB300 had its own
    fitted efficiency (solvers.catalog.fitted.EFFICIENCY_FAMILY), whose refit raised the Hopper efficiency
    0.6687 -> 0.6732; 4.90% (6.261 s against 6.584 s) once the corpus's
    FP8 runs that gather their weights in FP8 said so (training.fp8_param_gather; the embeddings and output layer
    in BF16, Megatron-Bridge's current-scaling rows too), whose refit raised the Hopper efficiency 0.6663 -> 0.6687
    and lowered the FP8 rate factor 0.901 -> 0.894; 4.91% (6.257 s against 6.580 s)
    once the shared
    experts of the corpus's runs that state it ran beside the all-to-alls (training.moe_shared_expert_overlap),
    each GEMM beside its own phase, whose refit lowered the Hopper efficiency 0.6667 -> 0.6663; 4.91% (6.254 s
    against 6.577 s) once the
    matrix-shape curve followed the rate rather than the peak and multi-head latent attention cast its own
    widths, whose refit raised the Hopper efficiency 0.666 -> 0.667; 4.92% (6.250 s against 6.574 s) once MoE runs
    dispatched in BF16 unless they state FP8 (training.moe_fp8_dispatch), whose refit lowered the Hopper
    efficiency 0.667 -> 0.666; 4.93% (6.239 s against 6.562 s) once GB300's
    attention core ran at its measured gain over GB200's, whose refit raised the Hopper efficiency 0.666 -> 0.667;
    4.92% (6.247 s against 6.570 s) once FP8 training
    paid its casts and the matrix-shape curve's half dimension followed the precision's peak (fp8_casts,
    shape_by_precision), whose refit lowered the Hopper efficiency 0.680 -> 0.666 and lengthened both layouts
    (BF16: only the curve moves, and faster). It was 4.89% (6.230 s against 6.550 s) once the
    parallel-folding source and the expert-TP exchange were added, whose refit raised the Hopper efficiency
    0.668 -> 0.680 and shortened both layouts; 4.84% (6.304 s against 6.624 s) once the expert-parallel
    overlap was limited to the steady 1F1B phase, whose refit lowered the Hopper efficiency 0.669 -> 0.668 and
    lengthened both layouts; 4.85% (6.292 s against 6.613 s) once the corpus's MoE
    runs stated how they route (forced balance, expert capacity, DeepSeek-V3's one InfiniBand copy per node),
    whose refit lowered the Hopper efficiency 0.685 -> 0.669 and lengthened both layouts; 4.94%
    (6.174 s against 6.494 s) with the fit run to convergence and the experts' rows padded by an expected half
    tile. Before that change it was 5.01%,
    past the target, and this check was marked an expected failure; 5.08% with the ten
    DeepSeek-V3 rows of MLPerf Training v6.0 and the GB300 rows of MLPerf v5.1 and Megatron-Bridge 25.11 in the
    corpus (the GB200 DeepSeek-V3 rows, which the engine predicts 1.3x to 1.9x too fast, move the shared FP8 rate
    factor from 0.878 to 0.807 and the Hopper efficiency from 0.679 to 0.720 in the fit; 5.03% with the v6.0
    rows alone), 5.02% with MosaicML's MPT rows as well (Hopper 0.705, FP8 factor 0.821), 5.01% after the
    attention audit of dgxc-benchmarking-2505's Nemotron-4 340B rows (FP8 factor 0.824); 4.87% before them
    (solver 1.7.0 after the multi-token-prediction
    refit; 4.88% with the Cauchy loss of the fit before it; 4.93% with 23 sources, the pipeline fill and the SC'21
    layouts under Huber's; 4.98% (4.99% before the refit) with tp 4, cp 4 if
    the envelope still counted runs the model misses by more than 8 points held out,
    as it did before: MLPerf v5.1's 8B on 512 GB200, +13.0, is the one dense run at 2,048 tokens per CP rank;
    4.91% with the first MLPerf sources; 4.91% with the Huber loss of
    the fit and dgxc-benchmarking-2505's mixture-of-experts rows, and before them with the pipeline-split audit of
    the corpus; 4.82% after the gradient-reduction dtype audit, 4.76% before it, 4.81% before dgxc-benchmarking-2505, 4.88% at 1.6.0, 4.86% at 1.5.0,
    4.90% at 1.4.0, 4.98% at 1.3.1): every second of the difference is the exposed tensor-parallel exchange (4,096 tokens per TP group
    instead of 8,192), less a larger DP exchange.
    The margin is small; a change to the step model that moves it past 5% must say so here, not widen it."""
    out = llama3_searches[True]
    best, baseline = out["best"], out["baseline"]
    ratio = best["step"]["step_s"] / baseline["step_s"]
    assert best["layout"]["grad_reduce_dtype"] == "fp32"
    assert abs(ratio - 1.0) <= 0.05 or best["support"]["reasons"], (
        f"best {best['layout']} is {(ratio - 1) * 100:+.1f}% against the published layout "
        f"(nearest validated run {best['support']['nearest_validated']})"
    )


def test_a_search_keeps_the_gradient_reduction_dtype_the_scenario_states() -> None:
    """Llama 3 reduces gradients in FP32 for numerical stability (§3.3.2): a search of that scenario does not
    trade it for BF16 (a numerics change, not a layout), unless search.space lists BF16; a scenario that
    states BF16 or no layout keeps both candidates."""
    doc = load_example(LLAMA3_405B)
    assert search_document(doc, top=1)["space"]["grad_reduce_dtype"] == ["fp32"]
    listed = copy.deepcopy(doc)
    listed["search"] = {"space": {"grad_reduce_dtype": ["bf16", "fp32"], "tp": [4, 8], "cp": [1, 2]}}
    out = search_document(listed, top=1)
    assert out["space"]["grad_reduce_dtype"] == ["bf16", "fp32"]
    assert out["best"]["layout"]["grad_reduce_dtype"] == "bf16"
    stated_bf16 = copy.deepcopy(doc)
    stated_bf16["training"]["layout"]["grad_reduce_dtype"] = "bf16"
    stated_bf16["search"] = {"space": {"tp": [8], "cp": [1]}}
    assert search_document(stated_bf16, top=1)["space"]["grad_reduce_dtype"] == ["bf16", "fp32"]


def test_the_default_search_keeps_only_layouts_inside(llama3_searches) -> None:
    out, unfiltered = llama3_searches[True], llama3_searches[False]
    assert out["within_validated"] is True
    listed = [out["best"], *out["alternatives"], *out["pareto"]]
    assert all(item["support"]["within_validated"] and not item["support"]["reasons"] for item in listed)
    outside = {k: v for k, v in out["rejected"].items() if k.startswith("search.within_validated")}
    assert outside and all(v > 0 for v in outside.values())
    # leaving layouts out never finds a faster one, and what is left out is counted
    assert out["best"]["step"]["step_s"] >= unfiltered["best"]["step"]["step_s"]
    assert out["evaluated"] + sum(outside.values()) == unfiltered["evaluated"]
    # the support block follows CONTRACT.md "Support"
    support = out["best"]["support"]
    assert {"within_validated", "reasons", "nearest_validated"} <= set(support)
    assert support["nearest_validated"] in {r.id for r in load_envelope().runs}
    # the search names the envelope it was judged against
    assert out["envelope"] == {"validated_runs": len(load_envelope().runs), "digest": load_envelope().digest}
    assert len(out["envelope"]["digest"]) == 64


def test_within_validated_must_be_a_boolean() -> None:
    doc = load_example(LLAMA3_405B)
    doc["search"] = {"within_validated": "yes"}
    with pytest.raises(ScenarioError) as info:
        parse_search_request(doc)
    assert info.value.first.path == "search.within_validated"
    doc["search"] = {"within_validated": False}
    assert parse_search_request(doc).within_validated is False
    assert parse_search_request(load_example(LLAMA3_405B)).within_validated is True


def _envelope_without(monkeypatch, tmp_path, keep) -> None:
    """Every search and solve of the test reads an envelope of the current runs that ``keep`` accepts."""
    document = load_envelope().as_dict()
    document["runs"] = [r for r in document["runs"] if keep(r)]
    path = tmp_path / "validated_envelope.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(envelope_module, "ENVELOPE_FILE", path)


MI300X = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "mi300x-platform", "gpus": 64},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "layout": "auto"},
}


def test_no_layout_inside_is_an_error_naming_the_option_and_the_reason(monkeypatch, tmp_path) -> None:
    """With no validated run on an AMD CDNA 3 accelerator nothing is inside, and the error says so."""
    _envelope_without(monkeypatch, tmp_path, lambda r: r["features"]["generation"] != "cdna3")
    with pytest.raises(ScenarioError) as info:
        search_document(copy.deepcopy(MI300X))
    assert info.value.first.path == "search.within_validated"
    assert "cdna3 accelerator; no validated dense run on cdna3" in info.value.first.message
    out = search_document({**copy.deepcopy(MI300X), "search": {"within_validated": False, "top": 0}})
    assert out["best"]["support"]["within_validated"] is False


def test_an_auto_solve_picks_the_search_best_and_says_how_close_it_is(monkeypatch, tmp_path) -> None:
    doc = load_example("auto-llama3-70b-1024xh100.yaml")
    report = solve(doc)
    best = search_document(doc, top=0)["best"]
    assert report["layout"] == best["layout"] and report["step"] == best["step"]
    assert report["search"]["within_validated"] is True
    assert report["search"]["support"] == best["support"]
    # the report's JSON Schema (v1.1) describes the block
    import jsonschema

    from solvers.report_schema import report_json_schema

    jsonschema.validate(report, report_json_schema())
    broken = copy.deepcopy(report)
    broken["search"]["support"].pop("reasons")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, report_json_schema())
    # with nothing inside, a solve still answers: every layout ranked, and the reason in support
    _envelope_without(monkeypatch, tmp_path, lambda r: r["features"]["generation"] != "cdna3")
    fallback = solve(copy.deepcopy(MI300X))
    assert fallback["search"]["within_validated"] is False
    assert not fallback["search"]["support"]["within_validated"]
    unfiltered = search_document({**copy.deepcopy(MI300X), "search": {"within_validated": False, "top": 0}})
    assert fallback["layout"] == unfiltered["best"]["layout"]


def test_a_class_without_validated_runs_is_outside_with_that_reason() -> None:
    document = json.loads(json.dumps(load_envelope().as_dict()))
    document["runs"] = [r for r in document["runs"] if r["class"] == "dense"]
    dense_only = envelope_from_dict(document)
    r = resolve(load_example("deepseek-v3-2048xh800.yaml"))
    block = support_blocks(
        model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=dense_only
    )[0]
    assert block["within_validated"] is False and block["reasons"][0] == "no validated moe run"
    auto_document = {
        **load_example("deepseek-v3-2048xh800.yaml"),
        "training": {**load_example("deepseek-v3-2048xh800.yaml")["training"], "layout": "auto"},
    }
    auto = resolve(auto_document)
    with pytest.raises(ScenarioError) as info:
        search_resolved(
            auto, space=search_space(auto, auto_document, None), within_validated=True, envelope=dense_only
        )
    assert info.value.first.path == "search.within_validated"


def test_tp_across_nodes_is_outside_while_no_validated_run_spans_nodes(monkeypatch, tmp_path) -> None:
    doc = load_example(LLAMA3_405B)
    doc["training"]["layout"].update({"tp": 16, "pp": 8, "virtual_stages": 2})
    r = resolve(doc)
    _envelope_without(monkeypatch, tmp_path, lambda r: not r["features"]["tp_across_nodes"])
    envelope = load_envelope()
    assert envelope.ranges("dense")["tp_across_nodes"]["values"] == [False]
    block = support_blocks(
        model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=envelope
    )[0]
    item = block["features"]["tp_across_nodes"]
    assert item["value"] is True and item["inside"] is False and item["validated"] == [False]
    assert item["distance"] == 1.0
    assert item["reason"].startswith("tensor parallelism across nodes (tp > 8 GPUs per node)")
    assert item["reason"] in block["reasons"] and not block["within_validated"]


def test_every_sweep_point_keeps_to_the_envelope_unless_told_otherwise() -> None:
    base = load_example("auto-llama3-70b-1024xh100.yaml")
    base["sweep"] = {"axes": [{"field": "cluster.gpus", "values": [512, 1024]}]}
    rows: dict[bool, list[dict[str, Any]]] = {
        flag: sweep_document({**copy.deepcopy(base), "search": {"within_validated": flag}})["rows"]
        for flag in (True, False)
    }
    envelope = load_envelope()
    for inside, free in zip(rows[True], rows[False], strict=True):
        point = copy.deepcopy(base)
        del point["sweep"]
        point["cluster"]["gpus"] = inside["point"]["cluster.gpus"]
        for row, flag in ((inside, True), (free, False)):
            point["training"]["layout"] = row["best"]["layout"]
            r = resolve(point)
            block = support_blocks(
                model=r.model, cluster=r.cluster, training=r.training, layouts=r.layouts, envelope=envelope
            )[0]
            assert block["within_validated"] or not flag
            auto = {**copy.deepcopy(point), "training": {**point["training"], "layout": "auto"}}
            best = search_document({**auto, "search": {"within_validated": flag}}, top=0)["best"]
            assert row["best"]["layout"] == {k: v for k, v in best["layout"].items() if k != "microbatches"}
            assert row["best"]["metrics"]["step_s"] == best["step"]["step_s"]


def test_every_catalog_accelerator_has_the_generation_of_its_calibration_family() -> None:
    """One table says which architecture a catalog accelerator is: the envelope's generation is its architecture
    (``solvers.catalog.fitted.FAMILY``) wherever the catalog gives one (GB300, Blackwell Ultra, is Blackwell there,
    though its calibration family is its own), and a custom accelerator named like a catalog part falls in the same
    generation by the words of its name."""
    from solvers.catalog import ACCELERATORS
    from solvers.catalog.fitted import FAMILY
    from solvers.search.envelope import generation_of

    for key, family in FAMILY.items():
        assert generation_of(str(ACCELERATORS[key]["name"])) == family, key
    assert generation_of("NVIDIA GB300 (Blackwell Ultra GPU in a GB300 NVL72 rack)") == "blackwell"
    assert generation_of("my B300 build") == "blackwell"
    assert generation_of("NVIDIA H100 SXM5 80GB, custom clocks") == "hopper"
    assert generation_of("AMD Instinct MI300X OAM") == "cdna3"
    assert generation_of("Some Future Part") == "some future part"
