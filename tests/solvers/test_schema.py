"""Scenario parsing and resolution (solvers.inputs): strictness, presets, defaults, the assumptions ledger."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from solvers import inputs
from solvers.canonical import canonical_hash
from solvers.catalog import ACCELERATORS, MODELS, REGIONS, fabric_entry
from solvers.errors import FieldError, ScenarioError
from solvers.inputs import fields, resolve, rows, transformer_params, validate_part
from solvers.inputs.training import DEFAULT_BATCH_TOKENS
from solvers.ledger_defaults import DEFAULTS


def base_doc() -> dict:
    return {
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": "dgx-h100", "gpus": 512},
        "site": {"region": "quebec"},
        "training": {"global_batch_seqs": 512, "layout": {"tp": 8, "pp": 1}},
    }


def errors_of(doc: object) -> list[FieldError]:
    with pytest.raises(ScenarioError) as info:
        resolve(doc)
    return info.value.errors


def paths_of(doc: object) -> list[str]:
    return [e.path for e in errors_of(doc)]


def assumption(resolved: inputs.Resolved, key: str) -> dict:
    matches = [a for a in resolved.assumptions if a["key"] == key]
    assert matches, f"no assumption {key}"
    return matches[-1]


# ---- errors --------------------------------------------------------------------------------------------


def test_scenario_error_is_a_value_error_with_readable_text() -> None:
    exc = ScenarioError([FieldError("training.layout.tp", "must divide gpus"), FieldError("model.x", "bad")])
    assert isinstance(exc, ValueError)
    assert str(exc) == "training.layout.tp: must divide gpus; model.x: bad"
    assert exc.as_dict()["path"] == "training.layout.tp"
    assert len(exc.as_dict()["errors"]) == 2


def test_unknown_top_level_key_suggests_the_close_one() -> None:
    errors = errors_of({**base_doc(), "modle": {}})
    assert errors[0].path == "modle"
    assert "did you mean 'model'" in errors[0].message


def test_unknown_nested_key_names_its_full_path() -> None:
    doc = base_doc()
    doc["training"]["layout"]["tensor_parallel"] = 8
    assert "training.layout.tensor_parallel" in paths_of(doc)


def test_unknown_catalog_key_suggests_the_close_one() -> None:
    doc = base_doc()
    doc["cluster"] = {"accelerator": "h100", "gpus": 8}
    errors = errors_of(doc)
    assert errors[0].path == "cluster.accelerator"
    assert "unknown accelerator 'h100'" in errors[0].message
    assert "did you mean 'h100-sxm'" in errors[0].message


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("layers", "80", "must be an integer, got string"),
        ("layers", True, "must be an integer, got boolean"),
        ("layers", 80.5, "must be an integer"),
        ("layers", 0, "must be >= 1"),
        ("layers", rows.MAX_LAYERS + 1, "must be <= 1,000"),
        ("hidden", float("nan"), "must be finite"),
        ("hidden", float("inf"), "must be finite"),
        ("params", -1.0, "must be >= 1"),
    ],
)
def test_model_numbers_are_checked(field: str, value: object, fragment: str) -> None:
    doc = base_doc()
    doc["model"][field] = value
    errors = errors_of(doc)
    assert errors[0].path == f"model.{field}"
    assert fragment in errors[0].message


def test_gpu_limit_is_the_named_constant() -> None:
    doc = base_doc()
    doc["cluster"]["gpus"] = rows.MAX_GPUS + 8
    errors = errors_of(doc)
    assert errors[0].path == "cluster.gpus"
    assert f"{rows.MAX_GPUS:,}" in errors[0].message
    assert rows.MAX_GPUS == 1_048_576
    assert rows.MAX_SEQ_LEN == 10_000_000
    assert rows.MAX_HIDDEN == 1_000_000


def test_every_error_is_collected_not_just_the_first() -> None:
    doc = base_doc()
    doc["site"]["pue"] = 0.5
    doc["economics"] = {"amortization_years": 0}
    doc["cluster"]["power"] = {"idle_fraction": 1.5}
    paths = paths_of(doc)
    assert {"site.pue", "economics.amortization_years", "cluster.power.idle_fraction"} <= set(paths)


def test_document_must_be_an_object() -> None:
    assert errors_of([1, 2])[0].message.startswith("must be an object")


def test_schema_version_other_than_1_is_rejected() -> None:
    assert paths_of({**base_doc(), "schema_version": 2}) == ["schema_version"]


def test_gpus_must_fill_whole_nodes() -> None:
    doc = base_doc()
    doc["cluster"]["gpus"] = 12
    errors = errors_of(doc)
    assert errors[0].path == "cluster.gpus"
    assert "multiple of cluster.gpus_per_node (=8)" in errors[0].message


def test_layout_that_does_not_divide_the_cluster_names_tp() -> None:
    doc = base_doc()
    doc["training"]["layout"] = {"tp": 8, "pp": 3}
    errors = errors_of(doc)
    assert errors[0].path == "training.layout.tp"
    assert "tp*cp*pp (=24) must divide gpus (=512)" in errors[0].message


def test_explicit_dp_must_match_the_cluster() -> None:
    doc = base_doc()
    doc["training"]["layout"]["dp"] = 32
    errors = errors_of(doc)
    assert errors[0].path == "training.layout.dp"
    assert "(=64)" in errors[0].message


def test_enum_fields_list_their_choices() -> None:
    doc = base_doc()
    doc["training"]["layout"]["schedule"] = "1F1B"
    errors = errors_of(doc)
    assert errors[0].path == "training.layout.schedule"
    assert "gpipe, 1f1b, interleaved, zero_bubble, dualpipe" in errors[0].message


def test_batch_tokens_must_be_whole_sequences() -> None:
    doc = base_doc()
    doc["training"] = {"seq_len": 8192, "global_batch_tokens": 10_000, "layout": {"tp": 8}}
    assert paths_of(doc) == ["training.global_batch_tokens"]


def test_batch_tokens_and_sequences_must_agree() -> None:
    doc = base_doc()
    doc["training"].update({"seq_len": 8192, "global_batch_tokens": 8192 * 512, "global_batch_seqs": 256})
    assert paths_of(doc) == ["training.global_batch_seqs"]


def test_precision_needs_a_peak_on_the_accelerator() -> None:
    doc = base_doc()
    doc["cluster"] = {"node": "dgx-a100-80gb", "gpus": 512}
    doc["training"]["precision"] = "fp8"
    errors = errors_of(doc)
    assert errors[0].path == "training.precision"
    assert "no fp8 peak" in errors[0].message


def test_custom_accelerator_needs_its_physics() -> None:
    doc = base_doc()
    doc["cluster"] = {"accelerator": {"peak_tflops": {"bf16": 500}}, "gpus": 8}
    paths = paths_of(doc)
    assert {"cluster.accelerator.hbm_gb", "cluster.accelerator.hbm_tb_s", "cluster.accelerator.tdp_w"} <= set(
        paths
    )


def test_custom_accelerator_needs_a_bf16_peak() -> None:
    doc = base_doc()
    doc["cluster"] = {
        "accelerator": {"peak_tflops": {"fp8": 500}, "hbm_gb": 80, "hbm_tb_s": 3, "tdp_w": 700},
        "gpus": 512,
    }
    assert "cluster.accelerator.peak_tflops.bf16" in paths_of(doc)


def test_moe_rules() -> None:
    doc = base_doc()
    doc["model"] = {"preset": "mixtral-8x7b", "moe": {"experts": 8, "top_k": 9, "expert_ffn_hidden": 14336}}
    assert "model.moe.top_k" in paths_of(doc)


def test_heads_must_divide_hidden() -> None:
    doc = base_doc()
    doc["model"]["heads"] = 60
    assert "model.hidden" in paths_of(doc)


def test_other_components_list_items_are_checked_by_index() -> None:
    doc = base_doc()
    doc["cluster"]["reliability"] = {"other_mttf_h": [1000.0, -1, "x"]}
    paths = paths_of(doc)
    assert "cluster.reliability.other_mttf_h[1]" in paths
    assert "cluster.reliability.other_mttf_h[2]" in paths


def test_layout_string_other_than_auto_is_rejected() -> None:
    doc = base_doc()
    doc["training"]["layout"] = "automatic"
    assert paths_of(doc) == ["training.layout"]


# ---- resolution ----------------------------------------------------------------------------------------


def test_preset_model_resolves_to_its_published_shape() -> None:
    r = resolve(base_doc())
    assert r.model.layers == 80 and r.model.hidden == 8192 and r.model.kv_heads == 8
    assert r.model.params == pytest.approx(70.6e9)
    assert r.model.active_params == r.model.params
    src = assumption(r, "model.layers")["source"]
    assert src.startswith("model preset 'llama3-70b'")
    assert "Table 3" in src


def test_explicit_fields_override_the_preset_and_say_so() -> None:
    doc = base_doc()
    doc["model"]["layers"] = 40
    r = resolve(doc)
    assert r.model.layers == 40
    assert assumption(r, "model.layers")["source"] == "scenario"


def _preset_params(key: str, *, tied_embeddings: bool) -> tuple[float, float]:
    """(total, activated) parameters of a model preset, from its shape (``transformer_params``)."""
    m = MODELS[key]
    return transformer_params(
        layers=m["layers"],
        hidden=m["hidden"],
        ffn_hidden=m["ffn_hidden"],
        heads=m["heads"],
        kv_heads=m["kv_heads"],
        vocab=m["vocab"],
        gated_mlp=m["gated_mlp"],
        tied_embeddings=tied_embeddings,
        moe=m.get("moe"),
        mla=m.get("mla"),
    )


def test_architecture_parameter_count_matches_published_sizes() -> None:
    for key, tolerance in (
        ("llama3-405b", 0.01),
        ("llama3-70b", 0.01),
        ("llama3-8b", 0.01),
        ("gpt3-175b", 0.01),
    ):
        m = MODELS[key]
        total, active = _preset_params(key, tied_embeddings=key == "gpt3-175b")
        assert total == pytest.approx(m["params"], rel=tolerance), key
        assert active == total


def test_mla_parameter_count_matches_deepseek_v3() -> None:
    """DeepSeek-V3 with MLA from its shape: 671B total and 37B activated (technical report §1)."""
    total, active = _preset_params("deepseek-v3", tied_embeddings=False)
    assert total == pytest.approx(671e9, rel=0.001)
    assert active == pytest.approx(37e9, rel=0.02)


def test_mla_block_reaches_the_model_spec() -> None:
    r = resolve({**base_doc(), "model": {"preset": "deepseek-v3"}})
    assert r.model.mla is not None and r.model.mla.kv_lora_rank == 512
    assert assumption(r, "model.mla.qk_rope_head_dim")["source"].startswith("model preset 'deepseek-v3'")
    doc = base_doc()
    doc["model"] = {
        "layers": 4,
        "hidden": 1024,
        "heads": 8,
        "vocab": 1000,
        "mla": {"kv_lora_rank": 128, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64},
    }
    r = resolve(doc)
    assert r.model.mla is not None and r.model.mla.q_lora_rank == 0
    assert assumption(r, "model.mla.q_lora_rank")["source"].startswith("convention")
    assert resolve({**base_doc(), "model": {"preset": "llama3-8b"}}).model.mla is None
    # null states multi-head attention of width hidden (the description before solver 1.5.0)
    assert resolve({**base_doc(), "model": {"preset": "deepseek-v3", "mla": None}}).model.mla is None
    bad = base_doc()
    bad["model"] = {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "mla": {"kv_lora_rank": 128}}
    with pytest.raises(ScenarioError, match="qk_nope_head_dim"):
        resolve(bad)


def test_moe_active_parameters_follow_top_k() -> None:
    r = resolve({**base_doc(), "model": {"preset": "mixtral-8x7b"}})
    assert r.model.moe is not None and r.model.moe.top_k == 2
    assert r.model.params == pytest.approx(46.7e9)
    assert r.model.active_params == pytest.approx(12.9e9, rel=0.03)


def test_params_derived_when_not_given() -> None:
    doc = base_doc()
    doc["model"] = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "gated_mlp": False}
    r = resolve(doc)
    # 2 x (2*64^2 + 2*64*64 + 2*64*256 + 128) + 2*100*64 + 64
    assert r.model.params == 2 * (2 * 64**2 + 2 * 64 * 64 + 2 * 64 * 256 + 128) + 2 * 100 * 64 + 64
    assert r.model.ffn_hidden == 256
    assert "derived from the architecture" in assumption(r, "model.params")["source"]


def test_catalog_fabric_is_nominal_times_achievable() -> None:
    r = resolve(base_doc())
    ndr = fabric_entry("infiniband-ndr")
    assert r.cluster.scale_out.bandwidth_gb_s == pytest.approx(ndr["nominal_gb_s"] * ndr["achievable_factor"])
    assert assumption(r, "cluster.scale_out.nominal_gb_s")["value"] == 50.0
    assert assumption(r, "cluster.scale_out.achievable_factor")["value"] == ndr["achievable_factor"]


def test_user_bandwidth_is_used_as_achieved() -> None:
    doc = base_doc()
    doc["cluster"]["scale_out"] = {"bandwidth_gb_s": 50, "latency_us": 5, "oversubscription": 2}
    r = resolve(doc)
    assert r.cluster.scale_out.bandwidth_gb_s == 50.0
    assert r.cluster.scale_out.oversubscription == 2.0


def test_fabric_key_overrides_the_node() -> None:
    doc = base_doc()
    doc["cluster"]["scale_out"] = "roce-200g"
    r = resolve(doc)
    assert r.cluster.scale_out.bandwidth_gb_s == pytest.approx(fabric_entry("roce-200g")["bandwidth_gb_s"])


def test_accelerator_preset_with_overrides() -> None:
    doc = base_doc()
    doc["cluster"]["accelerator"] = {
        "preset": "h100-sxm",
        "unit_price_usd": 30_000,
        "compute_efficiency": 0.4,
    }
    r = resolve(doc)
    assert r.cluster.accelerator.unit_price_usd == 30_000.0
    assert r.training.compute_efficiency == 0.4
    assert r.cluster.accelerator.hbm_gb == ACCELERATORS["h100-sxm"]["hbm_gb"]
    assert r.ledger_fields["accelerator_unit_price_usd"] == 30_000.0


def test_region_fills_site_and_explicit_fields_win() -> None:
    doc = base_doc()
    doc["site"] = {"region": "poland", "pue": 1.2}
    r = resolve(doc)
    assert r.ledger_fields["grid_gco2_per_kwh"] == REGIONS["poland"]["grid_gco2_per_kwh"]
    assert r.ledger_fields["pue"] == 1.2
    assert assumption(r, "site.grid_gco2_per_kwh")["source"].startswith("region 'poland'")
    assert assumption(r, "site.pue")["source"] == "scenario"


def test_site_defaults_come_from_the_ledger_table_without_a_region() -> None:
    doc = base_doc()
    doc["site"] = {"region": None}
    r = resolve(doc)
    assert r.ledger_fields["grid_gco2_per_kwh"] == DEFAULTS["site.grid_gco2_per_kwh"].value
    assert assumption(r, "site.grid_gco2_per_kwh")["source"] == DEFAULTS["site.grid_gco2_per_kwh"].source


def test_empty_scenario_resolves_with_every_default_recorded() -> None:
    r = resolve({})
    assert r.cluster.gpus == 8 and r.model.name == "Llama 3 8B"
    assert any("no model given" in w for w in r.warnings)
    keys = {a["key"] for a in r.assumptions}
    for expected in (
        "model.layers",
        "cluster.gpus",
        "cluster.reliability.gpu_mttf_h",
        "cluster.storage.write_gb_s",
        "cluster.power.idle_fraction",
        "site.pue",
        "training.seq_len",
        "training.global_batch_tokens",
        "training.layout.zero_stage",
        "training.efficiency.compute",
        "training.efficiency.overlap.dp",
        "training.checkpoint.interval_method",
        "economics.amortization_years",
        "economics.job_days",
    ):
        assert expected in keys, expected
    for a in r.assumptions:
        assert set(a) == {"key", "value", "unit", "source"}
        assert a["source"], a["key"]
        if isinstance(a["value"], float):
            assert math.isfinite(a["value"])


def test_default_batch_divides_into_dp_times_microbatch() -> None:
    doc = {
        "cluster": {"gpus": 24, "gpus_per_node": 8},
        "training": {"seq_len": 4096, "layout": {"microbatch_seqs": 2}},
    }
    r = resolve(doc)
    seqs = r.training.global_batch_tokens // 4096
    assert seqs % (24 * 2) == 0
    assert seqs * 4096 >= DEFAULT_BATCH_TOKENS


def test_every_ledger_input_is_resolved() -> None:

    from solvers.ledger import LedgerInputs

    r = resolve(base_doc())
    expected = set(LedgerInputs._fields) - {"step_s", "gpu_busy_fraction", "tokens_per_step"}
    assert set(r.ledger_fields) == expected
    assert r.ledger_fields["nics_per_node"] == 8  # None in the defaults means one per GPU


def test_resolved_document_is_a_fixed_point() -> None:
    r = resolve(base_doc())
    again = resolve(copy.deepcopy(r.document))
    assert again.document == r.document
    assert canonical_hash(again.document) == canonical_hash(r.document)


def test_equivalent_documents_hash_equal() -> None:
    explicit = base_doc()
    explicit["model"] = {
        **{k: MODELS["llama3-70b"][k] for k in ("layers", "hidden", "ffn_hidden", "heads")},
        "kv_heads": 8,
        "vocab": 128_256,
        "params": 70.6e9,
        "dropout": False,  # the preset's; a described model is taken to train with dropout
        "name": "renamed",
    }
    explicit["training"]["seq_len"] = 8192  # the preset's pre-training length, the default with a preset
    a = resolve(base_doc()).document
    b = resolve(explicit).document
    assert canonical_hash(a) == canonical_hash(b)
    c = base_doc()
    c["training"]["layout"]["microbatch_seqs"] = 2
    assert canonical_hash(resolve(c).document) != canonical_hash(a)


def test_layout_batch_round_trip() -> None:
    r = resolve(base_doc())
    assert len(r.layouts) == 1
    layout = inputs.layout_from_batch(r.layouts, 0)
    assert layout == r.document["training"]["layout"]


def test_auto_layout_leaves_the_candidates_to_the_search() -> None:
    doc = base_doc()
    doc["training"]["layout"] = "auto"
    r = resolve(doc)
    assert r.layout_auto and len(r.layouts) == 0  # solvers.search enumerates them
    assert r.document["training"]["layout"] == "auto"


# ---- validate_part -------------------------------------------------------------------------------------


def test_validate_part_prefixes_paths_with_the_part() -> None:
    with pytest.raises(ScenarioError) as info:
        validate_part("cluster", {"gpus": 0})
    assert info.value.errors[0].path == "cluster.gpus"
    with pytest.raises(ScenarioError) as info:
        validate_part("site", {"regoin": "quebec"})
    assert info.value.errors[0].path == "site.regoin"
    assert "did you mean 'region'" in info.value.errors[0].message


@pytest.mark.parametrize(
    ("part", "data"),
    [
        ("model", {"preset": "deepseek-v3"}),
        ("cluster", {"node": "gb200-nvl72", "gpus": 144}),
        ("site", {"region": "iceland"}),
        ("economics", {"job_days": 30, "cloud_usd_per_gpu_hour": 2.5}),
        ("training", {"seq_len": 8192, "layout": {"tp": 8, "pp": 16, "zero_stage": 3}}),
    ],
)
def test_validate_part_accepts_valid_parts(part: str, data: dict) -> None:
    out = validate_part(part, data)
    assert isinstance(out, dict) and out


def test_validate_part_training_checks_its_own_fields() -> None:
    with pytest.raises(ScenarioError) as info:
        validate_part("training", {"layout": {"zero_stage": 4}, "precision": "int4"})
    assert {e.path for e in info.value.errors} == {"training.layout.zero_stage", "training.precision"}


def test_validate_part_rejects_unknown_parts() -> None:
    with pytest.raises(ScenarioError):
        validate_part("plan", {})


def test_huge_integers_are_refused_not_crashed() -> None:
    doc = base_doc()
    doc["model"]["params"] = 10**400
    errors = errors_of(doc)
    assert errors[0].path == "model.params"
    assert "~1e400" in errors[0].message


@pytest.mark.parametrize("path", sorted(p for p in fields.FIELD_LIMITS if not p.endswith("[]")))
def test_every_documented_limit_is_enforced_at_its_path(path: str) -> None:
    limit = fields.FIELD_LIMITS[path]
    too_big = limit["maximum"] * 2 if limit["maximum"] >= 1 else limit["maximum"] + 1
    if limit["integer"]:
        too_big = int(too_big) + 1
    doc = base_doc()
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = too_big
    assert path in paths_of(doc)


# ---- JSON Schema ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def json_validator():
    jsonschema = pytest.importorskip("jsonschema")
    document = inputs.scenario_json_schema()
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)


def test_json_schema_accepts_every_example_and_resolved_document(json_validator) -> None:
    from pathlib import Path

    from solvers.cli import load_yaml

    for path in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml")):
        document = load_yaml(path.read_text(encoding="utf-8"))
        assert not list(json_validator.iter_errors(document)), path.name
        assert not list(json_validator.iter_errors(resolve(document).document)), path.name


@pytest.mark.parametrize(
    "bad",
    [
        {"modle": {}},
        {"model": {"preset": "llama3-40b"}},
        {"cluster": {"gpus": rows.MAX_GPUS + 1}},
        {"training": {"layout": "automatic"}},
        {"training": {"layout": {"schedule": "1F1B"}}},
        {"site": {"pue": 0.9}},
        {"cluster": {"scale_out": {"bandwidth_gb_s": 0}}},
        {"schema_version": 2},
    ],
)
def test_json_schema_rejects_what_resolve_rejects(json_validator, bad: dict) -> None:
    assert list(json_validator.iter_errors(bad))
    with pytest.raises(ScenarioError):
        resolve(bad)


def test_fused_attention_defaults_to_true_with_its_source() -> None:
    resolved = resolve(base_doc())
    note = assumption(resolved, "training.fused_attention")
    assert note["value"] is True and "FlashAttention" in note["source"]
    assert resolved.training.fused_attention is True
    assert resolved.document["training"]["fused_attention"] is True


def test_fused_attention_false_is_kept_and_must_be_a_boolean() -> None:
    doc = base_doc()
    doc["training"]["fused_attention"] = False
    resolved = resolve(doc)
    assert resolved.training.fused_attention is False
    assert assumption(resolved, "training.fused_attention")["source"] == "scenario"
    assert canonical_hash(resolved.document) != canonical_hash(resolve(base_doc()).document)
    doc["training"]["fused_attention"] = "yes"
    errors = errors_of(doc)
    assert [e.path for e in errors] == ["training.fused_attention"]
    assert "true or false" in errors[0].message


def _example_documents() -> list[dict]:
    from solvers.published import EXAMPLES_DIR, load_example

    return [load_example(path.name) for path in sorted(EXAMPLES_DIR.glob("*.yaml"))]


def test_input_hash_is_the_canonical_hash_of_the_resolved_document() -> None:
    docs = [base_doc(), *_example_documents()]
    named = copy.deepcopy(base_doc())
    named["name"], named["description"] = "renamed", "labels leave the hash alone"
    named["model"]["name"] = "also a label"
    docs.append(named)
    for doc in docs:
        resolved = resolve(copy.deepcopy(doc))
        assert resolved.input_hash == canonical_hash(resolved.document)
    assert resolve(named).input_hash == resolve(base_doc()).input_hash


def test_a_resolved_scenario_cannot_be_changed_through_what_it_hands_out() -> None:
    first = resolve(base_doc())
    first.document["cluster"]["reliability"]["other_mttf_h"].append(1.0)
    first.document["model"]["layers"] = 1
    first.assumptions[0]["value"] = "changed"
    first.assumptions.pop(0)
    with pytest.raises(TypeError):
        first.ledger_fields["gpus"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        first.notes[0].value = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        first.layouts.tp[0] = 3
    fresh = resolve(copy.deepcopy(base_doc()))
    assert first.document == fresh.document and first.assumptions == fresh.assumptions
    assert first.document["cluster"]["reliability"]["other_mttf_h"] == []
    assert first.ledger_fields["gpus"] == 512
    second = resolve(base_doc())
    # 512 and 512.0 resolve alike; true is not a GPU count, even right after 1 was resolved.
    doc = base_doc()
    doc["cluster"]["gpus"] = 512.0
    assert resolve(doc).document == second.document
    one: dict[str, Any] = {"model": {"preset": "llama3-8b"}, "cluster": {"gpus": 1, "gpus_per_node": 1}}
    resolve(one)
    one["cluster"]["gpus"] = True
    assert paths_of(one) == ["cluster.gpus"]
