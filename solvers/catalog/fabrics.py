"""Fabric presets: nominal bandwidth per GPU per direction, latency, and scope.

``nominal_gb_s`` is the line rate one GPU can send in one direction (1e9 bytes/s): NVLink figures are the
vendor's bidirectional total / 2; NIC figures are the port rate / 8 for one NIC per GPU. ``latency_us`` is the
per-message start-up cost (the alpha of the alpha-beta model). What a collective really achieves is
``nominal_gb_s`` x the fabric's achievable factor, which is the one calibration in
``solvers.catalog.calibration.FABRIC_ACHIEVABLE``; both numbers appear in a report's ``assumptions``.

``scope`` is ``scale_up`` (inside a node or NVLink domain) or ``scale_out`` (the NIC).
"""

from __future__ import annotations

from typing import Any

_NCCL_LAT_UP = (
    "alpha of one NCCL ring step inside an NVLink/xGMI domain, ~1 us (NCCL tests small-message latency "
    "on DGX systems); CONTRACT.md v1 example"
)
_NCCL_LAT_OUT = (
    "alpha of one NCCL ring step across RDMA NICs, ~5 us (switch hops + NIC + proxy); CONTRACT.md v1 example"
)

# The RoCE fabrics' latency, one estimate whatever the line rate (the switch and congestion control, not the link).
_ROCE_LAT = (
    "RoCE adds Ethernet switch latency and congestion control over InfiniBand; estimate 6 us per ring step"
)

