"""``training.tp_vocab_parallel``: a TP group that does not split the vocabulary replicates the input embedding on
every rank, all-gathers the output layer's logits each microbatch and computes the loss on the whole vocabulary on
every rank (KempnerForge at 01b461a), where Megatron-Core and torchtitan's ``loss_parallel`` split all three."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers import ScenarioError, resolve, solve
from solvers.compute import LOSS_PASSES

# KempnerForge's 7B at TP 4 x FSDP 2 on 8 H200 (corpus/kempnerforge-2026.yaml, row 7).
DOC: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h200", "gpus": 8, "gpus_per_node": 4},
    "training": {
        "seq_len": 4096,
        "global_batch_seqs": 16,
        "layout": {"tp": 4, "pp": 1, "cp": 1, "microbatch_seqs": 4, "zero_stage": 3, "recompute": "full"},
    },
}


def _report(doc: dict[str, Any], split: bool | None) -> Any:
    doc = copy.deepcopy(doc)
    if split is not None:
        doc["training"]["tp_vocab_parallel"] = split
    return solve(doc, ranges=False)


def test_the_default_splits_the_vocabulary_and_changes_nothing() -> None:
    default, stated = _report(DOC, None), _report(DOC, True)
    assert {k: v for k, v in default.items() if k != "assumptions"} == {
        k: v for k, v in stated.items() if k != "assumptions"
    }
    assert "tp_vocab_parallel" not in resolve(DOC).document["training"]
    doc = copy.deepcopy(DOC)
    doc["training"]["tp_vocab_parallel"] = False
    assert resolve(doc).document["training"]["tp_vocab_parallel"] is False


def test_without_tensor_parallelism_nothing_moves() -> None:
    doc = copy.deepcopy(DOC)
    doc["training"]["layout"].update({"tp": 1, "microbatch_seqs": 1})
    assert _report(doc, False)["step"] == _report(doc, True)["step"]


def test_the_loss_the_gather_and_the_embedding_each_cost_what_they_should() -> None:
    split, whole = _report(DOC, True), _report(DOC, False)
    tokens, vocab, tp, m = 4 * 4096, 128256, 4, 2  # 16 sequences over dp 2 at 4 a microbatch
    # the loss on every rank: six passes over tokens x V in BF16, 3/4 of them extra, at the H200's 4.8 TB/s
    loss_s = m * LOSS_PASSES * 2 * tokens * vocab * (1 - 1 / tp) / 4.8e12
    # within the straggler jitter's stretch and the SM share that hidden exchanges take from the math
    assert whole["step"]["compute_s"] - split["step"]["compute_s"] == pytest.approx(loss_s, rel=0.1)
    # the logits gathered each microbatch: 3/4 of tokens x V x 2 bytes a GPU
    gathered = whole["traffic"]["bytes_per_gpu"]["tp"] - split["traffic"]["bytes_per_gpu"]["tp"]
    assert gathered == pytest.approx(m * (1 - 1 / tp) * tokens * vocab * 2, rel=1e-12)
    # the embedding on every TP rank: more data-parallel bytes and more memory
    assert whole["traffic"]["bytes_per_gpu"]["dp"] > split["traffic"]["bytes_per_gpu"]["dp"]
    extra_weights = whole["memory"]["weights_bytes"] - split["memory"]["weights_bytes"]
    # at least its BF16 share sharded over dp 2 (ZeRO-3 also holds gathered layers, which the engine sizes as
    # the stage's parameters over its layers)
    assert extra_weights >= vocab * 4096 * (1 - 1 / tp) * 2 / 2 * (1 - 1e-12)


@settings(max_examples=10, deadline=None)
@given(tp=st.sampled_from([2, 4]), microbatch=st.sampled_from([1, 2, 4]))
def test_a_replicated_vocabulary_is_never_faster(tp: int, microbatch: int) -> None:
    doc = copy.deepcopy(DOC)
    doc["training"]["layout"].update({"tp": tp, "microbatch_seqs": microbatch})
    doc["training"]["global_batch_seqs"] = 8 // tp * microbatch * 2
    assert _report(doc, False)["step"]["step_s"] > _report(doc, True)["step"]["step_s"]


def test_a_non_boolean_is_refused_with_its_path() -> None:
    doc = copy.deepcopy(DOC)
    doc["training"]["tp_vocab_parallel"] = "no"
    with pytest.raises(ScenarioError) as err:
        resolve(doc)
    assert [e.path for e in err.value.errors] == ["training.tp_vocab_parallel"]
