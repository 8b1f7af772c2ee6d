"""Two axes of which one sets a field inside the other (``cluster.scale_out`` and
``cluster.scale_out.bandwidth_gb_s``): every point's figures are those of the scenario its row names,
whichever order the axes are listed in, or the sweep is refused naming the axis; a swept value is never
silently dropped."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers import solve
from solvers.errors import ScenarioError
from solvers.sweep import plan_sweep, sweep_point
from tests.solvers.test_sweep_range_values import BASE, SPACE

BANDWIDTH = {"field": "cluster.scale_out.bandwidth_gb_s", "values": [5, 400]}
FABRIC = {"field": "cluster.scale_out", "values": ["infiniband-hdr"]}


@pytest.mark.parametrize(
    "axes", [[BANDWIDTH, FABRIC], [FABRIC, BANDWIDTH]], ids=["nested-first", "nested-last"]
)
def test_a_nested_axis_is_applied_or_refused_whatever_the_order(axes: list[dict[str, Any]]) -> None:
    """Listed first, the bandwidth axis must not be overwritten by the fabric preset (the rows named bandwidth 5
    and 400 GB/s would carry the same step time, the preset's)."""
    document = {**copy.deepcopy(BASE), "search": {"space": SPACE}, "sweep": {"axes": axes}}
    try:
        plan = plan_sweep(document)
    except ScenarioError as exc:
        assert exc.first.path.startswith("sweep.axes"), exc
        return
    for index in range(len(plan.points)):
        row = sweep_point(plan, index)
        assert "best" in row, row
        bandwidth = row["point"]["cluster.scale_out.bandwidth_gb_s"]
        scenario = copy.deepcopy(BASE)
        scenario["cluster"]["scale_out"] = {"preset": "infiniband-hdr", "bandwidth_gb_s": bandwidth}
        scenario["training"]["layout"] = row["best"]["layout"]
        report = solve(scenario)
        assert row["best"]["metrics"]["step_s"] == report["step"]["step_s"], row["point"]
