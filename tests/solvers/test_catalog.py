"""Catalog presets: required keys, provenance on every value, consistency between tables."""

from __future__ import annotations

import json

import pytest

from solvers.catalog import (
    ACCELERATORS,
    FABRICS,
    MODELS,
    NODES,
    REGIONS,
    accelerator_entry,
    calibration,
    catalog_document,
    did_you_mean,
    fabric_entry,
)
from solvers.inputs import resolve
from solvers.specs import PRECISIONS

REQUIRED_ACCELERATORS = {
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "h100-sxm",
    "h800-sxm",
    "h200-sxm",
    "b200",
    "gb200",
    "gb300",
    "mi300x",
}
REQUIRED_MODELS = {
    "gpt3-175b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "mixtral-8x7b",
    "deepseek-v3",
    "megatron-530b",
    "megatron-1t",
}
REQUIRED_FABRICS = {
    "nvlink3",
    "nvlink4",
    "nvlink5",
    "nvlink-switch-nvl72",
    "infinity-fabric",
    "infiniband-hdr",
    "infiniband-ndr",
    "infiniband-xdr",
    "roce-200g",
    "roce-400g",
    "ethernet-100g",
}
ACCEL_FIELDS = ("peak_tflops", "hbm_gb", "hbm_tb_s", "tdp_w", "unit_price_usd", "embodied_kgco2e")


def test_required_keys_exist() -> None:
    assert set(ACCELERATORS) >= REQUIRED_ACCELERATORS
    assert set(MODELS) >= REQUIRED_MODELS
    assert set(FABRICS) >= REQUIRED_FABRICS
    assert {
        "dgx-a100-80gb",
        "dgx-h100",
        "dgx-h200",
        "dgx-b200",
        "gb200-nvl72",
        "gb300-nvl72",
        "mi300x-platform",
    } <= set(NODES)


@pytest.mark.parametrize("key", sorted(ACCELERATORS))
def test_accelerator_values_carry_sources(key: str) -> None:
    entry = accelerator_entry(key)
    for field in (*ACCEL_FIELDS, "compute_efficiency"):
        assert field in entry, field
        assert entry["sources"].get(field), f"{key}.{field} has no source"
    assert "bf16" in entry["peak_tflops"]
    assert set(entry["peak_tflops"]) <= set(PRECISIONS)
    for value in entry["peak_tflops"].values():
        assert value > 0
    assert 0 < entry["compute_efficiency"] < 1
    assert entry["hbm_gb"] > 0 and entry["hbm_tb_s"] > 0 and entry["tdp_w"] > 0


def test_hopper_peaks_match_the_data_sheet() -> None:
    assert ACCELERATORS["h100-sxm"]["peak_tflops"]["bf16"] == pytest.approx(989.4)
    assert ACCELERATORS["h100-sxm"]["peak_tflops"]["fp8"] == pytest.approx(2 * 989.4, rel=1e-3)
    assert ACCELERATORS["a100-sxm-80gb"]["peak_tflops"]["bf16"] == 312.0
    assert "fp8" not in ACCELERATORS["a100-sxm-80gb"]["peak_tflops"]


@pytest.mark.parametrize("key", sorted(FABRICS))
def test_fabric_achieved_rate_is_nominal_times_factor(key: str) -> None:
    entry = fabric_entry(key)
    assert entry["scope"] in ("scale_up", "scale_out")
    assert 0 < entry["achievable_factor"] <= 1
    assert entry["bandwidth_gb_s"] == pytest.approx(entry["nominal_gb_s"] * entry["achievable_factor"])
    for field in ("nominal_gb_s", "latency_us", "achievable_factor"):
        assert entry["sources"].get(field), f"{key}.{field} has no source"


def test_calibration_covers_every_catalog_entry() -> None:
    assert set(calibration.COMPUTE_EFFICIENCY) >= set(ACCELERATORS)
    assert set(calibration.FABRIC_ACHIEVABLE) >= set(FABRICS)


@pytest.mark.parametrize("key", sorted(NODES))
def test_nodes_reference_existing_entries(key: str) -> None:
    node = NODES[key]
    assert node["accelerator"] in ACCELERATORS
    assert FABRICS[node["scale_up"]]["scope"] == "scale_up"
    assert FABRICS[node["scale_out"]]["scope"] == "scale_out"
    assert node["gpus_per_node"] >= 1
    assert node["sources"]["node"]


