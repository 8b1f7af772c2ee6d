"""Node presets: which accelerator, how many per node (or NVLink domain), and which fabrics join them.

A node preset fills ``cluster.accelerator``, ``cluster.gpus_per_node``, ``cluster.scale_up`` and
``cluster.scale_out``; explicit fields in the scenario override it. For GB200 NVL72 the "node" is the
72-GPU NVLink domain, since that is the group the scale-up fabric joins; its ``gpus_per_server`` (a compute
tray of 4 GPUs) is the unit the ledger counts failures, host power and checkpoint writers in. A preset
without it is one server per node.
"""

from __future__ import annotations

from typing import Any

NODES: dict[str, dict[str, Any]] = {
    "dgx-a100-40gb": {
        "name": "NVIDIA DGX A100 (40 GB)",
        "accelerator": "a100-sxm-40gb",
        "gpus_per_node": 8,
        "scale_up": "nvlink3",
        "scale_out": "infiniband-hdr",
        "sources": {
            "node": "NVIDIA DGX A100 data sheet (2020): 8x A100 40GB, 6 NVSwitches, 8x ConnectX-6 HDR"
        },
    },
    "dgx-a100-80gb": {
        "name": "NVIDIA DGX A100 (80 GB)",
        "accelerator": "a100-sxm-80gb",
        "gpus_per_node": 8,
        "scale_up": "nvlink3",
        "scale_out": "infiniband-hdr",
        "sources": {
            "node": "NVIDIA DGX A100 data sheet (2021): 8x A100 80GB, 6 NVSwitches, 8x ConnectX-6 HDR"
        },
    },
    "dgx-h100": {
        "name": "NVIDIA DGX H100",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "scale_up": "nvlink4",
        "scale_out": "infiniband-ndr",
        "sources": {
            "node": "NVIDIA DGX H100 data sheet (2023): 8x H100 SXM, 4 NVSwitches, 8x ConnectX-7 NDR"
        },
    },
    "hgx-h800": {
        "name": "HGX H800 (8x H800, 400G InfiniBand per GPU)",
        "accelerator": "h800-sxm",
        "gpus_per_node": 8,
        "scale_up": "nvlink4-h800",
        "scale_out": "infiniband-ndr",
        "sources": {
            "node": "DeepSeek-V3 technical report §3.1: 8 H800 per node over NVLink/NVSwitch, one 400 Gb/s "
            "InfiniBand NIC per GPU"
        },
    },
    "dgx-h200": {
        "name": "NVIDIA DGX H200",
        "accelerator": "h200-sxm",
        "gpus_per_node": 8,
        "scale_up": "nvlink4",
        "scale_out": "infiniband-ndr",
        "sources": {
            "node": "NVIDIA DGX H200 data sheet (2024): 8x H200 SXM, 4 NVSwitches, 8x ConnectX-7 NDR"
        },
    },
    "dgx-b200": {
        "name": "NVIDIA DGX B200",
        "accelerator": "b200",
        "gpus_per_node": 8,
        "scale_up": "nvlink5",
        "scale_out": "infiniband-ndr",
        "sources": {
            "node": "NVIDIA DGX B200 data sheet (2024): 8x B200, 2 NVSwitch chips, 8x ConnectX-7 400G"
        },
    },
    "gb200-nvl72": {
        "name": "NVIDIA GB200 NVL72 rack (one 72-GPU NVLink domain)",
        "accelerator": "gb200",
        "gpus_per_node": 72,
        "scale_up": "nvlink-switch-nvl72",
        "scale_out": "infiniband-ndr",
        "gpus_per_server": 4,
        "sources": {
            "node": "NVIDIA GB200 NVL72 data sheet (2024): 36 Grace + 72 Blackwell GPUs in one NVLink "
            "domain; one ConnectX-7 400 Gb/s NDR NIC per GPU (4 a compute tray), as NVIDIA's and CoreWeave's "
            "MLPerf Training systems list (ConnectX-8 800G is GB300's)",
            "server": "NVIDIA GB200 NVL72 data sheet: 18 compute trays, each 2 Grace CPUs and 4 GPUs with their "
            "own NICs, local NVMe and power: the unit of failures, host power and checkpoint writers",
        },
    },
    "gb300-nvl72": {
        "name": "NVIDIA GB300 NVL72 rack (one 72-GPU NVLink domain)",
        "accelerator": "gb300",
        "gpus_per_node": 72,
        "scale_up": "nvlink-switch-nvl72",
        "scale_out": "infiniband-xdr",
        "gpus_per_server": 4,
        "sources": {
            "node": "NVIDIA GB300 NVL72 data sheet (2025): 36 Grace + 72 Blackwell Ultra GPUs in one NVLink "
            "domain (130 TB/s); one ConnectX-8 800 Gb/s SuperNIC per GPU",
            "server": "NVIDIA GB300 NVL72 data sheet: 18 compute trays, each 2 Grace CPUs and 4 GPUs with their "
            "own NICs, local NVMe and power: the unit of failures, host power and checkpoint writers",
        },
    },
    "mi300x-platform": {
        "name": "AMD Instinct MI300X platform (8x MI300X)",
        "accelerator": "mi300x",
        "gpus_per_node": 8,
        "scale_up": "infinity-fabric",
        "scale_out": "roce-400g",
        "sources": {
            "node": "AMD Instinct MI300X platform brief (2023): 8 OAM GPUs in an Infinity Fabric mesh; "
            "400G RoCE NIC per GPU as deployed by cloud providers"
        },
    },
}
