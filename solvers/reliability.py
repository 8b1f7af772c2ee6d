"""Failures of a synchronous training job: MTBF, expected failures, and where the lost time goes.

A synchronous data-parallel job stops when any one component of any node stops, so the components are in
series: failure rates add. Everything here assumes independent, exponentially distributed failures (the
assumption behind Young 1974 and Daly 2006).

Three goodput ledgers are offered, by name (``solvers.ledger_defaults.GOODPUT_LEDGERS``):

``expected_loss`` (default)
    Daly's renewal model (Daly 2006 §3): a segment of T compute + C write is retried until it completes;
    each failure costs the partial segment it interrupts plus a restart R (which can itself be interrupted).
    Expected wall-clock time per segment = M e^(R/M) (e^((T+C)/M) - 1). The loss splits exactly into
    checkpoint writes (C per segment), rework ((e^((T+C)/M) - 1) M - (T + C)) and restarts
    ((e^((T+C)/M) - 1)(e^(R/M) - 1) M). Goodput = T / that, always in (0, 1).
``sec5_writes_half_interval``
    The mlsysim tutorial's §5 ledger (seed 000 §3.3): lost = writes + failures x T/2, no restart term.
    Goodput = 1 - C/T - T/(2M).
``mlsysim_goodput_ratio``
    mlsysim ``ReliabilityResult.goodput_ratio`` (seed 000 §3.3): 1 - C/T - R/M, rework not counted.

The two seed ledgers are first-order and can go to zero or below for a cluster that fails faster than it
checkpoints; they are floored at ``GOODPUT_FLOOR`` and the ledger warns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from solvers.errors import ScenarioError

GOODPUT_FLOOR = 1e-6
# exp() arguments are capped here so that a hopeless cluster (C or R many times its MTBF) yields a tiny,
# finite goodput rather than overflow; e^-200 is far below GOODPUT_FLOOR anyway.
_MAX_EXPONENT = 200.0


def node_mtbf_h(
    *,
    gpus_per_node: int,
    gpu_mttf_h: float,
    nics_per_node: int,
    nic_mttf_h: float,
    psus_per_node: int,
    psu_mttf_h: float,
    other_mttf_h: Sequence[float] = (),
) -> float:
    """MTBF of one node whose components are in series (any failure stops the node).

    Equation: 1 / MTBF_node = n_gpu/MTTF_gpu + n_nic/MTTF_nic + n_psu/MTTF_psu + sum(1/MTTF_other).
    Source: series reliability with exponential lifetimes; mlsysim ``calc_mtbf_node`` (seed 000 §3).
    Example: 8 GPUs at 50,000 h, 8 NICs at 150,000 h, 2 PSUs at 100,000 h ->
    1 / (8/50000 + 8/150000 + 2/100000) = 4,285.71 h.
    """
    _positive("cluster.reliability.gpu_mttf_h", gpu_mttf_h)
    _positive("cluster.reliability.nic_mttf_h", nic_mttf_h)
    _positive("cluster.reliability.psu_mttf_h", psu_mttf_h)
    for i, mttf in enumerate(other_mttf_h):
        _positive(f"cluster.reliability.other_mttf_h[{i}]", mttf)
    if gpus_per_node < 1:
        raise ScenarioError.single("cluster.gpus_per_node", "must be at least 1")
    if nics_per_node < 0:
        raise ScenarioError.single("cluster.reliability.nics_per_node", "must be 0 or more")
    if psus_per_node < 0:
        raise ScenarioError.single("cluster.reliability.psus_per_node", "must be 0 or more")
    rate_per_h = (
        gpus_per_node / gpu_mttf_h
        + nics_per_node / nic_mttf_h
        + psus_per_node / psu_mttf_h
        + sum(1.0 / mttf for mttf in other_mttf_h)
    )
    return 1.0 / rate_per_h


def cluster_mtbf_h(*, node_mtbf_h: float, nodes: int) -> float:
    """MTBF of a synchronous job spanning ``nodes`` identical nodes in series.

    Equation: MTBF_cluster = MTBF_node / nodes.
    Source: mlsysim ``calc_mtbf_cluster`` (seed 000 §3).
    Example: 4,285.71 h / 64 nodes (512 GPUs) = 66.96 h ("67.0 h", seed 000 §3).
    """
    if nodes < 1:
        raise ScenarioError.single("cluster.gpus", "must give at least one node")
    return node_mtbf_h / nodes


def gpu_only_cluster_mtbf_h(*, gpu_mttf_h: float, gpus: int) -> float:
    """The ``gpu_only`` convention: only GPUs fail.

    Equation: MTBF = MTTF_gpu / gpus.
    Source: the mlsysim tutorial 06 background text (seed 000 §3: "512 GPUs about 97 h"). It omits NICs and
    PSUs, so it is 45% longer than the node-series MTBF for a DGX H100 node; offered only as a labelled
    alternative.
    Example: 50,000 h / 512 = 97.66 h.
    """
    _positive("cluster.reliability.gpu_mttf_h", gpu_mttf_h)
    if gpus < 1:
        raise ScenarioError.single("cluster.gpus", "must be at least 1")
    return gpu_mttf_h / gpus


def expected_failures(*, wall_clock_h: float, cluster_mtbf_h: float) -> float:
    """Expected number of job-stopping failures over a wall-clock span.

    Equation: N = t_wall / MTBF (Poisson process of rate 1/MTBF).
    Source: seed 000 §3 ("10.75 failures in 30 days" at 512 GPUs: 720 / 66.96).
    """
    return wall_clock_h / cluster_mtbf_h


class GoodputShares(NamedTuple):
    """Shares of wall-clock time under one ledger; the four shares sum to 1 (before the floor)."""

    goodput: float  # useful compute / wall-clock
    checkpoint_writes: float  # successful checkpoint writes / wall-clock
    rework: float  # compute and writes lost to failures / wall-clock
    restarts: float  # restart and reload after failures / wall-clock
    floored: bool  # True when a first-order ledger went to or below zero and was floored


def goodput_shares(
    *, ledger: str, interval_s: float, checkpoint_write_s: float, restart_s: float, mtbf_s: float
) -> GoodputShares:
    """Split wall-clock time into useful work, checkpoint writes, rework and restarts.

    Equations (T = compute between checkpoints, C = write, R = restart, M = cluster MTBF):
      expected_loss (Daly 2006 §3 renewal model, exact for exponential failures):
        E = M e^(R/M) (e^((T+C)/M) - 1)          expected wall-clock per checkpointed segment
        goodput = T/E, writes = C/E,
        rework = (M (e^((T+C)/M) - 1) - (T + C)) / E,  restarts = M (e^((T+C)/M) - 1)(e^(R/M) - 1) / E
      sec5_writes_half_interval (seed 000 §3.3): writes = C/T, rework = T/(2M), restarts = 0
      mlsysim_goodput_ratio (seed 000 §3.3):      writes = C/T, rework = 0, restarts = R/M
    Example: T = 2.29 h, C = 141.2 s, R = 300 s, M = 67.0 h: expected_loss goodput = 0.9650;
    sec5 = 1 - 0.01713 - 0.01711 = 0.9658; mlsysim ratio = 1 - 0.01713 - 0.00124 = 0.9816.
    """
    _positive("training.checkpoint.interval_h", interval_s)
    if checkpoint_write_s < 0:
        raise ScenarioError.single("reliability.checkpoint_write_s", "must be 0 or more")
    if restart_s < 0:
        raise ScenarioError.single("cluster.reliability.restart_s", "must be 0 or more")
    _positive("reliability.cluster_mtbf_h", mtbf_s)

    if ledger == "expected_loss":
        segment_s = interval_s + checkpoint_write_s
        failures_per_segment = math.expm1(min(float(segment_s / mtbf_s), _MAX_EXPONENT))
        restart_factor = math.expm1(min(float(restart_s / mtbf_s), _MAX_EXPONENT))
        work_phase_s = mtbf_s * failures_per_segment  # time in compute/write attempts per segment
        restarts_s = work_phase_s * restart_factor
        expected_s = work_phase_s + restarts_s
        rework_s = max(work_phase_s - segment_s, 0.0)
        return GoodputShares(
            goodput=float(interval_s / expected_s),
            checkpoint_writes=float(checkpoint_write_s / expected_s),
            rework=float(rework_s / expected_s),
            restarts=float(restarts_s / expected_s),
            floored=False,
        )
    if ledger == "sec5_writes_half_interval":
        writes = checkpoint_write_s / interval_s
        rework = interval_s / (2.0 * mtbf_s)
        return _first_order(writes=writes, rework=rework, restarts=0.0)
    if ledger == "mlsysim_goodput_ratio":
        writes = checkpoint_write_s / interval_s
        restarts = restart_s / mtbf_s
        return _first_order(writes=writes, rework=0.0, restarts=restarts)
    raise ScenarioError.single(
        "training.checkpoint.goodput_ledger",
        "must be one of expected_loss, sec5_writes_half_interval, mlsysim_goodput_ratio",
    )


def goodput_shares_array(
    *, ledger: str, interval_s: Any, checkpoint_write_s: float, restart_s: float, mtbf_s: Any
) -> GoodputShares:
    """``goodput_shares`` over numpy arrays of intervals and MTBFs (the samples of ``solvers.ranges``).

    The same equations, elementwise, with the same exponent cap and the same floor of the first-order ledgers;
    the inputs are taken as checked (the sampled MTBFs are positive multiples of checked ones). The shares are
    arrays and ``floored`` is True when any sample was floored.
    Example: ``interval_s=np.array([8157.0]), checkpoint_write_s=141.2, restart_s=300.0,
    mtbf_s=np.array([241_071.4])`` gives the goodput of ``goodput_shares`` for those values, 0.9650.
    """
    t = np.asarray(interval_s, dtype=np.float64)
    m = np.asarray(mtbf_s, dtype=np.float64)
    c, r = float(checkpoint_write_s), float(restart_s)
    if ledger == "expected_loss":
        segment_s = t + c
        work_phase_s = m * np.expm1(np.minimum(segment_s / m, _MAX_EXPONENT))
        restarts_s = work_phase_s * np.expm1(np.minimum(r / m, _MAX_EXPONENT))
        expected_s = work_phase_s + restarts_s
        rework_s = np.maximum(work_phase_s - segment_s, 0.0)
        return GoodputShares(
            goodput=t / expected_s,  # type: ignore[arg-type]  # arrays: one share per sample
            checkpoint_writes=c / expected_s,  # type: ignore[arg-type]
            rework=rework_s / expected_s,  # type: ignore[arg-type]
            restarts=restarts_s / expected_s,  # type: ignore[arg-type]
            floored=False,
        )
    if ledger == "sec5_writes_half_interval":
        writes, rework, restarts = c / t, t / (2.0 * m), np.zeros_like(m)
    elif ledger == "mlsysim_goodput_ratio":
        writes, rework, restarts = c / t + 0.0 * m, np.zeros_like(m), r / m
    else:
        raise ScenarioError.single(
            "training.checkpoint.goodput_ledger",
            "must be one of expected_loss, sec5_writes_half_interval, mlsysim_goodput_ratio",
        )
    writes, rework, restarts = np.broadcast_arrays(writes, rework, restarts)
    goodput = 1.0 - writes - rework - restarts
    floored = goodput <= GOODPUT_FLOOR
    # Rescale the losses so the shares still sum to one around the floor (as ``_first_order``).
    scale = np.where(floored, (1.0 - GOODPUT_FLOOR) / (writes + rework + restarts), 1.0)
    return GoodputShares(
        goodput=np.where(floored, GOODPUT_FLOOR, goodput),  # type: ignore[arg-type]
        checkpoint_writes=writes * scale,  # type: ignore[arg-type]
        rework=rework * scale,  # type: ignore[arg-type]
        restarts=restarts * scale,  # type: ignore[arg-type]
        floored=bool(floored.any()),
    )


def _first_order(*, writes: float, rework: float, restarts: float) -> GoodputShares:
    writes, rework, restarts = float(writes), float(rework), float(restarts)
    goodput = 1.0 - writes - rework - restarts
    if goodput > GOODPUT_FLOOR:
        return GoodputShares(goodput, writes, rework, restarts, floored=False)
    # Rescale the losses so the shares still sum to one around the floor.
    scale = (1.0 - GOODPUT_FLOOR) / (writes + rework + restarts)
    return GoodputShares(GOODPUT_FLOOR, writes * scale, rework * scale, restarts * scale, floored=True)


def _positive(path: str, value: float) -> None:
    # math.isfinite for python numbers (the usual case, ~20x cheaper); numpy scalars keep np.isfinite.
    finite = math.isfinite(value) if type(value) in (float, int) else bool(np.isfinite(value))
    if not (finite and value > 0):
        raise ScenarioError.single(path, "must be a positive finite number")