FABRICS: dict[str, dict[str, Any]] = {
    "nvlink3": {
        "name": "NVLink 3 (A100, NVSwitch gen 2)",
        "scope": "scale_up",
        "nominal_gb_s": 300.0,
        "latency_us": 1.0,
        "sources": {
            "nominal_gb_s": "NVIDIA A100 data sheet: NVLink 600 GB/s bidirectional per GPU (12 links x 25 GB/s "
            "per direction) -> 300 GB/s per direction",
            "latency_us": _NCCL_LAT_UP,
        },
    },
    "nvlink4": {
        "name": "NVLink 4 (H100/H200, NVSwitch gen 3)",
        "scope": "scale_up",
        "nominal_gb_s": 450.0,
        "latency_us": 1.0,
        "sources": {
            "nominal_gb_s": "NVIDIA H100 data sheet: NVLink 900 GB/s bidirectional per GPU (18 links) -> "
            "450 GB/s per direction; seed 003 uses 450 GB/s",
            "latency_us": _NCCL_LAT_UP,
        },
    },
    "nvlink4-h800": {
        "name": "NVLink 4, export variant (H800, 8 links)",
        "scope": "scale_up",
        "nominal_gb_s": 200.0,
        "latency_us": 1.0,
        "sources": {
            "nominal_gb_s": "DeepSeek-V3 technical report §3.2.2: H800 NVLink 400 GB/s bidirectional -> "
            "200 GB/s per direction (the report measures ~160 GB/s achieved)",
            "latency_us": _NCCL_LAT_UP,
        },
    },
    "nvlink5": {
        "name": "NVLink 5 (B200, NVSwitch gen 4, 8-GPU node)",
        "scope": "scale_up",
        "nominal_gb_s": 900.0,
        "latency_us": 1.0,
        "sources": {
            "nominal_gb_s": "NVIDIA DGX B200 data sheet: NVLink 5 1.8 TB/s bidirectional per GPU -> "
            "900 GB/s per direction",
            "latency_us": _NCCL_LAT_UP,
        },
    },
    "nvlink-switch-nvl72": {
        "name": "NVLink 5 Switch domain (GB200 NVL72, 72 GPUs)",
        "scope": "scale_up",
        "nominal_gb_s": 900.0,
        "latency_us": 1.5,
        "sources": {
            "nominal_gb_s": "NVIDIA GB200 NVL72 data sheet: 130 TB/s NVLink over 72 GPUs = 1.8 TB/s "
            "bidirectional per GPU -> 900 GB/s per direction",
            "latency_us": "one NVLink Switch tray hop more than an 8-GPU baseboard; estimate 1.5 us",
        },
    },
    "infinity-fabric": {
        "name": "AMD Infinity Fabric (MI300X, 8-GPU full mesh)",
        "scope": "scale_up",
        "nominal_gb_s": 448.0,
        "latency_us": 1.5,
        "sources": {
            "nominal_gb_s": "AMD MI300X data sheet: 7 x 128 GB/s bidirectional Infinity Fabric links = 896 "
            "GB/s aggregate -> 448 GB/s per direction (a ring uses 2 of the 7 links, captured by the "
            "achievable factor)",
            "latency_us": "RCCL small-message latency on MI300X platforms is above NCCL's on NVSwitch; "
            "estimate 1.5 us",
        },
    },
    "infiniband-hdr": {
        "name": "InfiniBand HDR 200 Gb/s, one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 25.0,
        "latency_us": 5.0,
        "sources": {
            "nominal_gb_s": "NVIDIA ConnectX-6 HDR: 200 Gb/s = 25 GB/s per direction; DGX A100 has 8 "
            "compute NICs (one per GPU)",
            "latency_us": _NCCL_LAT_OUT,
        },
    },
    "infiniband-ndr": {
        "name": "InfiniBand NDR 400 Gb/s, one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 50.0,
        "latency_us": 5.0,
        "sources": {
            "nominal_gb_s": "NVIDIA ConnectX-7 NDR: 400 Gb/s = 50 GB/s per direction; DGX H100 has 8 "
            "compute NICs (one per GPU); seed 003 and 004 use 50 GB/s",
            "latency_us": _NCCL_LAT_OUT,
        },
    },
    "infiniband-xdr": {
        "name": "InfiniBand XDR 800 Gb/s, one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 100.0,
        "latency_us": 5.0,
        "sources": {
            "nominal_gb_s": "NVIDIA ConnectX-8 SuperNIC / Quantum-X800: 800 Gb/s = 100 GB/s per direction",
            "latency_us": _NCCL_LAT_OUT,
        },
    },
    "roce-200g": {
        "name": "RoCEv2 200 Gb/s Ethernet, one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 25.0,
        "latency_us": 6.0,
        "sources": {
            "nominal_gb_s": "200 GbE port = 25 GB/s per direction",
            "latency_us": _ROCE_LAT,
        },
    },
    "roce-400g": {
        "name": "RoCEv2 400 Gb/s Ethernet, one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 50.0,
        "latency_us": 6.0,
        "sources": {
            "nominal_gb_s": "400 GbE port = 50 GB/s per direction (Meta RoCE and Alibaba HPN fabrics use "
            "400G per GPU)",
            "latency_us": _ROCE_LAT,
        },
    },
    "roce-800g": {
        "name": "RoCEv2 800 Gb/s Ethernet per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 100.0,
        "latency_us": 6.0,
        "sources": {
            "nominal_gb_s": "NVIDIA Spectrum-X with ConnectX-8 SuperNICs: 800 Gb/s = 100 GB/s per GPU per direction "
            "(e.g. four 200 Gb/s ports a GPU, CoreWeave's GB300 NVL72 systems in MLPerf Training v6.0)",
            "latency_us": _ROCE_LAT,
        },
    },
    "ethernet-100g": {
        "name": "Ethernet 100 Gb/s (TCP or RoCE), one NIC per GPU",
        "scope": "scale_out",
        "nominal_gb_s": 12.5,
        "latency_us": 10.0,
        "sources": {
            "nominal_gb_s": "100 GbE port = 12.5 GB/s per direction",
            "latency_us": "estimate: commodity Ethernet with a kernel or RoCE stack, ~10 us per ring step",
        },
    },
}
