"""Grid regions: carbon intensity, facility PUE and WUE, and industrial electricity price, each with its source.

``site.region`` selects one entry; explicit ``site.*`` fields override it. Keys are lower-case slugs.

Provenance rules:

* Where seed 000 (mlsysim 0.1.2 ``Grids`` registry, ``infrastructure/data/grids.yaml``) has a region, its
  intensity, PUE and WUE are used unchanged, so that the seed's site-selection ratios (Poland/Quebec 61.1x,
  Poland/US 2.7x, Poland/Iceland 43.7x) reproduce from the catalog itself. mlsysim cites IEA World Energy
  Outlook 2023 (Hydro-Quebec for Quebec).
* Other intensities are annual averages for 2023 rounded to two significant figures (Ember Yearly
  Electricity Data; US states from the EIA State Electricity Profiles; Singapore from the Energy Market
  Authority's grid emission factor).
* PUE and WUE are facility tiers, not grid properties: mlsysim's anchors (liquid-cooled 1.06 / 0.0 L/kWh,
  best air-cooled hyperscale 1.12 with evaporative cooling at 1.8 L/kWh, industry average 1.40, legacy 1.58;
  Uptime Institute 2022) are applied to the other regions by climate and market.
* Electricity prices are indicative 2023 industrial/large non-household prices in USD/kWh before VAT
  (Eurostat nrg_pc_205, EIA Electric Power Monthly Table 5.6.A, national regulators), rounded; a price book
  should override them for procurement.
"""

from __future__ import annotations

from typing import Any

_IEA = "mlsysim grids.yaml (IEA World Energy Outlook 2023), seed 000 §4"
_HQ = "mlsysim grids.yaml (Hydro-Quebec grid), seed 000 §4"
_EMBER = "Ember Yearly Electricity Data 2023, annual average, rounded"
_EIA_STATE = "EIA State Electricity Profiles 2022, CO2 emission rate, rounded"
_PUE_LIQUID = "mlsysim FacilityCooling LiquidCooled tier, PUE 1.06 / WUE 0.0 (Uptime Institute 2022)"
_PUE_AIR = "mlsysim FacilityCooling BestAir tier, PUE 1.12 / WUE 1.8 evaporative (Uptime Institute 2022)"
_PUE_SOA = (
    "mlsysim PUE 'state of art' 1.10 (Uptime Institute 2022); free-air cooling, WUE 0.5 air-cooled anchor"
)
_PUE_TYPICAL = "mlsysim FacilityCooling Typical tier, PUE 1.40 / WUE 1.8 (Uptime Institute 2022)"
_EUROSTAT = "Eurostat nrg_pc_205, non-household 2023, excl. VAT, converted at 1.08 USD/EUR, rounded"
_EIA_PRICE = "EIA Electric Power Monthly Table 5.6.A, industrial 2023 average, rounded"


def _region(
    name: str,
    grid: float,
    pue: float,
    wue: float,
    price: float,
    *,
    grid_src: str,
    facility_src: str,
    price_src: str,
) -> dict[str, Any]:
    return {
        "name": name,
        "grid_gco2_per_kwh": grid,
        "pue": pue,
        "wue_l_per_kwh": wue,
        "electricity_usd_per_kwh": price,
        "sources": {
            "grid_gco2_per_kwh": grid_src,
            "pue": facility_src,
            "wue_l_per_kwh": facility_src,
            "electricity_usd_per_kwh": price_src,
        },
    }


