"""Every value inside the field table's limits gives a report or a ``ScenarioError`` naming a field.

The table's limits are the contract of what a document may hold (``solvers.FIELD_LIMITS``). Inside them the
solver answers with a report of finite numbers or refuses the document naming the field; no other exception
(an overflow to infinity, a division by zero, a NaN reaching ``math.floor``) and no internal error. Values
the solver derives (a batch in sequences, a parameter count from a shape) are held to the limits of the field
that states them in the report's ``scenario``, so that the report's own document solves again.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from solvers import FIELD_LIMITS, ScenarioError, resolve, solve, solve_many
from solvers.document_text import load_yaml
from solvers.inputs import fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DOCUMENTS = ("quickstart-llama3-8b-64xh100.yaml", "mixtral-8x7b-256xh200.yaml", "deepseek-v3-2048xh800.yaml")


def _resolved(name: str) -> dict[str, Any]:
    return resolve(load_yaml((EXAMPLES / name).read_text()), step=False).document


def _set(document: dict[str, Any], path: str, value: Any) -> bool:
    *parents, name = path.split(".")
    target = document
    for key in parents:
        if not isinstance(target.get(key), dict):
            return False
        target = target[key]
    target[name] = value
    return True


def _in_limit_values(row: fields.Field) -> list[Any]:
    """The limits themselves (the next float above an exclusive minimum) and values near the minimum."""
    lo, hi = row.minimum, row.maximum
    if row.kind == "integer":
        return [int(lo), int(hi)]
    first = math.nextafter(lo, math.inf) if row.exclusive_min else lo
    values = [first, lo + 1e-300, lo * 1.5 if lo else 1e-200, hi]
    in_limits = [v for v in values if (v > lo if row.exclusive_min else v >= lo) and v <= hi]
    return [[v] for v in in_limits] if row.kind == "list" else in_limits


NUMERIC_ROWS = [row for row in fields.TABLE.by_path.values() if row.kind in ("number", "integer", "list")]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_in_limit_value_gives_a_report_or_names_a_field(name: str) -> None:
    base = _resolved(name)
    problems = []
    for row in NUMERIC_ROWS:
        for value in _in_limit_values(row):
            document = copy.deepcopy(base)
            if not _set(document, row.path, value):
                continue
            try:
                report = solve(document, ranges=False)
            except ScenarioError as exc:
                assert exc.first.path, (row.path, value)
                continue
            except Exception as exc:
                problems.append(f"{row.path}={value!r}: {type(exc).__name__}: {exc}")
                continue
            assert math.isfinite(report["step"]["step_s"]) and report["step"]["step_s"] > 0
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "path",
    [
        "cluster.accelerator.peak_tflops.bf16",
        "cluster.accelerator.peak_tflops.fp8",
        "cluster.accelerator.hbm_tb_s",
        "cluster.scale_out.bandwidth_gb_s",
        "cluster.storage.write_gb_s",
        "cluster.storage.per_writer_gb_s",
        "cluster.reliability.gpu_mttf_h",
        "training.efficiency.compute",
        "training.checkpoint.interval_h",
        "economics.amortization_years",
        "economics.embodied_lifetime_years",
    ],
)
def test_a_divisor_just_above_zero_is_refused_naming_its_field(path: str) -> None:
    """1e-300 TFLOP/s, GB/s, hours or years used to overflow the step or the ledger: a report of infinities,
    a ZeroDivisionError (an FP8 peak a BF16 run does not use) or an internal error. Such a quantity's lower
    limit is a thousandth of its unit (``solvers.inputs.rows``)."""
    assert FIELD_LIMITS[path]["minimum"] == 1e-3 and not FIELD_LIMITS[path]["exclusive_minimum"]
    document = _resolved(DOCUMENTS[0])
    assert _set(document, path, 1e-300)
    with pytest.raises(ScenarioError) as exc:
        solve(document)
    assert exc.value.first.path == path
    (result,) = solve_many([document])
    refusal: dict[str, Any] = dict(result)  # solve_many's entry for a refused document: {"error": ...}
    assert refusal["error"]["errors"][0]["path"] == path


@pytest.mark.parametrize(
    ("training", "culprit"),
    [
        # 100M sequences of 8,192 tokens: 8.2e11 tokens, above the 1e11 limit of global_batch_tokens
        ({"global_batch_seqs": 100_000_000, "layout": {"tp": 1, "pp": 1}}, "training.global_batch_seqs"),
        # no batch stated: the default ~4M tokens rounded up to dp x microbatch_seqs = 64 x 1,000,000 sequences
        ({"layout": {"tp": 1, "pp": 1, "microbatch_seqs": 1_000_000}}, "training.layout.microbatch_seqs"),
    ],
    ids=["global_batch_seqs", "default_batch_from_microbatch_seqs"],
)
def test_a_batch_derived_above_the_token_limit_is_refused(training: dict[str, Any], culprit: str) -> None:
    document = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "training": training,
    }
    with pytest.raises(ScenarioError) as exc:
        solve(document)
    assert exc.value.first.path == culprit
    assert "above the limit of training.global_batch_tokens" in exc.value.first.message


def test_the_largest_batch_in_sequences_solves_again_from_its_report() -> None:
    tokens = int(FIELD_LIMITS["training.global_batch_tokens"]["maximum"])
    seqs = tokens // 8192 // 64 * 64  # a multiple of dp
    document = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "training": {"seq_len": 8192, "global_batch_seqs": seqs, "layout": {"tp": 1, "pp": 1}},
    }
    report = solve(document, ranges=False)
    assert solve(report["scenario"], ranges=False)["step"] == report["step"]


@pytest.mark.parametrize(
    "model",
    [
        # no preset: params derived from the shape, 1.2e16 > 1e15
        {"layers": 1000, "hidden": 1_000_000, "heads": 1000, "vocab": 1000},
        # a preset's published count shifted by a changed shape: 1.6e15 > 1e15
        {"preset": "deepseek-v3", "moe": {"expert_ffn_hidden": 5_000_000}},
    ],
    ids=["derived_from_shape", "preset_shifted_by_shape"],
)
def test_a_parameter_count_derived_above_its_limit_is_refused(model: dict[str, Any]) -> None:
    document = {"model": model, "cluster": {"node": "dgx-h100", "gpus": 64}, "training": {"seq_len": 4096}}
    with pytest.raises(ScenarioError) as exc:
        resolve(document)
    assert exc.value.first.path == "model.params"
    assert "above the limit of model.params (1e+15)" in exc.value.first.message
