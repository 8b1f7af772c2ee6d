"""Pareto fronts over two or three objectives, all minimised, vectorised with numpy.

A point ``a`` dominates ``b`` when ``a`` is no worse on every objective and strictly better on at least one
(Deb, *Multi-Objective Optimization Using Evolutionary Algorithms*, 2001, Definition 2.5). The front is the
set of points no other point dominates. Points with identical objective vectors do not dominate each other;
``pareto_mask`` keeps the first of each such group (by input order) so that a front never lists the same
trade-off twice.

Two objectives: sort by the first (ties by the second), and a point is on the front when its second
objective is strictly below the running minimum of every earlier point: O(N log N) (Kung, Luccio and
Preparata, *On finding the maxima of a set of vectors*, JACM 1975). Three: the same sort, a vectorised
pre-filter against a few points known to be on the front, then the same paper's sweep over a (y, z)
staircase for the survivors: O(N log N) comparisons.

Example: for (step_s, usd) points [(1, 5), (2, 3), (3, 4), (2, 3)] the front is rows 0 and 1: row 2 is
dominated by row 1, and row 3 repeats row 1.
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

from solvers.errors import ScenarioError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MIN_OBJECTIVES = 2
MAX_OBJECTIVES = 3
# Random weightings whose minimisers pre-filter the three-objective front.
_FILTERS = 32


def pareto_mask(values: FloatArray) -> BoolArray:
    """True for the rows of ``values`` (shape N x k, k = 2 or 3, all minimised) on the Pareto front.

    Equation: row i is kept when no row j has values[j] <= values[i] everywhere and < somewhere, and no
    earlier row j has values[j] == values[i] (duplicates keep their first occurrence).
    Example: ``pareto_mask(np.array([[1., 5.], [2., 3.], [3., 4.], [2., 3.]]))`` is
    ``[True, True, False, False]``.
    """
    points = np.asarray(values, dtype=np.float64)
    if points.ndim != 2 or not MIN_OBJECTIVES <= points.shape[1] <= MAX_OBJECTIVES:
        raise ScenarioError.single(
            "pareto",
            f"needs {MIN_OBJECTIVES} or {MAX_OBJECTIVES} objectives per point, got shape {points.shape}",
        )
    n = points.shape[0]
    mask = np.zeros(n, dtype=np.bool_)
    if n == 0:
        return mask
    if not np.all(np.isfinite(points)):
        raise ScenarioError.single("pareto", "objective values must be finite")
    # Lexicographic order (first objective, then the others, then input order): a point can only be
    # dominated by, or duplicate, a point before it in this order.
    keys = [np.arange(n)] + [points[:, j] for j in range(points.shape[1] - 1, -1, -1)]
    order = np.lexsort(keys)
    ordered = points[order]
    if points.shape[1] == 2:
        keep = _front_2d_sorted(ordered)
    else:
        # Cheap exact pre-filter: points on the 2-objective fronts of each pair are (nearly all) on the
        # full front and dominate most of the rest; only the survivors go through the block sweep.
        alive = np.flatnonzero(_survives_filters(ordered))
        keep = np.zeros(n, dtype=np.bool_)
        keep[alive[_front_3d_sorted(ordered[alive])]] = True
    mask[order[keep]] = True
    return mask


def pareto_indices(values: FloatArray) -> IntArray:
    """Indices of the Pareto front of ``values``, ordered by the first objective (then the others)."""
    points = np.asarray(values, dtype=np.float64)
    index = np.flatnonzero(pareto_mask(points)).astype(np.int64)
    if index.size == 0:
        return index
    keys = [index] + [points[index, j] for j in range(points.shape[1] - 1, -1, -1)]
    return index[np.lexsort(keys)]


def _front_2d_sorted(ordered: FloatArray) -> BoolArray:
    """Front of points sorted by (x, y): keep a point when its y is below every earlier y."""
    y = ordered[:, 1]
    earlier_min = np.minimum.accumulate(np.concatenate(([np.inf], y[:-1])))
    return np.asarray(y < earlier_min, dtype=np.bool_)


def _survives_filters(ordered: FloatArray) -> BoolArray:
    """False for points that an earlier point (in sorted order) is <= on every objective.

    The filter points minimise random positive weightings of the normalised objectives, so each is on the
    front (or duplicates a front point); testing every point against these few is one vectorised pass that
    removes most dominated points. It only removes dominated or duplicated points, never a front point.
    """
    n, k = ordered.shape
    low = ordered.min(axis=0)
    high = ordered.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    weights = np.random.default_rng(0).dirichlet(np.ones(k), size=_FILTERS)
    # (filters x N), C-contiguous, so each weighting's argmin scans memory in order.
    scores = (weights / span) @ (ordered - low).T
    f_pos = np.unique(np.argmin(scores, axis=1))
    f_val = ordered[f_pos]
    alive = np.ones(n, dtype=np.bool_)
    for pos, val in zip(f_pos.tolist(), f_val, strict=True):
        # A filter point only removes points after it in sorted order (it cannot dominate earlier ones).
        tail = ordered[pos + 1 :]
        covered = tail[:, 0] >= val[0]
        for j in range(1, k):
            covered &= tail[:, j] >= val[j]
        alive[pos + 1 :] &= ~covered
    return alive


def _front_3d_sorted(ordered: FloatArray) -> BoolArray:
    """Front of 3-objective points sorted lexicographically: a sweep over a (y, z) staircase.

    Every earlier point has x <= this x, so this point is dominated (or duplicated) exactly when an
    earlier front point has y <= and z <= its own. The staircase keeps the front's (y, z) with y
    increasing and z decreasing, so the smallest z among y <= y_i sits at the last y <= y_i (bisect);
    a new front point removes the staircase points it covers, which follow it contiguously.
    """
    ys: list[float] = []
    zs: list[float] = []
    keep = np.zeros(ordered.shape[0], dtype=np.bool_)
    for i, (y, z) in enumerate(ordered[:, 1:3].tolist()):
        pos = bisect.bisect_right(ys, y)
        if pos and zs[pos - 1] <= z:
            continue
        keep[i] = True
        end = pos
        while end < len(ys) and zs[end] >= z:
            end += 1
        ys[pos:end] = [y]
        zs[pos:end] = [z]
    return keep
