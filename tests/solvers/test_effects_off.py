"""With every step effect switched off, every example gives the figures it gave before the effects existed.

``golden/effects_off.json`` holds those figures (recorded from the golden file before the effects were added, and
re-recorded where a later correction of the engine, not an effect, moved them: its ``about`` names them);
the switches are ``training.efficiency.effects.<name>`` (``solvers.effects``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from solvers import engine, fit, solve
from solvers.cli import load_yaml
from solvers.inputs import fields, resolve
from solvers.specs import EFFECT_DOCUMENT_DEFAULTS, EFFECT_SOURCES, EFFECT_SWITCHES, SCHEDULES, EffectsSpec

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((Path(__file__).resolve().parent / "golden" / "effects_off.json").read_text("utf-8"))
EFFECTS = fields.TABLE.keys("training.efficiency.effects")


# Model descriptions the presets have gained since 1.2.0, a model input and not a step effect: the recorded
# figures are those of the description 1.2.0 had (DeepSeek-V3's MLA counted as multi-head attention of
# width hidden before 1.5.0, ``model.mla: null``; its multi-token-prediction module, 1.7.0, ``mtp_layers: 0``).
# The DeepSeek-V3 preset of 1.2.0 had multi-head attention and no MTP module, with the published counts, which a
# changed preset shape would now shift (solvers.inputs.model._changed_shape): they are stated as they were.
# MegaScale's GPT-3 175B restates the vocabulary (64,000), which kept the published count at 1.2.0 as well.
MODEL_AT_1_2_0: dict[str, dict[str, Any]] = {
    "deepseek-v3-2048xh800": {"mla": None, "mtp_layers": 0, "params": 671e9, "active_params": 37e9},
    **{name: {"params": 175e9} for name in ("megascale-175b-256", "megascale-175b-256-megatron",
                                            "megascale-175b-12288", "megascale-175b-12288-megatron")},
}  # fmt: skip

# Layouts of examples corrected against their sources since 1.2.0 (corpus/*.yaml "audit 2" headers): the
# recorded figures are those of the layout the example stated then.
LAYOUT_AT_1_2_0: dict[str, dict[str, Any]] = {
    "bloom-176b-384xa100": {"grad_reduce_dtype": "bf16"},  # DeepSpeed's BF16 pipeline engine reduces FP32
    "opt-175b-992xa100": {"microbatch_seqs": 1},  # metaseq's launcher: one micro-batch of 8
    # Table 1 of Narayanan et al. (corpus/narayanan-2021.yaml "audit 8"): micro-batch 1 and 1F1B were assumed
    # until NVIDIA's reproduction script (examples/sc21/run_table_1.sh) was read.
    **{
        f"megatron-sc21-{size}": {"microbatch_seqs": 1, "schedule": "1f1b", "virtual_stages": 1}
        for size in ("1.7b", "3.6b", "7.5b", "18.4b", "39.1b", "76.1b", "145.6b", "310.1b", "529.6b")
    },
}
# The same audit: the rows without a pipeline state PyTorch DDP's overlapped all-reduce, which they did not.
EFFICIENCY_ADDED_AFTER_1_2_0 = {f"megatron-sc21-{size}" for size in ("1.7b", "3.6b", "7.5b", "18.4b")}
# Scenario fields added since 1.2.0 whose default is what 1.2.0 did without a field: stated, so that the
# report does not warn that a default was taken (ZeRO-3's exchange once per step was the v1 convention).
TRAINING_AT_1_2_0: dict[str, Any] = {"zero3_exchange": "once_per_step"}
# Training fields of examples corrected against their sources since 1.2.0: the recorded figures are those of
# what the example stated then (DeepSeek's dispatch, one InfiniBand copy per node, stated at 1.7.0).
TRAINING_OF_EXAMPLE_AT_1_2_0: dict[str, dict[str, Any]] = {
    "deepseek-v3-2048xh800": {"moe_dispatch": "per_expert"}
}


def all_off(document: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    training = out.setdefault("training", {})
    efficiency = training.setdefault("efficiency", None) or {}
    training["efficiency"] = efficiency
    efficiency["effects"] = {name: False for name in EFFECTS}
    return out


def test_the_switches_are_the_effects() -> None:
    """The switches are the ``bool`` fields of ``EffectsSpec``, in their order: the field table's rows, the
    resolver's and ``solvers.fit``'s names all come from there, so an effect is added in one place."""
    switches = tuple(f.name for f in dataclasses.fields(EffectsSpec) if f.type in (bool, "bool"))
    assert EFFECT_SWITCHES == switches == EFFECTS == fit._EFFECT_NAMES
    prefix = "training.efficiency.effects."
    assert tuple(f.path.removeprefix(prefix) for f in fields.FIELDS if f.path.startswith(prefix)) == switches
    for name, source in EFFECT_SOURCES:
        row = fields.TABLE[f"training.efficiency.effects.{name}"]
        assert row.default is EFFECT_DOCUMENT_DEFAULTS[name] and row.source == source
    # every switch reaches the resolved spec, and each one alone turns the effects on
    resolved = resolve(
        load_yaml((ROOT / "examples" / "quickstart-llama3-8b-64xh100.yaml").read_text("utf-8"))
    )
    assert all(
        getattr(resolved.training.effects, name) is EFFECT_DOCUMENT_DEFAULTS[name] for name in switches
    )
    # on in documents, but for an effect of one framework version, which a scenario states
    assert [name for name in switches if not EFFECT_DOCUMENT_DEFAULTS[name]] == [
        "zero3_per_tensor_collectives"
    ]
    for name in switches:
        assert EffectsSpec(**{name: True}).any_on
    assert not EffectsSpec().any_on
    assert set(EFFECTS) == {
        "matrix_shape",
        "stragglers",
        "moe_overhead",
        "pipeline_ends",
        "context_parallel",
        "attention_core",
        "attention_kernels",
        "zero3_recompute_regather",
        "zero3_per_tensor_collectives",
        "fp8_scope",
        "unfused_elementwise",
        "expert_kernels",
        "expert_tp_exchange",
        "fp8_casts",
        "shape_by_precision",
        "fp8_tp_gather",
    }


OUTSIDE_VALIDATED_RUNS = "layout: the chosen layout lies outside the validated runs"


@pytest.mark.parametrize("name", sorted(RECORDED["reports"]))
def test_effects_off_reproduce_the_recorded_figures(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # ``layout: auto`` chooses among every layout, as it did before the validated envelope existed
    monkeypatch.setattr("solvers.entry.DEFAULT_WITHIN_VALIDATED", False)
    document = load_yaml((ROOT / "examples" / f"{name}.yaml").read_text(encoding="utf-8"))
    document["model"] = {**document["model"], **MODEL_AT_1_2_0.get(name, {})}
    if name in LAYOUT_AT_1_2_0:
        document["training"]["layout"] = {**document["training"]["layout"], **LAYOUT_AT_1_2_0[name]}
    if name in EFFICIENCY_ADDED_AFTER_1_2_0:
        del document["training"]["efficiency"]
    document["training"] = {
        **TRAINING_AT_1_2_0,
        **document["training"],
        **TRAINING_OF_EXAMPLE_AT_1_2_0.get(name, {}),
    }
    report = json.loads(json.dumps(solve(all_off(document)), allow_nan=False))
    # nor did it warn of a layout outside the validated runs, which did not exist then
    report["warnings"] = [w for w in report["warnings"] if not w.startswith(OUTSIDE_VALIDATED_RUNS)]
    recorded = RECORDED["reports"][name]
    for key, value in recorded.items():
        assert report[key] == value, (name, key)


@pytest.mark.parametrize("name", ["llama3-405b-16384", "deepseek-v3-2048xh800"])
def test_each_loss_effect_lengthens_the_step(name: str) -> None:
    # At the same constants (the fitted set, which any switched-on effect brings with it: the large-GEMM
    # efficiency and the FP8 rate factor included), switching one effect on never shortens the step.
    document = load_yaml((ROOT / "examples" / f"{name}.yaml").read_text(encoding="utf-8"))
    on = resolve(document)
    layout = on.layout
    assert layout is not None and on.training.effects.any_on
    off_fx = replace(on.training.effects, **{effect: False for effect in EFFECTS})

    def step_s(effects: EffectsSpec) -> float:
        row, message = engine.evaluate_one(
            model=on.model,
            cluster=on.cluster,
            training=replace(on.training, effects=effects),
            layout=layout,
        )
        assert row is not None, message
        return float(row["step_s"])

    base = step_s(off_fx)
    # pipeline_ends may also shorten a step: a planned split can beat the even spread's ceil(L/p) layers.
    for effect in (e for e in EFFECTS if e != "pipeline_ends"):
        assert step_s(replace(off_fx, **{effect: True})) >= base, effect  # a loss, never a gain


@pytest.mark.parametrize(("tp", "lengthens"), [(2, True), (8, False)])
def test_the_recompute_regather_lengthens_only_the_layouts_it_affects(tp: int, lengthens: bool) -> None:
    # Llama 3 405B, 1F1B, ZeRO-3 resharded after the forward pass, full recompute. One layer holds 3.2e9
    # parameters: at tp 2 a block's 1.6e9 on the GPU reach DeepSpeed's reuse distance (1e9) and the backward
    # gathers a third time; at tp 8 (0.4e9) the coordinator keeps them gathered and nothing changes.
    document = load_yaml((ROOT / "examples" / "llama3-405b-16384.yaml").read_text(encoding="utf-8"))
    on = resolve(document)
    assert on.layout is not None
    gpus = on.layout.tp * on.layout.pp * on.layout.cp * on.layout.dp
    layout = replace(
        on.layout,
        tp=tp,
        dp=gpus // (tp * on.layout.pp * on.layout.cp),
        schedule=SCHEDULES.index("1f1b"),
        virtual_stages=1,
        zero_stage=3,
        fsdp_reshard_after_forward=True,
        recompute=2,
    )
    off_fx = replace(on.training.effects, **{effect: False for effect in EFFECTS})

    def step_s(effects: EffectsSpec) -> float:
        row, message = engine.evaluate_one(
            model=on.model, cluster=on.cluster, training=replace(on.training, effects=effects), layout=layout
        )
        assert row is not None, message
        return float(row["step_s"])

    base = step_s(off_fx)
    regather = step_s(replace(off_fx, zero3_recompute_regather=True))
    if lengthens:
        assert regather > base
    else:
        assert regather == base
