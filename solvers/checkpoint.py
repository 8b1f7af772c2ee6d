"""Checkpoint size, write time and the optimum checkpoint interval.

All functions are pure and keyword-only. Scalars in, scalars out; the interval functions also accept numpy
arrays and broadcast, so a sweep over write times or MTBFs is one call.

Sources:
* Checkpoint bytes per parameter: mixed-precision Adam keeps 2-byte weights, a 4-byte fp32 master copy and
  two 4-byte fp32 moments (Rajbhandari et al., "ZeRO", SC 2020, §3.1: "16 bytes" = these 14 + 2 of fp16
  gradients, which a checkpoint does not keep).
* Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974.
* Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", Future Generation
  Computer Systems 22(3):303-312, 2006, eq. (37).
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from solvers.errors import ScenarioError

FloatOrArray = TypeVar("FloatOrArray", float, npt.NDArray[np.float64])

OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp32")

# Bytes per parameter that a resumable checkpoint must hold, by (optimizer, training precision).
#   adam, 16-bit or fp8 training: 2 (bf16/fp16 weights) + 4 (fp32 master) + 4 (m) + 4 (v) = 14.
#     FP8 recipes (Transformer Engine, DeepSeek-V3 §3.3) keep bf16 weights and fp32 master weights and
#     moments; the fp8 copies are transient casts, so the checkpoint is the same 14 bytes.
#   adam, fp32 training: the weights are the master copy: 4 + 4 + 4 = 12.
#   sgd (with momentum, the torch.optim.SGD default in large-scale recipes): weights + fp32 master (when the
#     weights are 16-bit) + one fp32 momentum buffer: 2 + 4 + 4 = 10, or 4 + 4 = 8 in fp32.
CHECKPOINT_BYTES_PER_PARAM: dict[tuple[str, str], float] = {
    ("adam", "bf16"): 14.0,
    ("adam", "fp16"): 14.0,
    ("adam", "fp8"): 14.0,
    ("adam", "fp32"): 12.0,
    ("sgd", "bf16"): 10.0,
    ("sgd", "fp16"): 10.0,
    ("sgd", "fp8"): 10.0,
    ("sgd", "fp32"): 8.0,
}

BYTES_PER_PARAM_NOTE = (
    "Adam mixed precision = 14 B/param = 2 (bf16/fp16 weights) + 4 (fp32 master) + 4 (fp32 first moment) + "
    "4 (fp32 second moment); fp32 Adam = 12; SGD with momentum = 10 (16-bit) or 8 (fp32). Seed 000 §3.1 "
    "describes its 14 B as 'fp32 weights + fp32 first moment + fp32 second moment', which sums to 12; the "
    "14 B figure it reproduces from mlsysim is the mixed-precision count used here (mlsysim CheckpointModel: "
    "'FP32 master + FP32 momentum + FP32 variance + FP16 weights')."
)


def checkpoint_bytes_per_param(*, optimizer: str, precision: str) -> float:
    """Bytes per parameter of a resumable checkpoint (model weights + optimizer state, no gradients).

    Equation: adam = w + 4 + 4 + 4 with w = 2 for 16-bit and fp8 training (fp32 master kept separately) and
    w + master collapsing to 4 for fp32 training; sgd = w + (4 master if 16-bit) + 4 momentum.
    Source: Rajbhandari et al., ZeRO (SC 2020) §3.1 (mixed-precision Adam state = 12 B/param + 2 B
    weights).
    Example: ``checkpoint_bytes_per_param(optimizer="adam", precision="bf16")`` -> 14.0.
    """
    key = (optimizer.lower(), precision.lower())
    if key[0] not in OPTIMIZERS:
        raise ScenarioError.single("training.optimizer", f"must be one of {', '.join(OPTIMIZERS)}")
    if key[1] not in PRECISIONS:
        raise ScenarioError.single("training.precision", f"must be one of {', '.join(PRECISIONS)}")
    return CHECKPOINT_BYTES_PER_PARAM[key]


def checkpoint_bytes(*, params: float, optimizer: str, precision: str) -> float:
    """Size of one full training checkpoint in bytes.

    Equation: bytes = params x bytes_per_param(optimizer, precision).
    Source: see ``checkpoint_bytes_per_param``; seed 000 §3.1 (mlsysim CheckpointModel).
    Example: Llama-3-70B as mlsysim counts it, 70.6e9 params, Adam in bf16:
    70.6e9 x 14 = 988.4e9 bytes (988.4 GB, seed 000 §3.1).
    """
    if not params > 0:
        raise ScenarioError.single("model.params", "must be a positive number of parameters")
    return float(params) * checkpoint_bytes_per_param(optimizer=optimizer, precision=precision)


def default_checkpoint_writers(*, nodes: int) -> int:
    """Writers used when the scenario leaves ``training.checkpoint.writers`` out: one per node.

    Why: with ZeRO-1 or FSDP each node holds a distinct shard of weights and optimizer state, and sharded
    checkpointing (PyTorch Distributed Checkpoint, Megatron-Core dist-ckpt) lets every rank write its own
    shard; one stream per node is the unit that a node's NICs or local NVMe bound. The file-system cap
    (``cluster.storage.write_gb_s``) then limits the aggregate, so over-counting writers cannot make a
    write faster than the storage allows.
    Example: 2,048 nodes -> 2,048 writers.
    """
    return max(1, int(nodes))


def checkpoint_write_bandwidth_gb_s(
    *, writers: int, per_writer_gb_s: float, storage_cap_gb_s: float
) -> float:
    """Aggregate checkpoint write bandwidth in 1e9 B/s.

    Equation: bw = min(writers x per_writer_gb_s, storage_cap_gb_s).
    Source: mlsysim CheckpointModel (seed 000 §3.2): ``min(storage_bw x n_writers, filesystem_limit)`` with
    7 GB/s per writer (NVMe Gen4 sequential) and a 500 GB/s file-system cap.
    Example: 4 writers x 7 GB/s under a 500 GB/s cap -> 28 GB/s.
    """
    if writers < 1:
        raise ScenarioError.single("training.checkpoint.writers", "must be at least 1")
    if not per_writer_gb_s > 0:
        raise ScenarioError.single("cluster.storage.per_writer_gb_s", "must be positive")
    if not storage_cap_gb_s > 0:
        raise ScenarioError.single("cluster.storage.write_gb_s", "must be positive")
    return min(writers * per_writer_gb_s, storage_cap_gb_s)


def checkpoint_write_s(
    *, checkpoint_bytes: float, writers: int, per_writer_gb_s: float, storage_cap_gb_s: float
) -> float:
    """Seconds to write one checkpoint (the training job is blocked for this long).

    Equation: C = bytes / (min(writers x per_writer, cap) x 1e9).
    Source: mlsysim CheckpointModel (seed 000 §3.2).
    Example: 988.4e9 B, 1 writer at 7 GB/s -> 141.2 s; 4 writers -> 35.3 s; 64 writers -> 2.21 s;
    256 writers hit the 500 GB/s cap -> 1.98 s (seed 000 §3.2: "141 s -> 2 s").
    """
    bandwidth = checkpoint_write_bandwidth_gb_s(
        writers=writers, per_writer_gb_s=per_writer_gb_s, storage_cap_gb_s=storage_cap_gb_s
    )
    return checkpoint_bytes / (bandwidth * 1e9)


def young_interval_s(*, checkpoint_write_s: FloatOrArray, mtbf_s: FloatOrArray) -> FloatOrArray:
    """Young's first-order optimum of the compute time between checkpoints.

    Equation: T = sqrt(2 C M).
    Source: Young, CACM 17(9), 1974.
    Example: C = 60 s, M = 67.0 h (512 H100 under the node-series model) -> 5,379 s = 1.494 h;
    with the real write C = 141.2 s -> 2.29 h (seed 000 §3).
    """
    return np.sqrt(2.0 * checkpoint_write_s * mtbf_s)


def daly_interval_s(*, checkpoint_write_s: FloatOrArray, mtbf_s: FloatOrArray) -> FloatOrArray:
    """Daly's higher-order optimum of the compute time between checkpoints.

    Equation (Daly 2006, eq. 37), with d = C / (2 M):
        T = sqrt(2 C M) [1 + sqrt(d)/3 + d/9] - C    for C < 2 M
        T = M                                         for C >= 2 M
    Source: Daly, FGCS 22(3):303-312, 2006.
    Example: C = 141.2 s, M = 66.96 h -> 8,157 s = 2.266 h (Young: 2.292 h); the correction matters only
    when C is a visible fraction of M.
    """
    c = np.asarray(checkpoint_write_s, dtype=np.float64)
    m = np.asarray(mtbf_s, dtype=np.float64)
    d = c / (2.0 * m)
    higher = np.sqrt(2.0 * c * m) * (1.0 + np.sqrt(d) / 3.0 + d / 9.0) - c
    result = np.where(c < 2.0 * m, higher, m)
    if result.ndim == 0:
        return float(result)  # type: ignore[return-value]
    return result  # type: ignore[return-value]


def exact_interval_s(*, checkpoint_write_s: FloatOrArray, mtbf_s: FloatOrArray) -> FloatOrArray:
    """The exact optimum of the ``expected_loss`` ledger: the T that minimises M (e^((T+C)/M) - 1) / T.

    Equation: setting the derivative to zero gives (1 - y) e^y = e^(-x) with y = T/M, x = C/M, i.e.
    y = 1 + W0(-e^(-1-x)) (Lambert W, principal branch). Solved by Newton's method on
    h(y) = ln(1 - y) + y + x, started at min(sqrt(2x), 1 - e^(-1-x)), where h <= 0; h is concave and
    decreasing, so the iterates fall monotonically onto the root. The restart time does not move the
    optimum (it multiplies the loss by e^(R/M), a constant in T).
    Source: Daly 2006 (FGCS 22(3)) §3, whose eq. 37 is a series expansion of this optimum.
    Example: C = 141.2 s, M = 66.96 h -> 8,157 s = 2.266 h (Daly eq. 37 agrees to 1e-7; Young: 2.292 h);
    C = M -> T = 0.8414 M (Daly: 0.8261 M, Young: 1.414 M).
    """
    c = np.asarray(checkpoint_write_s, dtype=np.float64)
    m = np.asarray(mtbf_s, dtype=np.float64)
    x = c / m
    # Past C/M = 30 the root is 1 - e^(-1-x) to double precision: T = M.
    xs = np.minimum(x, _EXACT_SATURATION)
    y = np.minimum(np.sqrt(2.0 * xs), -np.expm1(-1.0 - xs))
    for _ in range(_EXACT_MAX_ITERATIONS):
        h = np.log1p(-y) + y + xs
        step = h * (1.0 - y) / y
        y = y + step
        if np.all(np.abs(step) <= 1e-15 * y):
            break
    result = m * np.where(x > _EXACT_SATURATION, -np.expm1(-1.0 - x), y)
    if result.ndim == 0:
        return float(result)  # type: ignore[return-value]
    return result  # type: ignore[return-value]


# Newton from the right converges in under 10 steps for C/M >= 1e-6 and about 25 at C/M = 1e-12 (the
# first steps halve y until it nears the root); 60 is a cap, never reached for finite positive inputs.
_EXACT_MAX_ITERATIONS = 60
_EXACT_SATURATION = 30.0


def optimal_interval_s(*, method: str, checkpoint_write_s: float, mtbf_s: float) -> float:
    """The optimum compute time between checkpoints under ``method`` ("daly", "young" or "exact").

    Scalar fast path of ``young_interval_s`` / ``daly_interval_s`` / ``exact_interval_s`` (same equations),
    used once per report.
    Example: ``optimal_interval_s(method="young", checkpoint_write_s=60.0, mtbf_s=241_071.4)`` -> 5,378.5 s.
    """
    c, m = float(checkpoint_write_s), float(mtbf_s)
    if method == "young":
        return math.sqrt(2.0 * c * m)
    if method == "daly":
        if c >= 2.0 * m:
            return m
        d = c / (2.0 * m)
        return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(d) / 3.0 + d / 9.0) - c
    if method == "exact":
        x = c / m
        if x > _EXACT_SATURATION:
            return m * -math.expm1(-1.0 - x)
        y = min(math.sqrt(2.0 * x), -math.expm1(-1.0 - x))
        for _ in range(_EXACT_MAX_ITERATIONS):
            step = (math.log1p(-y) + y + x) * (1.0 - y) / y
            y += step
            if abs(step) <= 1e-15 * y:
                break
        return m * y
    raise ScenarioError.single("training.checkpoint.interval_method", "must be one of daly, young, exact")