@pytest.mark.parametrize("key", sorted(MODELS))
def test_models_are_consistent_and_sourced(key: str) -> None:
    m = MODELS[key]
    assert m["hidden"] % m["heads"] == 0
    assert m["heads"] % m["kv_heads"] == 0
    assert m["params"] > 0
    assert m["sources"].get("shape") and m["sources"].get("params")
    # Whether dropout masks are stored changes activation memory by a fifth: every preset states it, sourced.
    assert isinstance(m.get("dropout"), bool) and m["sources"].get("dropout")
    if "moe" in m:
        assert m["moe"]["top_k"] <= m["moe"]["experts"]
        assert m["moe"]["moe_layers"] <= m["layers"]
        assert 0 < m["active_params"] < m["params"]


def test_megatron_sc21_table1_family_is_present() -> None:
    for size in ("1.7b", "3.6b", "7.5b", "18.4b", "39.1b", "76.1b", "145.6b", "310.1b"):
        assert f"megatron-{size}" in MODELS
    assert MODELS["megatron-1t"]["layers"] == 128 and MODELS["megatron-1t"]["hidden"] == 25_600
    assert {"bloom-176b", "opt-175b"} <= set(MODELS)


def test_catalog_document_is_json_and_complete() -> None:
    doc = catalog_document()
    assert set(doc) == {"accelerators", "nodes", "fabrics", "models", "regions"}
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["accelerators"]["h100-sxm"]["compute_efficiency"] > 0
    assert set(doc["regions"]) == set(REGIONS)
    assert {"quebec", "poland", "us-average", "iceland"} <= set(doc["regions"])


def test_catalog_document_is_a_copy() -> None:
    doc = catalog_document()
    doc["accelerators"]["h100-sxm"]["tdp_w"] = 1.0
    doc["models"]["llama3-8b"]["layers"] = 1
    assert accelerator_entry("h100-sxm")["tdp_w"] == 700.0
    assert MODELS["llama3-8b"]["layers"] == 32


def test_did_you_mean() -> None:
    assert did_you_mean("h100", ACCELERATORS) == " (did you mean 'h100-sxm'?)"
    assert did_you_mean("zzzzzz", ACCELERATORS) == ""


def test_an_accelerator_caveat_is_a_warning_of_every_report_on_it() -> None:
    """A preset the model prices less well than its peers says so in each report that uses it (GB300 at
    GB200's rates), once, with the field's path; a preset without a caveat adds no warning."""
    from solvers import solve

    def doc(node: str) -> dict[str, object]:
        return {
            "model": {"preset": "llama3-8b"},
            "cluster": {"node": node, "gpus": 8, "gpus_per_node": 8},
            "training": {"seq_len": 8192, "global_batch_seqs": 64, "precision": "fp8", "layout": {"tp": 1}},
        }

    caveats = {key: entry["caveat"] for key, entry in ACCELERATORS.items() if "caveat" in entry}
    assert set(caveats) == {"gb300"}
    for text in caveats.values():
        assert isinstance(text, str) and text.strip()
    gb300 = solve(doc("gb300-nvl72"), ranges=False)["warnings"]
    assert [w for w in gb300 if w.startswith("cluster.accelerator: GB300 is priced at GB200's")] == [
        f"cluster.accelerator: {caveats['gb300']}"
    ]
    assert not any("GB300" in w for w in solve(doc("gb200-nvl72"), ranges=False)["warnings"])
    own_rates = doc("gb300-nvl72")
    own_rates["cluster"]["accelerator"] = {  # type: ignore[index]
        "preset": "gb300",
        "peak_tflops": {"bf16": 2750.0, "fp8": 5500.0},
    }
    assert not any("GB300" in w for w in solve(own_rates, ranges=False)["warnings"])
    # a stored plan's resolved document states the preset's rates: solved again, it says so again
    from solvers import resolve

    stored = resolve(doc("gb300-nvl72")).document
    assert f"cluster.accelerator: {caveats['gb300']}" in solve(stored, ranges=False)["warnings"]
    # another FP32 peak leaves the BF16 and FP8 rates the caveat is about in force
    fp32_only = doc("gb300-nvl72")
    fp32_only["cluster"]["accelerator"] = {"preset": "gb300", "peak_tflops": {"fp32": 100.0}}  # type: ignore[index]
    assert f"cluster.accelerator: {caveats['gb300']}" in solve(fp32_only, ranges=False)["warnings"]


