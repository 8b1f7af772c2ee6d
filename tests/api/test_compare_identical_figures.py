"""Compare's ``within_uncertainty`` for figures that do not differ: a zero delta is never outside the
uncertainty, whichever of the two reports carries the range."""

from __future__ import annotations

from typing import Any

from api.compare import CompareItem, compare_table, within_uncertainty


def _item(pk: int, report: dict[str, Any]) -> CompareItem:
    return CompareItem(
        plan_id=pk,
        plan_name=f"plan-{pk}",
        result_id=pk,
        result_version=1,
        solver_version=None,
        price_book_version=None,
        created_at=None,
        report=report,
    )


def test_a_zero_delta_is_within_uncertainty_when_only_one_side_has_a_range() -> None:
    value = 678298.2166285736
    spread = {"p10": 678298.2166285737, "p50": 678298.2166285737, "p90": 678298.216628574}
    assert within_uncertainty(value, value, spread, None) is True
    assert within_uncertainty(value, value, None, spread) is True


def test_the_same_solved_plan_with_and_without_ranges_is_within_uncertainty_on_every_figure() -> None:
    from solvers import solve

    document = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 2048, "reliability": {"gpu_mttf_h": 1e-3}},
        "training": {
            "layout": {"tp": 1, "pp": 1, "dp": 2048},
            "checkpoint": {"interval_method": "daly", "goodput_ledger": "mlsysim_goodput_ratio"},
        },
        "economics": {"job_days": 30},
    }
    ranged, bare = solve(document), solve(document, ranges=False)
    table = compare_table(items=[_item(1, dict(bare)), _item(2, dict(ranged))], baseline_index=0)
    cells = table["items"][1]["values"]
    for key in ranged["ranges"]:
        assert cells[key]["delta"] == 0.0, key
        assert cells[key]["within_uncertainty"] is True, (key, cells[key])
