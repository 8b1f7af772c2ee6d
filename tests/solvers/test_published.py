"""Predicted vs published figures of published training runs (solvers.published)."""

from __future__ import annotations

import statistics

import pytest

from solvers.published import CASES, EXAMPLES_DIR, format_table, published_document


@pytest.fixture(scope="module")
def document() -> dict:
    return published_document()


def test_every_case_has_its_scenario_file() -> None:
    for case in CASES:
        assert (EXAMPLES_DIR / case.example).is_file(), case.example


def test_required_published_runs_are_covered() -> None:
    names = " | ".join(c.case for c in CASES)
    for fragment in (
        "MegaScale 175B, 256 A100, Megatron-LM",
        "MegaScale 175B, 256 A100, MegaScale",
        "MegaScale 175B, 12,288 A100, Megatron-LM",
        "MegaScale 175B, 12,288 A100, MegaScale",
        "Llama 3 405B, 8,192 H100",
        "Llama 3 405B, 16,384 H100, 8K",
        "Llama 3 405B, 16,384 H100, 131K",
        "DeepSeek-V3, 2,048 H800",
        "Megatron-LM SC'21 1T",
        "BLOOM",
        "OPT",
    ):
        assert fragment in names
    deepseek = {c.metric: c.published for c in CASES if c.case.startswith("DeepSeek")}
    assert deepseek == {"mfu_bf16": 0.4373, "step_s": 19.926, "bubble_s": 2.06}


def test_rows_compute_errors_in_their_units(document: dict) -> None:
    rows = document["rows"]
    assert len(rows) == len(CASES)
    for row in rows:
        if row["error_unit"] == "points":
            assert row["error"] == pytest.approx((row["predicted"] - row["published"]) * 100)
            assert 0 < row["predicted"] < 1
        else:
            assert row["error"] == pytest.approx((row["predicted"] / row["published"] - 1) * 100)


def test_summary_matches_rows(document: dict) -> None:
    errors = [abs(r["error"]) for r in document["rows"] if r["error_unit"] == "points"]
    summary = document["summary"]
    assert summary["mfu_rows"] == len(errors)
    assert summary["mean_abs_error_points"] == pytest.approx(statistics.fmean(errors))
    assert summary["max_abs_error_points"] == pytest.approx(max(errors))


def test_table_lists_every_case_and_the_ledger_rows(document: dict) -> None:
    table = format_table(document)
    for case in CASES:
        assert case.case in table
    assert "mean |error|" in table
    for row in document["ledger_rows"]:
        assert str(row["case"]) in table


def test_every_published_mfu_within_ten_points_and_mean_under_five(document: dict) -> None:
    """Issue 2 acceptance, on the scenario files themselves (one default calibration, no per-run tuning)."""
    points = {r["case"]: abs(r["error"]) for r in document["rows"] if r["error_unit"] == "points"}
    assert all(error <= 10.0 for error in points.values()), points
    assert document["summary"]["within_10_points"] == document["summary"]["mfu_rows"]
    assert statistics.fmean(points.values()) < 5.0


def test_runs_before_flash_attention_say_so_and_later_runs_use_the_default() -> None:
    from solvers.published import load_example

    for case in CASES:
        training = load_example(case.example)["training"]
        unfused = case.case.startswith(("Megatron-LM SC'21", "BLOOM", "OPT")) or (
            case.case.startswith("MegaScale") and case.case.endswith("Megatron-LM")
        )
        assert training.get("fused_attention", True) is (not unfused), case.case
