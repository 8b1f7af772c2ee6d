"""The matrix-shape curve's ``d_half``, fitted to published GEMM kernel benchmarks (``corpus/kernels/*.yaml``).

The ``matrix_shape`` effect (``solvers.effects.gemm_shape_factor``) gives a GEMM of narrowest dimension ``d``
the share ``tile(M) tile(N) tile(K) x d / (d + d_half)`` of its large-GEMM rate. ``d_half`` describes kernels,
so it is fitted to kernels: each benchmark row (M, N, K, #groups and the measured TFLOPS of one accelerator)
is predicted with the engine's own functions, the roofline included (``solvers.compute.math_time_s`` on the
intensity of ``gemm_intensity_flop_per_byte``),

    TFLOPS(M, N, K) = min(P x shape(M, N, K; d_half), I(M, N, K) x HBM bandwidth)

with ``P`` the plateau of the source's kernels (one per source: a kernel library's best rate is its own) and
``d_half`` shared. The fit minimises the mean squared ``log(predicted / measured)`` over every row:
a grid over ``d_half`` (0 to ``MAX_HALF`` in steps of ``GRID_STEP``) refined by golden-section search, the
best plateau of each source found by golden-section search on ``log P`` for each ``d_half``. Deterministic,
numpy only. The end-to-end fit (``solvers.fit``) then holds ``d_half`` fixed: fitted to training runs it was
poorly determined (a term elsewhere could move it from 0 to its bound) and stood in for unrelated costs.

Example: DeepGEMM's 28 FP8 rows on H800 (``corpus/kernels/deepgemm-2025.yaml``) give d_half 99.8 and a plateau
of 1,127 TFLOPS (57% of the FP8 peak; its fine-grained scaling promotes on CUDA cores). The figure depends on
the rows: without the twelve decode shapes (M of 64 and 128) it would be about 150, without the M = 64 rows
about 200; the curve's 128-wide tile halves the M = 64 rows, which DeepGEMM may run in 64-row blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solvers import compute, effects
from solvers.catalog.accelerators import ACCELERATORS
from solvers.document_text import load_yaml

__all__ = ["KERNELS_DIR", "KernelSource", "ShapeFit", "fit_shape_half_dim", "load_kernel_sources"]

KERNELS_DIR = Path(__file__).resolve().parents[1] / "corpus" / "kernels"
MAX_HALF = 1024.0  # eight 128-wide tiles: beyond it no GEMM a training step runs would be near its plateau
GRID_STEP = 4.0
_PRECISION_BYTES = {"fp8": 1.0, "bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class KernelSource:
    """One published table of GEMM kernel throughput on one accelerator, at one precision."""

    id: str
    url: str
    accelerator: str
    precision: str
    groups: np.ndarray
    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    tflops: np.ndarray

    @property
    def peak_tflops(self) -> float:
        return float(ACCELERATORS[self.accelerator]["peak_tflops"][self.precision])

    @property
    def hbm_bytes_s(self) -> float:
        return float(ACCELERATORS[self.accelerator]["hbm_tb_s"]) * 1e12

    def predicted_tflops(self, plateau_tflops: float, d_half: float) -> np.ndarray:
        """Each row's TFLOPS under the engine's shape factor and roofline (module docstring). A grouped row is
        #groups GEMMs of the same shape, so its rate is one group's."""
        rate = (
            plateau_tflops
            * 1e12
            * effects.gemm_shape_factor(rows=self.m, cols=self.n, inner=self.k, half=d_half)
        )
        intensity = compute.gemm_intensity_flop_per_byte(
            rows=self.m, inner=self.k, cols=self.n, element_bytes=_PRECISION_BYTES[self.precision]
        )
        flops = 2.0 * self.m * self.n * self.k
        seconds = compute.math_time_s(
            flops=flops, rate_flops=rate, intensity=intensity, hbm_bytes_s=self.hbm_bytes_s
        )
        return np.asarray(flops / seconds / 1e12, dtype=float)


@dataclass(frozen=True)
class ShapeFit:
    """The fitted ``d_half``, each source's plateau (TFLOPS) and the root-mean-square log error of the rows."""

    d_half: float
    plateau_tflops: dict[str, float]
    rms_log_error: float
    rows: int


