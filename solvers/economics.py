"""Total cost of ownership of a training run: amortised capex, maintenance, electricity, cloud alternative.

Every function is keyword-only and broadcasts over numpy arrays (durations and energies are per layout).

Conventions (seed 000 §5, confirmed in mlsysim EconomicsModel):
* capex for the run = unit price x GPUs x infrastructure multiplier / amortisation years x days / 365
  (straight-line depreciation; the multiplier adds network, cooling, facility and staff, 1.0 = cards only).
* maintenance = full capex (with the multiplier) x annual rate x days / 365.
* electricity = facility energy (after PUE) x price per kWh.
Because all three terms are linear in duration, their shares do not depend on how long the run lasts
(seed 000 §5: the capex share of a 30-day bill is the same as that of a year).
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from solvers.compute import maximum

Num: TypeAlias = float | npt.NDArray[np.float64]

DAYS_PER_YEAR = 365.0


def capex_total_usd(*, unit_price_usd: Num, gpus: Num | int, infra_multiplier: Num) -> Num:
    """Purchase cost of the cluster.

    Equation: capex = unit price x GPUs x infrastructure multiplier.
    Source: mlsysim EconomicsModel (seed 000 §5); Barroso et al., "The Datacenter as a Computer" (2018) §6.
    Example: $25,000 x 1,024 x 2.0 = $51.2 M.
    """
    return unit_price_usd * gpus * infra_multiplier


def amortized_capex_usd(*, capex_total_usd: Num, amortization_years: Num, duration_days: Num) -> Num:
    """Share of the capex that a run of ``duration_days`` consumes under straight-line depreciation.

    Equation: capex_run = capex / years x days / 365.
    Source: mlsysim EconomicsModel (seed 000 §5).
    Example: $50,000 per GPU (with multiplier 2.0) over 3 years, 30 days -> $1,369.86 per GPU.
    """
    return capex_total_usd / amortization_years * duration_days / DAYS_PER_YEAR


def maintenance_usd(*, capex_total_usd: Num, maintenance_per_year: Num, duration_days: Num) -> Num:
    """Maintenance for the run as a yearly fraction of the full capex.

    Equation: maintenance = capex x rate x days / 365.
    Source: mlsysim EconomicsModel, ANNUAL_MAINTENANCE_RATIO = 5% of capex (seed 000 §5).
    Example: $50,000 per GPU x 5% x 30/365 = $205.48 per GPU.
    """
    return capex_total_usd * maintenance_per_year * duration_days / DAYS_PER_YEAR


def electricity_usd(*, facility_kwh: Num, usd_per_kwh: Num) -> Num:
    """Electricity bill of the run.

    Equation: cost = facility kWh x price.
    Source: mlsysim EconomicsModel (seed 000 §5; default $0.12/kWh).
    Example: 700 W x 720 h x 1.12 PUE = 564.5 kWh x $0.12 = $67.74 per H100 for 30 days.
    """
    return facility_kwh * usd_per_kwh


def cloud_usd(*, gpus: Num | int, duration_h: Num, usd_per_gpu_hour: Num) -> Num:
    """Renting the same GPUs for the same wall-clock time (cloud GPUs fail and restart too).

    Equation: cost = GPUs x hours x $/GPU-hour.
    Example: 1,024 GPUs x 720 h x $2.50 = $1.84 M.
    """
    return gpus * duration_h * usd_per_gpu_hour


def usd_per_million_tokens(*, total_usd: Num, tokens: Num) -> Num:
    """Cost of a million training tokens.

    Equation: $/Mtok = total / (tokens / 1e6).
    Example: $1.68 M for 1e11 tokens -> $16.8 per million tokens.
    """
    return total_usd / (maximum(tokens, 1.0) / 1e6)
