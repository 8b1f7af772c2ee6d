"""The step's figures as columns: ``StepColumns`` (one numpy array per figure, one entry per layout) and the
names and types that ``solvers.engine`` reads its rows with."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from solvers.compute import Num
from solvers.specs import BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class StepColumns:
    """Every figure of a step for N layouts; each field is a numpy array of length N (float64 unless noted).

    ``microbatches`` (int64) per DP replica per step; ``model_flops_per_token`` PaLM convention;
    ``compute_s`` the busiest GPU's math (recompute and elementwise work included); ``comm_s_<dim>`` each
    exchange alone on the busiest GPU and ``exposed_comm_s_<dim>`` what overlap leaves; ``bubble_s`` and
    ``bubble_fraction = bubble / (compute + bubble)``; ``step_s``, ``tokens_per_s``; ``mfu``/``hfu`` against
    the dense peak at the training precision and ``mfu_bf16`` against BF16; ``bytes_per_gpu_<dim>`` the mean
    bytes a GPU sends per step; ``nic_duty_cycle`` and ``burst_bytes`` (seed 004 §5.6); memory per GPU in
    bytes with ``fits`` (bool) against ``capacity_bytes``; ``gpu_busy_fraction = compute_s / step_s``;
    ``roofline_bound`` (bool) when a per-GPU GEMM is HBM-bound.
    """

    microbatches: IntArray
    model_flops_per_token: FloatArray
    compute_s: FloatArray
    comm_s_tp: FloatArray
    comm_s_cp: FloatArray
    comm_s_pp: FloatArray
    comm_s_dp: FloatArray
    comm_s_ep: FloatArray
    exposed_comm_s_tp: FloatArray
    exposed_comm_s_cp: FloatArray
    exposed_comm_s_pp: FloatArray
    exposed_comm_s_dp: FloatArray
    exposed_comm_s_ep: FloatArray
    bubble_s: FloatArray
    bubble_fraction: FloatArray
    step_s: FloatArray
    tokens_per_s: FloatArray
    mfu: FloatArray
    mfu_bf16: FloatArray
    hfu: FloatArray
    bytes_per_gpu_tp: FloatArray
    bytes_per_gpu_cp: FloatArray
    bytes_per_gpu_pp: FloatArray
    bytes_per_gpu_dp: FloatArray
    bytes_per_gpu_ep: FloatArray
    nic_duty_cycle: FloatArray
    burst_bytes: FloatArray
    weights_bytes: FloatArray
    grads_bytes: FloatArray
    optimizer_bytes: FloatArray
    activations_bytes: FloatArray
    total_bytes: FloatArray
    capacity_bytes: FloatArray
    fits: BoolArray
    gpu_busy_fraction: FloatArray
    roofline_bound: BoolArray

    def __len__(self) -> int:
        return int(self.step_s.shape[0])

    def row(self, i: int) -> dict[str, float | int | bool]:
        """Layout ``i`` as python scalars (int for ``microbatches``, bool for ``fits``/``roofline_bound``)."""
        return {name: getattr(self, name)[i].item() for name in FIELD_NAMES}


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(StepColumns))


def column(value: Num, dtype: type, n: int) -> np.ndarray:
    """``value`` as a length-``n`` array of ``dtype`` (constants are broadcast into a fresh array)."""
    array: np.ndarray = np.asarray(value, dtype=dtype)
    if array.shape == (n,):
        return array
    return np.broadcast_to(array, (n,)).copy()


DTYPES: dict[str, type] = {
    name: (
        np.int64 if name == "microbatches" else np.bool_ if name in ("fits", "roofline_bound") else np.float64
    )
    for name in FIELD_NAMES
}

PLAIN_TYPES: tuple[tuple[str, type], ...] = tuple(
    (name, float if kind is np.float64 else int if kind is np.int64 else bool)
    for name, kind in DTYPES.items()
)

ROW_TYPES: tuple[type, ...] = tuple(plain for _, plain in PLAIN_TYPES)

FLOAT_NAMES: tuple[str, ...] = tuple(name for name in FIELD_NAMES if DTYPES[name] is np.float64)
