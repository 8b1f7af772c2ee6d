"""The one default calibration of the step engine, with the source of every number.

Three kinds of number are not physics but measured behaviour of real software on real hardware, so they are
calibrated once here and used unchanged for every scenario and every published run (no per-run tuning):

``COMPUTE_EFFICIENCY``
    The share of the dense tensor-core peak that the large GEMMs of transformer training reach, per
    accelerator. The engine multiplies it by the peak at the training precision; everything else (bubbles,
    exposed communication, recompute, HBM-bound small matrices) is modelled explicitly on top of it, so this
    is the *kernel* efficiency, not an MFU.
``FABRIC_ACHIEVABLE``
    The share of a fabric's nominal per-direction rate that a collective achieves (NCCL "bus bandwidth" over
    line rate), per fabric key of ``solvers.catalog.fabrics``.
``OVERLAP_SM_SHARE``
    The share of the math rate lost while hidden communication runs beside compute (its kernels occupy SMs).
``PRECISION_RATE_FACTOR``
    For FP8 training: the share of the FP8 peak reached relative to the BF16 efficiency, because only the
    linear-layer GEMMs run in FP8 while attention, normalisation, the router, quantisation and the optimizer
    stay in higher precision.

Worked example: an H100 at BF16 runs large GEMMs at 989.4 x 0.54 = 534 TFLOP/s; at FP8 at
1,978.9 x 0.54 x 0.675 = 721 TFLOP/s (1.35x BF16). An NDR NIC (50 GB/s) achieves 50 x 0.85 = 42.5 GB/s.

Calibration figures (``tests/solvers/test_engine.py``, ``python -m tests.solvers.test_engine``): 18 published
runs (MegaScale x4, Llama 3 x3, DeepSeek-V3, Megatron-LM SC'21 Table 1 x10) predicted with these defaults
within 6.4 MFU points each, mean absolute error 2.7 points.
"""

from __future__ import annotations

_A100_GEMM = (
    "calibrated once against A100 runs with the engine's explicit bubble, exposed-communication and "
    "elementwise (HBM-bound) terms: Narayanan et al., SC'21 (Megatron-LM PTD-P) Table 1 (44-52% of peak "
    "with full recompute, 1.7B-1T) and MegaScale (NSDI'24) Table 2 (53.0%/41.2% Megatron-LM, 65.3%/55.2% "
    "MegaScale MFU on 256/12,288 GPUs); one value predicts all fourteen within 7 points. cuBLAS BF16 GEMMs on "
    "A100 reach 230-250 of 312 TFLOP/s on large shapes; training kernels average lower"
)
_HOPPER_GEMM = (
    "calibrated once against Hopper runs with the engine's explicit bubble, exposed-communication and "
    "elementwise terms: Llama 3 (Dubey et al. 2024) Table 4 (43%/41% MFU on 8,192/16,384 H100, 38% at 131K "
    "context) and DeepSeek-V3 (ISCA'25 Table 4: 43.73% MFU on 2,048 H800, FP8); one value predicts all four "
    "within 5 points. cuBLAS BF16 GEMMs reach 600-700 of 989 TFLOP/s on large square shapes; fused attention "
    "and training-shaped GEMMs average lower"
)
_BLACKWELL_GEMM = (
    "estimate: no published large-scale MFU yet; the Hopper kernel efficiency (0.54) is carried over, since "
    "Blackwell's dense peak rises faster than its HBM bandwidth and the same kernels bound it"
)
_MI300X_GEMM = (
    "estimate: public MI300X BF16 GEMM benchmarks (hipBLASLt) reach ~600-700 of 1,307 TFLOP/s on large "
    "shapes and training stacks (ROCm Megatron/torchtitan) report lower MFU than H100; 0.42 of peak"
)

COMPUTE_EFFICIENCY: dict[str, tuple[float, str]] = {
    "a100-sxm-40gb": (0.64, _A100_GEMM),
    "a100-sxm-80gb": (0.64, _A100_GEMM),
    "h100-sxm": (0.54, _HOPPER_GEMM),
    "h800-sxm": (0.54, _HOPPER_GEMM + "; the H800 has the H100's compute"),
    "h200-sxm": (0.54, _HOPPER_GEMM + "; the H200 has the H100's compute with more HBM"),
    "b200": (0.54, _BLACKWELL_GEMM),
    "gb200": (0.54, _BLACKWELL_GEMM),
    "gb300": (0.54, _BLACKWELL_GEMM + "; Blackwell Ultra has GB200's FP8 and BF16 rates"),
    "mi300x": (0.42, _MI300X_GEMM),
}