def load_kernel_sources(directory: Path = KERNELS_DIR) -> list[KernelSource]:
    """Every ``*.yaml`` of ``directory`` in name order: ``source`` (id, url, accelerator, precision) and ``rows``
    of ``[groups, M, N, K, TFLOPS]``. Raises ``ValueError`` naming the file for a malformed table."""
    out: list[KernelSource] = []
    for path in sorted(directory.glob("*.yaml")):
        name = f"corpus/kernels/{path.name}"
        doc = load_yaml(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("source"), dict):
            raise ValueError(f"{name}: must be a mapping with a 'source' mapping and 'rows'")
        src, rows = doc["source"], doc.get("rows")
        if not isinstance(src.get("id"), str) or not src["id"]:
            raise ValueError(f"{name}: source.id must be a non-empty string")
        accelerator, precision = src.get("accelerator"), src.get("precision")
        if accelerator not in ACCELERATORS or precision not in _PRECISION_BYTES:
            raise ValueError(f"{name}: source.accelerator and source.precision must be known")
        peak = ACCELERATORS[accelerator]["peak_tflops"].get(precision)
        if peak is None:
            raise ValueError(f"{name}: the catalog has no {precision} peak for {accelerator}")
        if not isinstance(rows, list) or not rows:
            raise ValueError(f"{name}: rows must be [groups, M, N, K, TFLOPS], all positive numbers")
        for i, row in enumerate(rows):
            numbers = isinstance(row, list) and len(row) == 5
            numbers = numbers and all(type(v) in (int, float) and v > 0 for v in row)
            if not numbers:
                raise ValueError(f"{name}: rows[{i}] must be [groups, M, N, K, TFLOPS], all positive numbers")
            if row[4] > peak:
                raise ValueError(
                    f"{name}: rows[{i}] measures more than the {precision} peak of {accelerator}"
                )
        table = np.array(rows, dtype=float)
        out.append(
            KernelSource(
                id=str(src["id"]),
                url=str(src.get("url", "")),
                accelerator=str(src["accelerator"]),
                precision=str(src["precision"]),
                groups=table[:, 0],
                m=table[:, 1],
                n=table[:, 2],
                k=table[:, 3],
                tflops=table[:, 4],
            )
        )
    return out


def _golden_min(f: Callable[[float], float], lo: float, hi: float, iterations: int) -> tuple[float, float]:
    """``(x, f(x))`` at the minimum of a unimodal ``f`` on ``[lo, hi]`` by golden-section search."""
    a, b = lo, hi
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (c, fc) if fc <= fd else (d, fd)


def _plateau(source: KernelSource, d_half: float) -> tuple[float, float]:
    """The source's best plateau at ``d_half`` and its sum of squared log errors."""
    log_measured = np.log(source.tflops)

    def sse(log_p: float) -> float:
        err = np.log(source.predicted_tflops(math.exp(log_p), d_half)) - log_measured
        return float(err @ err)

    peak = source.peak_tflops
    log_p, cost = _golden_min(sse, math.log(0.2 * peak), math.log(peak), 60)
    return math.exp(log_p), cost


def fit_shape_half_dim(sources: list[KernelSource]) -> ShapeFit:
    """``d_half`` and the plateaus that minimise the mean squared log error over every row (module docstring).
    Raises ``ValueError`` without a row."""
    rows = sum(len(s.tflops) for s in sources)
    if not rows:
        raise ValueError("no GEMM kernel benchmark: corpus/kernels/*.yaml is empty")

    def cost(d_half: float) -> float:
        return sum(_plateau(s, d_half)[1] for s in sources)

    grid = np.arange(0.0, MAX_HALF + GRID_STEP, GRID_STEP)
    costs = [cost(float(h)) for h in grid]
    best = int(np.argmin(costs))
    lo, hi = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, len(grid) - 1)])
    d_half, total = _golden_min(cost, lo, hi, 30) if hi > lo else (lo, costs[best])
    if costs[best] < total:
        d_half, total = float(grid[best]), costs[best]
    plateaus = {s.id: round(_plateau(s, d_half)[0], 3) for s in sources}
    return ShapeFit(
        d_half=round(d_half, 3),
        plateau_tflops=plateaus,
        rms_log_error=round(math.sqrt(total / rows), 4),
        rows=rows,
    )
