"""The scenario field ``model.mtp_layers`` (DeepSeek-V3's multi-token-prediction modules): its parameters, its
FLOPs, its place on the last pipeline stage, and DualPipe's pairing of the two ends of the pipeline."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import compute
from solvers.catalog import MODELS
from solvers.effects import busiest_stage_s, end_layer_equivalents, pipeline_stages
from solvers.entry import solve
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.inputs.fields import TABLE
from solvers.inputs.json_schema import scenario_json_schema
from solvers.inputs.model import mtp_module_params
from solvers.published import load_example

# DeepSeek-V3 on 2,048 H800 as its ISCA'25 paper ran it: the example itself (DualPipe, PP 16, EP 64, FP8 GEMMs).
DOC: dict[str, Any] = load_example("deepseek-v3-2048xh800.yaml")


def with_model(doc: dict[str, Any], **model: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["model"].update(model)
    return out


def with_layout(doc: dict[str, Any], **layout: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["training"]["layout"].update(layout)
    return out


def test_the_deepseek_v3_preset_trains_one_module_with_its_source() -> None:
    preset = MODELS["deepseek-v3"]
    assert preset["mtp_layers"] == 1
    assert "§2.2" in preset["sources"]["mtp_layers"] and "§4.2" in preset["sources"]["mtp_layers"]
    resolved = resolve(DOC)
    assert resolved.model.mtp_layers == 1
    assert resolved.document["model"]["mtp_layers"] == 1
    note = next(a for a in resolved.assumptions if a["key"] == "model.mtp_layers")
    assert note["value"] == 1 and "DeepSeek-V3 technical report §2.2" in note["source"]


def test_module_parameters_worked_example() -> None:
    """DeepSeek-V3's module: MLA 187.1M + router 1.8M + 257 experts of 44.0M + norms in its block, a 2h x h
    projection and two input norms: 11.61B, 0.69B of them active (mtp_module_params docstring)."""
    preset = MODELS["deepseek-v3"]
    total, active = mtp_module_params(
        hidden=preset["hidden"],
        ffn_hidden=preset["ffn_hidden"],
        heads=preset["heads"],
        kv_heads=preset["kv_heads"],
        gated_mlp=True,
        moe=preset["moe"],
        mla=preset["mla"],
    )
    assert total == pytest.approx(11.6101e9, rel=1e-4)
    assert active == pytest.approx(0.6881e9, rel=1e-3)
    main = resolve(with_model(DOC, mtp_layers=0)).model
    model = resolve(DOC).model
    assert model.params == main.params + total == pytest.approx(682.61e9, rel=1e-4)
    assert model.active_params == main.active_params + active
    assert model.mtp_active_params == active
    # the routed experts of the module's MoE block are expert parameters (sharded over EP, not TP)
    per_expert = 3 * 7168 * 2048
    assert compute.expert_params(model=model) - compute.expert_params(model=main) == 256 * per_expert
    assert (
        compute.active_expert_params(model=model) - compute.active_expert_params(model=main) == 8 * per_expert
    )


def test_module_flops_worked_example() -> None:
    """6 N_mtp + one layer's MLA attention core + one more pass of the shared head: 2.834e11 -> 2.941e11
    FLOP per token at s = 4,096 (compute.model_flops_per_token docstring)."""
    main = resolve(with_model(DOC, mtp_layers=0)).model
    model = resolve(DOC).model
    without = compute.model_flops_per_token(model=main, seq_len=4096)
    with_module = compute.model_flops_per_token(model=model, seq_len=4096)
    assert without == pytest.approx(2.834e11, rel=1e-3)
    assert with_module == pytest.approx(2.941e11, rel=1e-3)
    head = 6.0 * 7168 * 129280
    block = compute.mtp_block_flops_per_token(model=model, seq_len=4096)
    assert block == pytest.approx(6.0 * model.mtp_active_params + 6.0 * 4096 * (24576 + 16384), rel=1e-12)
    assert with_module == pytest.approx(without + block + head, rel=1e-12)
    assert compute.output_layer_flops_per_token(model=model) == 2.0 * head
    assert compute.mtp_block_flops_per_token(model=main, seq_len=4096) == 0.0


def test_pipeline_stages_worked_examples() -> None:
    """effects.pipeline_stages docstring: DeepSeek-V3 with its module, p = 4 balanced -> 0.953; p = 16 in FP8
    (heads at a 1.75x slower rate), 1F1B 5.40 / 4.23 -> 1.28, DualPipe 4.15 / 4.23 -> 0.98."""
    out, block = 1.112014848e10 / 2.94099919872e11, 5.135235072e9 / 2.94099919872e11
    p4 = pipeline_stages(layers=61, pp=4, output_layer_share=out, mtp_share=block)
    assert p4.ends == pytest.approx(16.142 / 16.936, abs=1e-3)
    one_f_one_b = pipeline_stages(
        layers=61, pp=16, output_layer_share=out, mtp_share=block, output_rate_ratio=1.75
    )
    dual = pipeline_stages(
        layers=61, pp=16, output_layer_share=out, mtp_share=block, output_rate_ratio=1.75, paired_ends=True
    )
    assert one_f_one_b.ends == pytest.approx(5.40 / 4.234, abs=2e-3)
    assert dual.ends == pytest.approx(4.15 / 4.234, abs=2e-3)
    # without a module and with ends that one stage absorbs, pairing changes nothing
    assert pipeline_stages(layers=61, pp=4, output_layer_share=0.02, paired_ends=True) == pipeline_stages(
        layers=61, pp=4, output_layer_share=0.02
    )


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(2, 200),
    pp=st.integers(1, 64),
    out=st.floats(0.0, 0.3),
    block=st.floats(0.0, 0.3),
    ratio=st.floats(1.0, 2.5),
    even=st.booleans(),
)
def test_pairing_the_ends_never_makes_the_busiest_stage_busier(
    layers: int, pp: int, out: float, block: float, ratio: float, even: bool
) -> None:
    kw: dict[str, Any] = {
        "layers": layers,
        "pp": pp,
        "output_layer_share": out,
        "mtp_share": block,
        "output_rate_ratio": ratio,
    }
    plain = pipeline_stages(**kw, even_split=even)
    paired = pipeline_stages(**kw, even_split=even, paired_ends=True)
    assert paired.ends <= plain.ends + 1e-12
    assert 0.0 <= paired.fill <= 1.0


@pytest.mark.parametrize("schedule", ["1f1b", "dualpipe", "interleaved"])
def test_a_module_costs_time_and_memory_and_is_counted_in_mfu(schedule: str) -> None:
    layout = {"schedule": schedule, "virtual_stages": 2 if schedule == "interleaved" else 1}
    doc = with_layout(DOC, **layout)
    if schedule == "interleaved":  # 64 microbatches, a multiple of pp
        doc["training"]["layout"]["pp"] = 8
        doc["training"]["global_batch_seqs"] = 16384
    on, off = solve(doc, ranges=False), solve(with_model(doc, mtp_layers=0), ranges=False)
    assert on["step"]["step_s"] > off["step"]["step_s"]
    assert on["step"]["model_flops_per_token"] > off["step"]["model_flops_per_token"]
    assert on["memory"]["weights_bytes"] > off["memory"]["weights_bytes"]
    # MFU counts the module's work: more FLOPs in a longer step
    ratio = on["step"]["model_flops_per_token"] / off["step"]["model_flops_per_token"]
    assert on["step"]["mfu"] == pytest.approx(
        off["step"]["mfu"] * ratio * off["step"]["step_s"] / on["step"]["step_s"], rel=1e-9
    )
    flops_note = next(a for a in on["assumptions"] if a["key"] == "step.model_flops_per_token")
    assert "mtp_layers" in flops_note["value"] and "multi-token-prediction" in flops_note["source"]


def test_no_module_leaves_the_document_and_the_report_as_they_were() -> None:
    """``mtp_layers: 0`` on a model without it is the default: the same resolved document, hash and report."""
    doc = {"model": {"preset": "llama3-8b"}, "cluster": {"node": "dgx-h100", "gpus": 64}}
    explicit = with_model(doc, mtp_layers=0)
    assert "mtp_layers" not in resolve(doc).document["model"]
    assert resolve(explicit).input_hash == resolve(doc).input_hash
    given, default = solve(explicit, ranges=False), solve(doc, ranges=False)
    assert {k: v for k, v in given.items() if k != "assumptions"} == {
        k: v for k, v in default.items() if k != "assumptions"
    }
    notes = [[a for a in r["assumptions"] if a["key"] == "model.mtp_layers"] for r in (given, default)]
    assert [n[0]["value"] for n in notes] == [0, 0]
    assert (notes[0][0]["source"], notes[1][0]["source"]) == ("scenario", TABLE["model.mtp_layers"].source)
    # a resolved document solves to the same report (the key is kept only where it matters)
    resolved = resolve(DOC)
    assert solve(resolved.document, ranges=False)["step"] == solve(DOC, ranges=False)["step"]


@pytest.mark.parametrize("bad", [-1, 17, 1.5, "one", True])
def test_bad_values_name_the_field_and_the_rule(bad: Any) -> None:
    with pytest.raises(ScenarioError) as caught:
        resolve(with_model(DOC, mtp_layers=bad))
    assert "model.mtp_layers" in str(caught.value)


def test_the_field_table_row_drives_the_schema() -> None:
    row = TABLE["model.mtp_layers"]
    assert (row.kind, row.minimum, row.maximum, row.default) == ("integer", 0, 16, 0)
    schema = scenario_json_schema()
    model = next(branch for branch in schema["properties"]["model"]["anyOf"] if branch["type"] == "object")
    prop = model["properties"]["mtp_layers"]
    assert prop["minimum"] == 0 and prop["maximum"] == 16


# DeepSeek-V3 with its module at 4K, per token: model FLOPs, no recompute, both heads, the module's block.
PER_TOKEN = (2.94099919872e11, 0.0, 1.112014848e10, 5.135235072e9)


def test_busiest_stage_weighs_the_heads_in_layer_times() -> None:
    """``busiest_stage_s``: with no per-layer work it is the FLOP layer-equivalent planner (``flop_s x ends``);
    per-layer work makes a layer longer, so heads of the same FLOPs weigh fewer layer times, while each MTP
    block still carries one layer's per-layer work; p = 1 is every layer and the heads on one GPU."""
    f, _, o, m = PER_TOKEN
    out, block = o / f, m / f
    kw: dict[str, Any] = {"layers": 61, "pp": 16, "output_rate_ratio": 1.76}
    flops_only, fill = busiest_stage_s(flop_s=10.0, layer_s=0.0, per_token=PER_TOKEN, mtp_layers=1, **kw)
    stages = pipeline_stages(output_layer_share=out, mtp_share=block, **kw)
    assert flops_only == pytest.approx(10.0 * stages.ends, rel=1e-12) and fill == pytest.approx(stages.fill)
    # layers that spend 40% of their time outside their math: the heads and block (5.42 FLOP layer
    # equivalents) weigh (4.29 + 1.13) x 0.6 + 0.4 = 3.65 layer times, under the balanced (61 + 3.65) / 16
    rest = 1.0 - out - block
    e_out, e_block = out * 61 / rest, block * 61 / rest
    tau_f = 10.0 / (4 * (61 + e_out + e_block) / 61)
    layer_s = 4 * tau_f * (0.4 / 0.6)
    e_time = (e_out * 1.76 + e_block) * 0.6 + 1 * 0.4
    assert e_out * 1.76 + e_block == pytest.approx(5.42, abs=0.01) and e_time == pytest.approx(3.65, abs=0.01)
    with_layers, _ = busiest_stage_s(flop_s=10.0, layer_s=layer_s, per_token=PER_TOKEN, mtp_layers=1, **kw)
    assert with_layers == pytest.approx(max(4.0, (61 + e_time) / 16, e_time) * tau_f / 0.6, rel=1e-9)
    assert with_layers < 10.0 * stages.ends + layer_s
    single, fill_one = busiest_stage_s(flop_s=10.0, layer_s=3.0, per_token=PER_TOKEN, **{**kw, "pp": 1})
    one = pipeline_stages(output_layer_share=out, mtp_share=block, **{**kw, "pp": 1})
    assert single == pytest.approx(10.0 * one.ends + 3.0, rel=1e-12) and fill_one == 1.0
    # an empty stage takes no time (no 0 / 0)
    assert busiest_stage_s(flop_s=0.0, layer_s=0.0, per_token=PER_TOKEN, **kw)[0] == 0.0