@pytest.mark.parametrize("key", sorted(ACCELERATORS))
def test_a_renamed_preset_is_priced_as_its_preset(key: str) -> None:
    """A scenario may give a preset its own display name: its calibration family (the fitted efficiency),
    its fused-attention ratio and GB300's attention gain are still the preset's, and so is the search
    envelope's generation. Solving the resolved document again (a stored plan re-run) gives the same step."""
    from solvers import resolve, solve
    from solvers.search.envelope import generation_of

    def doc(accelerator: object) -> dict[str, object]:
        return {
            "model": {"preset": "llama3-8b"},
            "cluster": {"accelerator": accelerator, "gpus": 8, "gpus_per_node": 8},
            "training": {
                "seq_len": 8192,
                "global_batch_seqs": 64,
                "attention_kernel": "cudnn"
                if key in ("h100-sxm", "h800-sxm", "h200-sxm", "b200", "gb200", "gb300")
                else "flash2",
                "layout": {"tp": 1},
            },
        }

    preset = resolve(doc(key))
    renamed = resolve(doc({"preset": key, "name": "our fleet's accelerators"}))
    assert renamed.cluster.accelerator.name == "our fleet's accelerators"
    assert renamed.cluster.accelerator.catalog_key == preset.cluster.accelerator.catalog_key == key
    assert renamed.training.compute_efficiency == preset.training.compute_efficiency
    assert (
        solve(doc({"preset": key, "name": "ours"}), ranges=False)["step"]
        == solve(doc(key), ranges=False)["step"]
    )
    assert generation_of(renamed.cluster.accelerator.catalog_ref) == generation_of(
        str(ACCELERATORS[key]["name"])
    )
    stored = renamed.document
    assert stored["cluster"]["accelerator"]["preset"] == key
    assert solve(stored, ranges=False)["step"] == solve(doc(key), ranges=False)["step"]


def test_a_custom_accelerator_has_no_preset_in_its_document() -> None:
    from solvers import resolve

    custom = {
        "name": "custom",
        "peak_tflops": {"bf16": 1000.0},
        "hbm_gb": 96.0,
        "hbm_tb_s": 4.0,
        "tdp_w": 900.0,
    }
    resolved = resolve(
        {
            "model": {"preset": "llama3-8b"},
            "cluster": {"accelerator": custom, "gpus": 8, "gpus_per_node": 8},
            "training": {"seq_len": 8192, "global_batch_seqs": 64, "layout": {"tp": 1}},
        }
    )
    assert resolved.cluster.accelerator.catalog_key is None
    assert resolved.cluster.accelerator.catalog_ref == "custom"
    assert "preset" not in resolved.document["cluster"]["accelerator"]


def test_gb200_nvl72_scale_out_is_one_400g_nic_per_gpu() -> None:
    """GB200 NVL72 compute trays carry 4 ConnectX-7 NDR 400 Gb/s NICs per 4 GPUs (MLPerf Training v5.0/v5.1/v6.0
    systems JSON of NVIDIA and CoreWeave, quoted in corpus/mlperf-training-v50.yaml audit 6; Crusoe's GB200 NVL72
    system: 4x BlueField-3/ConnectX-7 per 4-GPU node). ConnectX-8 800 Gb/s is the GB300 generation. So the
    node's default scale-out carries at most 400 Gb/s = 50 GB/s per GPU per direction."""
    default = resolve({"cluster": {"node": "gb200-nvl72", "gpus": 72}}).cluster.scale_out
    ndr = resolve(
        {"cluster": {"node": "gb200-nvl72", "gpus": 72, "scale_out": "infiniband-ndr"}}
    ).cluster.scale_out
    assert default.bandwidth_gb_s <= 50.0
    assert default == ndr
