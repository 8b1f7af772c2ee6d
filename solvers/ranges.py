"""Ranges {p10, p50, p90} of a report's headline figures (CONVENTIONS.md "Ranges").

Two sources of uncertainty, sampled together ``SAMPLES`` times and run through the ledger's own blocks
(``solvers.ledger.schedule``, ``energy_carbon``, ``tco``) on numpy arrays, one element per sample:

1. the step model: step_s x exp(r), r ~ Normal(mean, sigma) of the run's class (dense or MoE, at most 2,048
   GPUs or more) from ``solvers/catalog/step_uncertainty.json`` (``solvers.step_uncertainty``);
2. the uncertain inputs of ``solvers.catalog.uncertainty.SPREADS`` (MTTFs, PUE, grid and water intensity,
   electricity and accelerator prices, embodied carbon), each log-normal around the scenario's value.

The step's own figures (step_s, tokens_per_s, mfu) depend on r alone and are exact: step_s's quantile q is
step_s x exp(mean + sigma z_q). The others are the empirical quantiles (linear interpolation) of the samples.
The GPUs' busy fraction and the tokens per step are held at the point value: a slower step is taken to be
as busy.

The draws are fixed numbers made at import from the fixed ``SEED`` (``DRAWS``, stratified: each row holds the
normal's own quantiles in a random order): the same scenario and step give the same bits on every path (solve,
search, re-run) and on every CPU, and two plans are sampled with the same draws (common random numbers), so a
difference between them is not sampling noise.

The point value of the report is the model at the scenario's values with r = 0. Every sampled input has its
scenario value as its median, so p50 of step_s is the point x exp(mean); the other p50s sit near the point
moved by that mean (figures that are not monotone in one input can move further).
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from solvers import checkpoint as ckpt
from solvers import reliability as rel
from solvers.catalog.uncertainty import SPREADS, Spread
from solvers.errors import SolverInternalError
from solvers.inputs import Resolved
from solvers.ledger import SECONDS_PER_HOUR, Reliability, energy_carbon, run_tco, schedule
from solvers.ledger_inputs import FIELD_PATHS, LedgerInputs
from solvers.report_types import Assumption, Range, RangesMethod
from solvers.step_uncertainty import read, read_held_out, step_class

__all__ = [
    "FACTORS",
    "QUANTILES",
    "SAMPLED_FIGURES",
    "SAMPLES",
    "SEED",
    "STEP_CLASSES",
    "STEP_FIGURES",
    "factor_table",
    "figure_ranges",
    "range_assumptions",
]

# 1,001 samples: the 10th, 50th and 90th percentiles are then the samples of rank 100, 500 and 900 (the
# empirical quantile with linear interpolation lands exactly on them).
SAMPLES = 1_001
_RANKS = (100, 500, 900)
# Any fixed value would do: what matters is that it is fixed (the report names it in ``ranges_method``).
SEED = 13_2026
QUANTILES = (0.1, 0.5, 0.9)
# The standard normal at QUANTILES, as ``stratified_normal_scores`` places them at ranks 100, 500 and 900 (2 ulp
# from the catalog's P90_Z), so a figure moved by the step alone has the step's quantiles to the bit.
_Z = tuple(statistics.NormalDist().inv_cdf(q) for q in QUANTILES)

# The standard-normal draws, one row for the step residual and one per spread: fixed numbers (the seed's),
# made when the module is imported and read-only, like any table of the catalog. They depend on no input, so
# every report samples with the same draws, and the same document gives the same bits on every path.


def stratified_normal_scores(rows: int, samples: int = SAMPLES, seed: int = SEED) -> np.ndarray:
    """``rows`` x ``samples`` standard-normal draws, stratified: each row holds the same normal scores
    z_i = Phi^-1(p_i), p_i = i / (samples - 1) (the two ends at half a step, 0.5 / (samples - 1) and its
    complement), in its own random order (a permutation per row from the seeded generator).

    Latin-hypercube sampling (McKay, Beckman and Conover, Technometrics 21(2), 1979): every row's quantiles
    are the normal's, so a figure that depends on one input alone has that input's exact p10, p50 and p90 at
    ranks 100, 500 and 900 (p = 0.1, 0.5, 0.9 exactly), and a row's mean is zero; the permutations keep the
    rows independent of each other. Independent draws of 1,001 missed them by up to a tenth of a sigma with
    this seed (the step row's median at z = -0.076), one offset that every report then shared. Float64
    scores from the standard library (``statistics.NormalDist``), so no CPU-specific code is involved.
    Example: samples = 1,001 -> row values {Phi^-1(0.0005), Phi^-1(0.001), ..., Phi^-1(0.999), Phi^-1(0.9995)}.
    """
    normal = statistics.NormalDist()
    n = samples - 1
    probabilities = [0.5 / n, *(i / n for i in range(1, n)), 1.0 - 0.5 / n]
    scores = np.array([normal.inv_cdf(p) for p in probabilities])
    rng = np.random.Generator(np.random.PCG64(seed))
    draws = np.stack([scores[rng.permutation(samples)] for _ in range(rows)])
    draws.setflags(write=False)
    return draws


DRAWS = stratified_normal_scores(1 + len(SPREADS))
# (mean, sigma) per class, read once when the module is imported (a table, as the catalog's).
STEP_CLASSES: Mapping[str, tuple[float, float]] = read()
HELD_OUT: bool = read_held_out()


def factor_table(
    step_classes: Mapping[str, tuple[float, float]], spreads: tuple[Spread, ...]
) -> Mapping[str, np.ndarray]:
    """Per step class, the sampled factors ``exp(sigma z)``: row 0 the step residual's (its class's sigma),
    then one row per spread (the catalog's sigma), over the ``DRAWS`` (read-only, float64).

    Every sigma is a constant of the catalog or of the fitted step uncertainty, so these are fixed numbers
    like ``DRAWS``: exponentiating them for each report cost about a tenth of a report with ranges.
    Example: a zero sigma gives a row of ones.
    """
    table: dict[str, np.ndarray] = {}
    draws = DRAWS.tolist()
    for name, (_, sigma) in step_classes.items():
        sigmas = [sigma, *(spread.sigma for spread in spreads)]
        # math.exp, not numpy's: numpy picks its exponential's code by the CPU's SIMD level, and the last bits
        # differ between them; these are a few thousand values, once.
        factors = np.array([[math.exp(s * z) for z in row] for s, row in zip(sigmas, draws, strict=True)])
        factors.setflags(write=False)
        table[name] = factors
    return MappingProxyType(table)


FACTORS: Mapping[str, np.ndarray] = factor_table(STEP_CLASSES, SPREADS)

# LedgerInputs' scenario fields (all but the step's three), in its order.
_SCENARIO_FIELDS = operator.attrgetter(*LedgerInputs._fields[3:])

# The figures that carry a range, by their dotted path in the report, in the order of the report.
STEP_FIGURES = ("step.step_s", "step.tokens_per_s", "step.mfu")
SAMPLED_FIGURES = (
    "reliability.goodput",
    "schedule.wall_clock_days",
    "energy.it_kwh",
    "energy.facility_kwh",
    "carbon.operational_kgco2e",
    "carbon.embodied_kgco2e",
    "carbon.total_kgco2e",
    "carbon.water_l",
    "tco.total_usd",
    "tco.usd_per_million_tokens",
)
QUANTILES_TEXT = (
    "step figures: exact quantiles of the log-normal step residual; the others: samples of rank 100, 500 and "
    "900 of 1,001 (the empirical p10, p50, p90)"
)


def figure_ranges(resolved: Resolved, row: Mapping[str, Any]) -> tuple[dict[str, Range], RangesMethod]:
    """The ranges of a plan's headline figures by dotted report path (``STEP_FIGURES`` then
    ``SAMPLED_FIGURES``), and how they were made (the report's ``ranges`` and ``ranges_method``).

    ``resolved`` is the scenario and ``row`` the engine's row of its layout (the report's ``step``).
    Example: Llama 3 405B on 16,384 H100 (dense/large: mean 0.0037, sigma 0.0603) at a 6.601 s step: step_s
    p10 / p50 / p90 = 6.601 x exp(0.0037 + 0.0603 z) at z = -1.2816, 0, 1.2816 = 6.133 / 6.626 / 7.158 s.
    """
    step_s, busy = float(row["step_s"]), float(row["gpu_busy_fraction"])
    tokens_per_step = float(resolved.training.global_batch_tokens)
    inp = LedgerInputs._make((step_s, busy, tokens_per_step, *_SCENARIO_FIELDS(resolved.ledger_fields)))
    run_class = step_class(moe=resolved.model.moe is not None, gpus=resolved.cluster.gpus)
    mean, sigma = STEP_CLASSES[run_class]

    factors = FACTORS[run_class]
    sampled: dict[str, Any] = {"step_s": step_s * float(np.exp(mean)) * factors[0]}
    for spread, factor in zip(SPREADS, factors[1:], strict=True):
        for field in spread.fields:
            value = float(getattr(inp, field))
            if spread.distribution == "lognormal_overhead":
                sampled[field] = 1.0 + (value - 1.0) * factor
            else:
                sampled[field] = value * factor
    inp_s = inp._replace(**sampled)

    r = _sampled_reliability(inp_s, resolved.reliability)
    s = schedule(inp_s, r, step_s=inp_s.step_s, tokens_per_step=tokens_per_step, shape=(SAMPLES,))
    e = energy_carbon(inp_s, r, s, busy=busy)
    shares = r.shares
    t = run_tco(inp_s, s, e, shares, cloud_usd_per_gpu_hour=None)
    figures = [  # in the order of SAMPLED_FIGURES
        shares.goodput,
        s.wall_days,
        e.it_kwh,
        e.facility_kwh,
        e.operational_kgco2e,
        e.embodied_kgco2e,
        e.operational_kgco2e + e.embodied_kgco2e,
        e.water_l,
        t.total_usd,
        t.usd_per_million_tokens,
    ]
    stack = np.empty((len(figures), SAMPLES))
    for i, figure in enumerate(figures):
        stack[i] = figure  # a figure that no sample moves (a fixed window) broadcasts
    # A full sort of each row: with numpy 2 a partition at three ranks costs twice the sort of 1,001 values
    # (bench/README.md); the samples at the ranks are the same either way.
    sampled_q = np.sort(stack, axis=1)[:, _RANKS]
    # The step's figures depend on r alone: their quantiles are exact.
    step_factor = [math.exp(mean + sigma * z) for z in _Z]
    tokens_per_s, mfu = float(row["tokens_per_s"]), float(row["mfu"])
    exact = [
        [step_s * f for f in step_factor],
        [tokens_per_s / f for f in reversed(step_factor)],
        [mfu / f for f in reversed(step_factor)],
    ]
    if not (np.isfinite(sampled_q).all() and all(map(math.isfinite, exact[0] + exact[1] + exact[2]))):
        raise SolverInternalError("a range of the report is not finite")
    out: dict[str, Range] = {}
    for key, (p10, p50, p90) in zip(STEP_FIGURES + SAMPLED_FIGURES, exact + sampled_q.tolist(), strict=True):
        out[key] = {"p10": p10, "p50": p50, "p90": p90}
    method: RangesMethod = {
        "method": "monte_carlo",
        "samples": SAMPLES,
        "seed": SEED,
        "quantiles": QUANTILES_TEXT,
        "step_residual": {"step_class": run_class, "mean": mean, "sigma": sigma, "held_out": HELD_OUT},
        "inputs": [FIELD_PATHS[field] for spread in SPREADS for field in spread.fields],
    }
    return out, method


def range_assumptions() -> list[Assumption]:
    """One ``assumptions`` entry per sampled input: its log-space sigma, distribution, derivation and source
    (new dicts for each report)."""
    return [
        {
            "key": f"ranges.{FIELD_PATHS[field]}",
            "value": spread.sigma,
            "unit": f"sigma of ln, {spread.distribution}",
            "source": f"{spread.derivation}; {spread.source}",
        }
        for spread in SPREADS
        for field in spread.fields
    ]


def _sampled_reliability(inp: LedgerInputs, point: Reliability) -> Reliability:
    """``point`` with the cluster MTBF, the checkpoint interval and the goodput shares of the sampled MTTFs
    (arrays); the checkpoint size and write time read no MTTF and stay as they were.

    Equations as ``solvers.ledger.reliability``: 1 / node MTBF = sum of count / MTTF (series), cluster MTBF =
    node MTBF / nodes (``node_series``) or GPU MTTF / GPUs (``gpu_only``); the interval's optimum on the
    sampled MTBF (``checkpoint.young_interval_s`` / ``daly_interval_s`` / ``exact_interval_s``) unless the
    scenario fixes it; shares by ``reliability.goodput_shares_array``.
    """
    if inp.mtbf_convention == "node_series":
        rate = inp.gpus_per_node / inp.gpu_mttf_h + inp.nics_per_node / inp.nic_mttf_h
        rate = rate + inp.psus_per_node / inp.psu_mttf_h + sum(1.0 / mttf for mttf in inp.other_mttf_h)
        cluster_mtbf_h = 1.0 / rate / point.nodes
    else:
        cluster_mtbf_h = inp.gpu_mttf_h / inp.gpus
    mtbf_s = cluster_mtbf_h * SECONDS_PER_HOUR
    if inp.checkpoint_interval_h is None:
        method = {
            "young": ckpt.young_interval_s,
            "daly": ckpt.daly_interval_s,
            "exact": ckpt.exact_interval_s,
        }[inp.interval_method]
        interval_s: Any = method(checkpoint_write_s=point.write_s, mtbf_s=mtbf_s)
    else:
        interval_s = point.interval_s
    shares = rel.goodput_shares_array(
        ledger=inp.goodput_ledger,
        interval_s=interval_s,
        checkpoint_write_s=point.write_s,
        restart_s=inp.restart_s,
        mtbf_s=mtbf_s,
    )
    # Arrays in the fields of one scenario's figures: the ledger's blocks read them elementwise.
    return replace(point, cluster_mtbf_h=cluster_mtbf_h, interval_s=interval_s, shares=shares)
