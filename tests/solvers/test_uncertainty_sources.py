"""The sigmas of the uncertain inputs (solvers/catalog/uncertainty.py) against the whole of the sources they
cite.

The MTTF band's upper end counts every GPU interruption of Llama 3 ("GPU issues 58.7% of unexpected
interruptions", as solvers.published compares the model's GPU failure rate with Llama 3): HBM3 (72), SRAM (19)
and GPU system processor (17) failures are failures of the GPU that gpu_mttf_h describes, besides the 148
faulty GPUs.

Llama 3 (Dubey et al. 2024, §3.3.4): 16,384 H100, 54 days, 419 unexpected, GPU issues 58.7%:
  GPU-hours per GPU interruption = 16,384 x 1,296 / (0.587 x 419) = 86,331 h
  sigma = ln(86,331 / 50,000) / 2.5631 = 0.213   (the catalog uses ln(143,471 / 50,000) / 2.5631 = 0.411)
"""

from __future__ import annotations

import math
import re

import pytest

import solvers
from solvers.catalog import uncertainty
from solvers.catalog.accelerators import ACCELERATORS
from solvers.catalog.uncertainty import SPREADS, p10_p90_sigma

P90_Z = 1.2815515655446004


def test_mttf_sigma_uses_all_gpu_interruptions_of_llama3():
    document = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"node": "dgx-h100", "gpus": 64},
        "training": {"seq_len": 8192, "global_batch_seqs": 64, "layout": {"tp": 1, "pp": 1}},
    }
    report = solvers.solve(document, ranges=True)
    sigma = {a["key"]: a["value"] for a in report["assumptions"]}["ranges.cluster.reliability.gpu_mttf_h"]
    gpu_hours_per_gpu_interruption = 16_384 * 54 * 24 / (0.587 * 419)
    expected = math.log(gpu_hours_per_gpu_interruption / 50_000.0) / (2 * P90_Z)
    assert expected == pytest.approx(0.213, abs=1e-3)
    assert sigma == pytest.approx(expected, rel=0.05)


def _spread(field: str) -> uncertainty.Spread:
    return next(s for s in SPREADS if field in s.fields)


def _quoted_price_ranges() -> dict[str, tuple[float, float]]:
    """Every ``USD low-high`` range the accelerator catalog quotes for a unit price (``M`` = million)."""
    pattern = re.compile(r"USD\s*([\d.,]+)\s*-\s*([\d.,]+)\s*(M?)")
    out: dict[str, tuple[float, float]] = {}
    for key, spec in ACCELERATORS.items():
        match = pattern.search(spec["sources"]["unit_price_usd"])
        if match:
            scale = 1e6 if match.group(3) == "M" else 1.0
            low, high = (float(g.replace(",", "")) * scale for g in match.group(1, 2))
            out[key] = (low, high)
    return out


def test_accelerator_price_sigma_is_the_catalogs_widest_quoted_range() -> None:
    """The spread takes "the catalog's widest quoted price range": the MI300X's USD 10,000-15,000 (ratio 1.5,
    sigma = ln(1.5) / 2.5631 = 0.158), wider than the B200's USD 30,000-40,000 (1.33)."""
    ranges = _quoted_price_ranges()
    assert ranges["mi300x"] == (10_000.0, 15_000.0)  # the catalog's own text
    widest = max(ranges.values(), key=lambda r: r[1] / r[0])
    spread = _spread("accelerator_unit_price_usd")
    assert "widest" in spread.source
    assert spread.sigma == pytest.approx(p10_p90_sigma(*widest), rel=1e-9)  # 0.1582, not 0.1122