def test_the_heads_are_not_recomputed() -> None:
    """Shares of the hardware FLOPs: with recompute the layers (and the MTP block) grow and the heads do
    not, so the heads weigh fewer layer equivalents than their share of the model FLOPs says."""
    f, _, o, m = PER_TOKEN
    recompute = f / 3.0  # full recompute: one more forward of everything but the heads, roughly
    plain = busiest_stage_s(flop_s=10.0, layer_s=0.0, layers=61, pp=16, per_token=PER_TOKEN)[0]
    rerun = busiest_stage_s(flop_s=10.0, layer_s=0.0, layers=61, pp=16, per_token=(f, recompute, o, m))[0]
    assert rerun != plain
    hardware = f + recompute
    e_out, e_block = end_layer_equivalents(
        layers=61, output_layer_share=o / hardware, mtp_share=m * (hardware - o) / (f - o) / hardware
    )
    layer_hw = (hardware - o - m * (hardware - o) / (f - o)) / 61
    assert e_out == pytest.approx(o / layer_hw, rel=1e-12) and e_block == pytest.approx(
        m * (hardware - o) / (f - o) / layer_hw, rel=1e-12
    )


def test_paired_even_split_at_one_stage_keeps_the_heads() -> None:
    """At p = 1 there is no pair: the one stage holds every layer and the whole heads."""
    kw: dict[str, Any] = {"layers": 61, "pp": 1, "output_layer_share": 0.2, "even_split": True}
    assert pipeline_stages(paired_ends=True, **kw).busiest == pipeline_stages(**kw).busiest


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(2, 200),
    pp=st.integers(1, 64),
    out=st.floats(0.0, 0.3),
    block=st.floats(0.0, 0.3),
    flop_s=st.floats(1e-3, 100.0),
    layer_s=st.floats(0.0, 100.0),
    even=st.booleans(),
    paired=st.booleans(),
)
def test_the_busiest_stage_is_never_below_a_middle_stage_nor_above_the_sum(
    layers: int, pp: int, out: float, block: float, flop_s: float, layer_s: float, even: bool, paired: bool
) -> None:
    """Bounds of the max-of-sums: at least a ``ceil(L/p)``-layer stage without heads, at most that stage's
    work with the FLOP-equivalent heads' factor on its math and all its per-layer work on top (the old sum)."""
    per_token = (1.0, 0.0, out, block)
    got, _ = busiest_stage_s(
        flop_s=flop_s,
        layer_s=layer_s,
        layers=layers,
        pp=pp,
        per_token=per_token,
        even_split=even,
        paired_ends=paired,
    )
    ends = pipeline_stages(
        layers=layers, pp=pp, output_layer_share=out, mtp_share=block, even_split=even, paired_ends=paired
    ).ends
    busiest = -(-layers // pp)
    e_out, e_block = end_layer_equivalents(layers=layers, output_layer_share=out, mtp_share=block)
    middle = flop_s * busiest / (busiest * (layers + e_out + e_block) / layers) + layer_s
    assert got <= flop_s * ends + layer_s + 1e-9 * (flop_s + layer_s)
    if pp > 1:
        assert got >= middle - 1e-9 * (flop_s + layer_s)
