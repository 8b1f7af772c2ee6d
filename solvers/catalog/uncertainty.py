"""The uncertain inputs of the ledger: one row per input, its distribution, its spread and where that comes from.

A report's ranges (``solvers.ranges``, CONVENTIONS.md "Ranges") sample these inputs around the value the
scenario resolved to (given, the region's, or the default): that value is the median of its distribution.

Distributions:

* ``lognormal``: value x exp(sigma z), z standard normal.
* ``lognormal_overhead``: 1 + (value - 1) x exp(sigma z), for a PUE: the overhead above the IT load is what is
  uncertain, and a sample never falls below 1.

Where a source gives a published range [low, high], sigma is set so that the p10-p90 band of the log-normal
spans the ratio high / low: sigma = ln(high / low) / (2 x 1.28155), 1.28155 being the standard normal's 90th
percentile. The electricity price is the exception: its sigma is the standard deviation of year-on-year
changes, computed below from the prices the source lists.

What is not sampled: the other component MTTFs (``cluster.reliability.other_mttf_h``), the restart time, the
storage bandwidths, the power model and every economics convention (amortisation, maintenance rate, infra
multiplier, service life): they are the scenario's stated choices, not measurements with a spread.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

__all__ = ["DISTRIBUTIONS", "P90_Z", "SPREADS", "Spread", "p10_p90_sigma"]

# The standard normal's 90th percentile: the p10-p90 band of N(0, 1) is [-P90_Z, P90_Z].
P90_Z = 1.2815515655446004

DISTRIBUTIONS: tuple[str, ...] = ("lognormal", "lognormal_overhead")


def p10_p90_sigma(low: float, high: float) -> float:
    """The log-normal sigma whose p10-p90 band spans ``high / low``: ln(high / low) / (2 x 1.28155).

    Example: a published range of USD 30,000-40,000 gives sigma = ln(4/3) / 2.5631 = 0.1122.
    """
    return math.log(high / low) / (2.0 * P90_Z)


@dataclass(frozen=True)
class Spread:
    fields: tuple[str, ...]  # the ``LedgerInputs`` fields one draw moves together
    path: str  # their scenario-document path(s)
    distribution: str  # one of DISTRIBUTIONS
    sigma: float  # log-space standard deviation
    derivation: str  # how sigma follows from the source's figures
    source: str


# Every GPU interruption counts (faulty GPU, HBM3, SRAM, GPU system processor...: "GPU issues", 58.7% of the
# 419 unexpected ones), as solvers.published compares the model's GPU failures with Llama 3's.
_LLAMA3_GPU_H = 16_384 * 54 * 24 / (0.587 * 419)  # 86,331 GPU-hours per GPU interruption
_MTTF_SIGMA = p10_p90_sigma(50_000.0, _LLAMA3_GPU_H)
_MTTF_SOURCE = (
    "range between the 50,000 h GPU MTTF of mlsysim (seed 000 §3) and the ~86,000 GPU-hours per GPU "
    "interruption that Llama 3 observed (Dubey et al. 2024, §3.3.4 and Table 5: GPU issues 58.7% of 419 "
    "unexpected interruptions in a 54-day snapshot on 16,384 H100)"
)

# EIA Electric Power Monthly Table 5.6.B: average industrial price (cents/kWh), January-July 2024 and 2023
# year to date: the table's first 17 states, in its order (New England, the Middle Atlantic, the East North
# Central division and the West North Central one as far as Minnesota; the copy of the table read stops
# there). A sample of states, not the table: the other 34 and the District of Columbia are not in it.
_EIA_INDUSTRIAL_2024_2023: tuple[tuple[str, float, float], ...] = (
    ("Connecticut", 16.26, 15.40),
    ("Maine", 13.50, 12.09),
    ("Massachusetts", 18.04, 17.92),
    ("New Hampshire", 16.30, 15.92),
    ("Rhode Island", 19.97, 19.10),
    ("Vermont", 11.53, 11.29),
    ("New Jersey", 11.99, 12.03),
    ("New York", 8.26, 6.94),
    ("Pennsylvania", 7.79, 7.76),
    ("Illinois", 8.95, 8.38),
    ("Indiana", 8.05, 8.49),
    ("Michigan", 8.33, 8.15),
    ("Ohio", 7.13, 7.28),
    ("Wisconsin", 8.55, 8.50),
    ("Iowa", 6.79, 6.83),
    ("Kansas", 8.05, 8.31),
    ("Minnesota", 9.22, 9.19),
)
_PRICE_SIGMA = statistics.stdev(math.log(new / old) for _, new, old in _EIA_INDUSTRIAL_2024_2023)  # 0.0544

SPREADS: tuple[Spread, ...] = (
    Spread(
        ("gpu_mttf_h", "nic_mttf_h", "psu_mttf_h"),
        "cluster.reliability.{gpu,nic,psu}_mttf_h",
        "lognormal",
        _MTTF_SIGMA,
        "p10-p90 spans 86,331 h / 50,000 h = 1.73 (sigma 0.213); one draw scales the three MTTFs together "
        "(no published range for NIC or PSU MTTFs was found, and a common factor is the wider choice)",
        _MTTF_SOURCE,
    ),
    Spread(
        ("pue",),
        "site.pue",
        "lognormal_overhead",
        p10_p90_sigma(0.30, 0.58),
        "p10-p90 of the overhead (PUE - 1) spans 0.58 / 0.30 = 1.93 (sigma 0.257)",
        "Uptime Institute: industry average PUE 1.58 in 2023 (Intelligence Update 221, Davis and O'Brien, "
        "2023); new, large facilities reach 1.3 or better (Global Data Center Survey 2024)",
    ),
    Spread(
        ("grid_gco2_per_kwh",),
        "site.grid_gco2_per_kwh",
        "lognormal",
        p10_p90_sigma(436.0, 480.0),
        "p10-p90 spans 480 / 436 = 1.10 (sigma 0.0375): two consecutive editions' world averages, which differ "
        "in year and in what they count; hourly and marginal intensities vary far more and are not sampled",
        "Ember Global Electricity Review 2023 (436 gCO2/kWh, world, 2022) and 2024 (480 gCO2e/kWh, world, 2023, "
        "with emissions counted over the life cycle, upstream methane included)",
    ),
    Spread(
        ("wue_l_per_kwh",),
        "site.wue_l_per_kwh",
        "lognormal",
        p10_p90_sigma(1.0, 1.8),
        "p10-p90 spans 1.8 / 1.0 = 1.8 (sigma 0.229)",
        "typical on-site WUE of evaporatively cooled hyperscale facilities, 1.0-1.8 L/kWh (Milton Roy, data "
        "center WUE benchmarks)",
    ),
    Spread(
        ("electricity_usd_per_kwh",),
        "site.electricity_usd_per_kwh",
        "lognormal",
        _PRICE_SIGMA,
        "standard deviation of the log year-on-year change of the industrial prices of the table's first 17 "
        "states, Connecticut to Minnesota (sigma 0.0544)",
        "EIA Electric Power Monthly Table 5.6.B, industrial, January-July 2024 against 2023",
    ),
    Spread(
        ("accelerator_unit_price_usd",),
        "cluster.accelerator.unit_price_usd",
        "lognormal",
        p10_p90_sigma(10_000.0, 15_000.0),
        "p10-p90 spans USD 15,000 / 10,000 = 1.5 (sigma 0.158)",
        "USD 10,000-15,000 per MI300X as reported for hyperscalers (2024), the catalog's widest quoted price "
        "range (B200: USD 30,000-40,000 quoted by NVIDIA's CEO, CNBC, March 2024, a ratio of 1.33)",
    ),
    Spread(
        ("accelerator_embodied_kgco2e",),
        "cluster.accelerator.embodied_kgco2e",
        "lognormal",
        p10_p90_sigma(150.0, 318.0),
        "p10-p90 spans 318 / 150 = 2.12 (sigma 0.293): two published estimates for one A100",
        "150 kgCO2e per A100 (Luccioni et al., BLOOM LCA, JMLR 2023 §4.1) and 318 kgCO2 per A100 with its "
        "share of the host (Chien et al., HotCarbon'23)",
    ),
)