_NVLINK = (
    "NCCL all-reduce bus bandwidth on NVSwitch systems reaches ~80% of the per-direction NVLink rate "
    "(nccl-tests on DGX A100: ~230 of 300 GB/s; DGX H100: ~360-370 of 450 GB/s)"
)
_H800_NVLINK = "DeepSeek-V3 technical report §3.2.2: ~160 GB/s achieved of the H800's 200 GB/s per direction"
_IB = (
    "NCCL inter-node bus bandwidth over InfiniBand reaches ~85% of line rate with one NIC per GPU "
    "(nccl-tests multi-node DGX A100/H100: ~21 of 25 GB/s HDR, ~42-45 of 50 GB/s NDR)"
)
_ROCE = (
    "RoCEv2 fabrics reach a little less than InfiniBand under collective load (Gangidi et al., 'RDMA over "
    "Ethernet for Distributed AI Training at Meta Scale', SIGCOMM'24 §6: tuned RoCE matches IB only after "
    "routing and congestion tuning); 0.80 of line rate"
)

FABRIC_ACHIEVABLE: dict[str, tuple[float, str]] = {
    "nvlink3": (0.80, _NVLINK),
    "nvlink4": (0.80, _NVLINK),
    "nvlink4-h800": (0.80, _H800_NVLINK),
    "nvlink5": (0.80, _NVLINK + "; carried over to NVLink 5"),
    "nvlink-switch-nvl72": (0.80, _NVLINK + "; carried over to the NVL72 switch domain"),
    "infinity-fabric": (
        0.55,
        "a ring on MI300X's 8-GPU full mesh uses 2 of 7 xGMI links per direction; RCCL all-reduce bus "
        "bandwidth on MI300X platforms is reported around 250 GB/s of the 448 GB/s aggregate",
    ),
    "infiniband-hdr": (0.85, _IB),
    "infiniband-ndr": (0.85, _IB),
    "infiniband-xdr": (0.85, _IB + "; carried over to XDR"),
    "roce-200g": (0.80, _ROCE),
    "roce-400g": (0.80, _ROCE),
    "roce-800g": (0.80, _ROCE + "; carried over to 800G"),
    "ethernet-100g": (0.70, "estimate: commodity Ethernet without RDMA tuning; TCP/IP overheads"),
}

PRECISION_RATE_FACTOR: dict[str, tuple[float, str]] = {
    "bf16": (1.0, "the calibration basis: COMPUTE_EFFICIENCY is measured at BF16"),
    "fp16": (1.0, "same tensor-core rate and kernels as BF16"),
    "fp32": (1.0, "the FP32 peak is used as is (no tensor-core FP32 GEMM path is assumed)"),
    "fp8": (
        0.675,
        "FP8 training reaches ~1.35x its BF16 throughput, not 2x (NVIDIA/Megatron-LM issue #396: a 13B GPT "
        "on H100 went from 0.34 to 0.24 s/step with Transformer Engine FP8; DeepSeek-V3 §3.3 keeps attention, "
        "normalisation, router and optimizer in BF16/FP32); 1.35 / 2 of the FP8 peak at the BF16 efficiency",
    ),
}

GENERIC_COMPUTE_EFFICIENCY: tuple[float, str] = (
    0.54,
    "custom accelerator without a measured value: the Hopper kernel efficiency (the most recent "
    "calibrated generation) is assumed",
)

OVERLAP_SM_SHARE: tuple[float, str] = (
    20.0 / 132.0,
    "DeepSeek-V3 technical report §3.2.2: 20 of the H800's 132 SMs are dedicated to the overlapped all-to-all "
    "(IB and NVLink forwarding, buffer moves, combine reductions); NCCL collectives running beside compute "
    "likewise occupy one SM per channel. 20 / 132 = 15% of the math rate is lost while hidden communication "
    "is in flight",
)

