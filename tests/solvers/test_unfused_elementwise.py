"""The eager (unfused) element-wise passes of ``unfused_elementwise``: the worked examples of
``solvers.effects.model_unfused_bytes_per_token_layer``, multi-head latent attention's own widths and the
sequence-parallel split; docs/CONVENTIONS.md "Step effects"."""

from __future__ import annotations

import dataclasses

import pytest

from solvers import effects, resolve, solve
from solvers.published import load_example
from solvers.specs import ModelSpec


def _model(preset: str) -> ModelSpec:
    return resolve({"model": {"preset": preset}}).model


def test_llama3_8b_worked_example() -> None:
    """2 x 32 x 4,096 (two RMSNorms) + 16 x (4,096 + 1,024) (rotary) + 4 x 14,336 (SwiGLU), BF16, tp 1."""
    model = _model("llama3-8b")
    got = effects.model_unfused_bytes_per_token_layer(
        model=model, tp=1, expert_split=1, sequence_parallel=False, element_bytes=2.0
    )
    assert got == 2 * 32 * 4096 + 16 * (4096 + 1024) + 4 * 14336 == 401_408


def test_multi_head_latent_attention_norms_its_latents_and_rotates_its_rotary_parts() -> None:
    """DeepSeek-V3 (MLA: latents of 1,536 and 512, rotary parts of 64 per query head and one shared key part of
    64), BF16, tp 1: norms 32 x (2 x 7,168 + 1,536 + 512), rotary 16 x (128 x 64 + 64), SwiGLU 4 x 18,432 (the
    dense MLP of 18,432 and the 8 routed + 1 shared experts of 2,048 are equally wide)."""
    model = _model("deepseek-v3")
    assert model.mla is not None
    got = effects.model_unfused_bytes_per_token_layer(
        model=model, tp=1, expert_split=1, sequence_parallel=False, element_bytes=2.0
    )
    assert got == 32 * (2 * 7168 + 1536 + 512) + 16 * (128 * 64 + 64) + 4 * 18432 == 730_112
    # As grouped-query attention of heads x h/heads it was 761,856: rotary over 2 x 7,168 and no latent norms.
    as_gqa = dataclasses.replace(model, mla=None)
    assert effects.model_unfused_bytes_per_token_layer(
        model=as_gqa, tp=1, expert_split=1, sequence_parallel=False, element_bytes=2.0
    ) == pytest.approx(761_856)


def test_tensor_and_sequence_parallel_split_what_they_split() -> None:
    """At tp 8 with sequence parallelism the norms (the latents' too) run on 1/8 of the tokens and the query
    heads' rotary parts on 1/8 of the heads; MLA's shared key part stays whole on every rank."""
    model = _model("deepseek-v3")
    got = effects.model_unfused_bytes_per_token_layer(
        model=model, tp=8, expert_split=8, sequence_parallel=True, element_bytes=2.0
    )
    norms = 32 * (2 * 7168 + 1536 + 512) / 8
    rotary = 16 * (128 * 64 / 8 + 64)
    swiglu = 4 * 18432 / 8
    assert got == pytest.approx(norms + rotary + swiglu)
    without_sp = effects.model_unfused_bytes_per_token_layer(
        model=model, tp=8, expert_split=8, sequence_parallel=False, element_bytes=2.0
    )
    assert without_sp == pytest.approx(32 * (2 * 7168 + 1536 + 512) + rotary + swiglu)


def test_an_eager_deepseek_v3_step_is_longer_than_a_fused_one() -> None:
    doc = load_example("deepseek-v3-2048xh800.yaml")
    fused = solve(doc, ranges=False)["step"]
    doc["training"]["fused_elementwise"] = False
    eager = solve(doc, ranges=False)["step"]
    assert eager["compute_s"] > fused["compute_s"]


def test_without_a_query_latent_only_the_key_value_latent_is_normed() -> None:
    """``model.mla.q_lora_rank: 0`` projects the queries from the hidden state directly (DeepSeek-V2-Lite): the
    norms count the key-value latent alone."""
    model = _model("deepseek-v3")
    assert model.mla is not None
    lite = dataclasses.replace(model, mla=dataclasses.replace(model.mla, q_lora_rank=0))
    got = effects.model_unfused_bytes_per_token_layer(
        model=lite, tp=1, expert_split=1, sequence_parallel=False, element_bytes=2.0
    )
    assert got == 32 * (2 * 7168 + 512) + 16 * (128 * 64 + 64) + 4 * 18432