REGIONS: dict[str, dict[str, Any]] = {
    # --- regions of seed 000 / mlsysim: intensity, PUE and WUE unchanged -------------------------------
    "quebec": _region(
        "Quebec (hydro)",
        20.0,
        1.06,
        0.0,
        0.04,
        grid_src=_HQ,
        facility_src=_HQ,
        price_src="Hydro-Quebec Rate L 2023 (~CAD 0.055/kWh), converted and rounded",
    ),
    "poland": _region(
        "Poland (coal)", 820.0, 1.58, 1.8, 0.20, grid_src=_IEA, facility_src=_IEA, price_src=_EUROSTAT
    ),
    "us-average": _region(
        "United States average",
        429.0,
        1.12,
        1.8,
        0.08,
        grid_src=_IEA,
        facility_src=_IEA,
        price_src=_EIA_PRICE,
    ),
    "iceland": _region(
        "Iceland (geothermal and hydro)",
        28.0,
        1.06,
        0.0,
        0.05,
        grid_src=_IEA,
        facility_src=_IEA,
        price_src="Landsvirkjun wholesale to data centers, indicative 2023, rounded",
    ),
    "norway": _region(
        "Norway (hydro)",
        10.0,
        1.06,
        0.0,
        0.08,
        grid_src=_IEA,
        facility_src=_IEA,
        price_src="Statistics Norway, electricity prices for industry 2023 excl. taxes, rounded",
    ),
    "france": _region(
        "France (nuclear)", 50.0, 1.12, 1.8, 0.15, grid_src=_IEA, facility_src=_IEA, price_src=_EUROSTAT
    ),
    "germany": _region(
        "Germany", 385.0, 1.12, 1.8, 0.22, grid_src=_IEA, facility_src=_IEA, price_src=_EUROSTAT
    ),
    "texas": _region(
        "Texas (ERCOT)", 400.0, 1.12, 1.8, 0.07, grid_src=_IEA, facility_src=_IEA, price_src=_EIA_PRICE
    ),
    "china-average": _region(
        "China average",
        555.0,
        1.40,
        1.8,
        0.09,
        grid_src=_IEA,
        facility_src=_IEA,
        price_src="NDRC industrial catalogue tariffs 2023 (~CNY 0.65/kWh), converted and rounded",
    ),
    "india": _region(
        "India average",
        720.0,
        1.58,
        1.8,
        0.09,
        grid_src=_IEA,
        facility_src=_IEA,
        price_src="Indian state industrial HT tariffs 2023 (~INR 7.5/kWh), converted and rounded",
    ),
    # --- further regions -------------------------------------------------------------------------------
    "virginia": _region(
        "Virginia (PJM, Northern Virginia data-center corridor)",
        300.0,
        1.12,
        1.8,
        0.085,
        grid_src=_EIA_STATE,
        facility_src=_PUE_AIR,
        price_src=_EIA_PRICE,
    ),
    "california": _region(
        "California (CAISO)",
        200.0,
        1.12,
        1.8,
        0.20,
        grid_src=_EIA_STATE,
        facility_src=_PUE_AIR,
        price_src=_EIA_PRICE,
    ),
    "oregon": _region(
        "Oregon (BPA hydro and gas)",
        150.0,
        1.12,
        1.8,
        0.08,
        grid_src=_EIA_STATE,
        facility_src=_PUE_AIR,
        price_src=_EIA_PRICE,
    ),
    "ireland": _region(
        "Ireland", 280.0, 1.12, 1.8, 0.25, grid_src=_EMBER, facility_src=_PUE_AIR, price_src=_EUROSTAT
    ),
    "sweden": _region(
        "Sweden (hydro and nuclear)",
        40.0,
        1.10,
        0.5,
        0.09,
        grid_src=_EMBER,
        facility_src=_PUE_SOA,
        price_src=_EUROSTAT,
    ),
    "finland": _region(
        "Finland (nuclear, hydro, wind)",
        80.0,
        1.10,
        0.5,
        0.10,
        grid_src=_EMBER,
        facility_src=_PUE_SOA,
        price_src=_EUROSTAT,
    ),
    "netherlands": _region(
        "Netherlands", 270.0, 1.12, 1.8, 0.20, grid_src=_EMBER, facility_src=_PUE_AIR, price_src=_EUROSTAT
    ),
    "singapore": _region(
        "Singapore (gas)",
        417.0,
        1.40,
        1.8,
        0.22,
        grid_src="Energy Market Authority, Singapore Energy Statistics 2023, grid emission factor 2022",
        facility_src=_PUE_TYPICAL + "; tropical climate",
        price_src="SP Group non-domestic tariff 2023 (~SGD 0.30/kWh), converted and rounded",
    ),
    "japan": _region(
        "Japan",
        480.0,
        1.40,
        1.8,
        0.17,
        grid_src=_EMBER,
        facility_src=_PUE_TYPICAL,
        price_src="METI/ANRE industrial tariff survey 2023 (~JPY 24/kWh), converted and rounded",
    ),
}