ZERO3_MAX_REUSE_DISTANCE: tuple[float, str] = (
    1.0e9,
    "DeepSpeed ZeRO config default stage3_max_reuse_distance = 1e9 parameter elements "
    "(deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig.max_reuse_distance, pp_int(1e9)); "
    "PartitionedParameterCoordinator.__params_to_release (deepspeed/runtime/zero/partitioned_param_coordinator.py) "
    "keeps a module's parameters gathered when they reappear in the traced module order within that many "
    "elements",
)

# NCCL 2.9.6 (April 2021, the release of the DeepSpeed ZeRO-3 runs of Narayanan et al. SC'21) cost model,
# src/graph/tuning.cc, ncclTopoTuneModel: a ring all-gather or reduce-scatter over nRanks ranks on nNodes
# nodes takes ``baseLat + (nsteps - nInterSteps) intraLat + nInterSteps interLat`` microseconds with
# ``nsteps = nRanks - 1`` and ``nInterSteps = nNodes - 1``; all-gather and reduce-scatter have no tree
# algorithm ("if (coll != ncclFuncAllReduce && a != NCCL_ALGO_RING) continue;"). Order (LL, LL128, Simple).
NCCL_RING_BASE_LATENCY_US: tuple[tuple[float, float, float], str] = (
    (3.6, 10.0, 8.4),
    "NVIDIA/nccl v2.9.6-1 src/graph/tuning.cc, baseLat[Ring] = { 3.6, 10.0, 8.4 } us (LL, LL128, Simple)",
)
NCCL_RING_INTRA_LATENCY_US: tuple[tuple[float, float, float], str] = (
    (0.47, 1.9, 3.4),
    "NVIDIA/nccl v2.9.6-1 src/graph/tuning.cc, hwLat[NVLINK][Ring] = { .47, 1.9, 3.4 } us per intra-node "
    "ring step (LL, LL128, Simple); the LL value is multiplied by 1.8 when the ring spans nodes "
    "('if (nNodes > 1 && p == NCCL_PROTO_LL) intraLat *= 1.8')",
)
NCCL_RING_INTER_LATENCY_US: tuple[tuple[float, float, float], str] = (
    (2.7, 4.0, 9.6),
    "NVIDIA/nccl v2.9.6-1 src/graph/tuning.cc, hwLat[NET][Ring] = { 2.7, 4.0, 9.6 } us per inter-node ring "
    "step (LL, LL128, Simple)",
)
# Host time of one eager PyTorch operation: the fixed overhead of dispatching ``x + 1`` from Python through
# the dispatcher to its kernel, measured by PyTorch's maintainers. Charged once per list entry that
# ProcessGroupNCCL copies per list-form collective (``zero3_per_tensor_collectives``).
EAGER_OP_OVERHEAD_US: tuple[float, str] = (
    4.5,
    "J. Ansel, 'Micro-optimizations for the most micro of benchmarks', PyTorch dev-discuss, "
    "https://dev-discuss.pytorch.org/t/micro-optimizations-for-the-most-micro-of-benchmarks/1836: the fixed "
    "overhead of one eager op (x + 1) measured at 4.5 us on an Intel i9-11900K",
)
NCCL_LL_MULTINODE_INTRA_FACTOR: tuple[float, str] = (
    1.8,
    "NVIDIA/nccl v2.9.6-1 src/graph/tuning.cc: 'if (nNodes > 1 && p == NCCL_PROTO_LL) intraLat *= 1.8'",
)
NCCL_RING_PROTOCOL_BW_FACTOR: tuple[tuple[float, float, float], str] = (
    (0.25, 0.92, 1.0),
    "NVIDIA/nccl v2.9.6-1 src/graph/tuning.cc, ring bus bandwidth per protocol relative to Simple: LL "
    "busBw x 1/4 across nodes ('busBw * ((nNodes > 1 || ...) ? 1.0/4.0 : 1.0/3.0)'), LL128 busBw x 0.92 "
    "with two or more GPUs per node ('ppn < 2 ? 0.7 : 0.92'), Simple busBw; NCCL runs each collective in the "
    "protocol of least modelled time (latency + size / bandwidth)",
)
