"""Energy, carbon and water of a training run.

Every function is keyword-only and broadcasts over numpy arrays, so one call prices thousands of layouts.

Conventions (each appears in a report's ``assumptions``):
* GPU power follows utilisation between an idle floor and TDP: P = TDP (f_idle + (1 - f_idle) u), where u
  is the share of the step the GPU spends computing (mlsysim SustainabilityModel uses f_idle = 0.3 with u =
  MFU; seed 000 §4). Host power (CPUs, memory, NICs, switches, fans) is added per node.
* Facility energy = IT energy x PUE (The Green Grid, WP#49 "PUE: a comprehensive examination", 2012).
* Operational carbon = facility energy x grid intensity (location-based, GHG Protocol Scope 2 Guidance 2015).
* Embodied carbon of the accelerators is amortised straight-line over their service life and charged for
  the job's wall-clock duration only, not in full to every job (Gupta et al., "ACT", ISCA 2022 §3).
* Water = WUE x IT energy: The Green Grid WP#35 (2011) defines WUE as site water / IT equipment energy, so
  it multiplies IT energy, not facility energy (mlsysim multiplies facility energy, which overstates water
  by a factor PUE).
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Num: TypeAlias = float | npt.NDArray[np.float64]

HOURS_PER_YEAR = 365.0 * 24.0


def gpu_power_w(*, tdp_w: float, busy_fraction: Num, idle_fraction: float) -> Num:
    """Mean electrical power of one accelerator while a step runs.

    Equation: P = TDP (f_idle + (1 - f_idle) u), u = busy fraction of the step in 0..1.
    Source: linear power model between idle and TDP (Barroso, Hölzle, Ranganathan, "The Datacenter as a
    Computer", 3rd ed. 2018, §5.3 energy proportionality); mlsysim SustainabilityModel (f_idle = 0.3).
    Example: H100 (700 W), f_idle = 0.3, u = 0.8 -> 700 (0.3 + 0.7 x 0.8) = 602 W.
    """
    return tdp_w * (idle_fraction + (1.0 - idle_fraction) * busy_fraction)


def it_energy_kwh(
    *,
    gpus: int,
    nodes: int,
    tdp_w: float,
    busy_fraction: Num,
    idle_fraction: float,
    host_w_per_node: float,
    running_h: Num,
    stalled_h: Num,
) -> Num:
    """IT energy of a run: accelerators plus hosts, over the whole wall-clock time.

    Equation: E_IT = gpus [P(u) t_run + TDP f_idle t_stall] + nodes P_host (t_run + t_stall), in kWh,
    where t_run is time spent stepping (useful work and rework) and t_stall is time spent writing
    checkpoints or restarting, when GPUs sit at their idle floor.
    Source: see ``gpu_power_w``; seed 000 §4 reproduces with u = 1, P_host = 0, t_stall = 0.
    Example: 32 H100 at full TDP for 720 h, no hosts -> 32 x 700 x 720 / 1000 = 16,128 kWh.
    """
    running_w = gpus * gpu_power_w(tdp_w=tdp_w, busy_fraction=busy_fraction, idle_fraction=idle_fraction)
    stalled_w = gpus * tdp_w * idle_fraction
    host_wh = nodes * host_w_per_node * (running_h + stalled_h)
    return (running_w * running_h + stalled_w * stalled_h + host_wh) / 1000.0


def facility_energy_kwh(*, it_kwh: Num, pue: float) -> Num:
    """Facility energy: IT energy plus cooling and power-delivery overhead.

    Equation: E_facility = E_IT x PUE.
    Source: The Green Grid WP#49 (2012).
    Example: 16,128 kWh x 1.58 (Poland, mlsysim) = 25,482 kWh ("25.5 MWh", seed 000 §4).
    """
    return it_kwh * pue


def operational_carbon_kgco2e(*, facility_kwh: Num, grid_gco2_per_kwh: float) -> Num:
    """Location-based operational emissions.

    Equation: CO2e = E_facility x grid intensity / 1000 (g -> kg).
    Source: GHG Protocol Scope 2 Guidance (2015), location-based method; Patterson et al., "Carbon
    Emissions and Large Neural Network Training" (2021) eq. 1.
    Example: 25,482 kWh x 820 g/kWh = 20,895 kgCO2e (Poland); 17,096 kWh x 20 g/kWh = 342 kgCO2e (Quebec):
    ratio 61.1 (seed 000 §4).
    """
    return facility_kwh * grid_gco2_per_kwh / 1000.0


def embodied_carbon_kgco2e(
    *, accelerators: int, embodied_kgco2e_per_accelerator: float, duration_h: Num, lifetime_years: float
) -> Num:
    """Manufacturing carbon of the accelerators, charged for the share of their life the job uses.

    Equation: CO2e = n x E_embodied x t_job / (lifetime_years x 8,760 h).
    Source: Gupta et al., "ACT: Designing Sustainable Computer Systems with an Architectural Carbon
    Modeling Tool", ISCA 2022, §3 (embodied carbon amortised over the device lifetime by usage time).
    Example: 16,384 H100 x 150 kgCO2e over 54 days of a 5-year life -> 16,384 x 150 x 1296 / 43,800 =
    72,718 kgCO2e (not the full 2.46 million kgCO2e).
    """
    return accelerators * embodied_kgco2e_per_accelerator * duration_h / (lifetime_years * HOURS_PER_YEAR)


def water_l(*, it_kwh: Num, wue_l_per_kwh: float) -> Num:
    """On-site water consumed by cooling.

    Equation: W = WUE x E_IT (litres).
    Source: The Green Grid WP#35 "Water Usage Effectiveness (WUE)" (2011): WUE = site water / IT energy.
    Example: 16,128 kWh x 1.8 L/kWh = 29,030 L.
    """
    return wue_l_per_kwh * it_kwh
