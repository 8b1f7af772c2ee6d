"""A GB200 NVL72 "node" is the 72-GPU NVLink domain (solvers/catalog/nodes.py), not a server: the ledger
counts its per-server quantities (the default checkpoint writers, one per server; the PSUs in series, 2 per
server; host power) per compute tray of 4 GPUs. The same 576 Blackwell GPUs then checkpoint as fast, and fail
no less often, as NVL72 racks as DGX B200 servers, with the same per-component MTTFs, storage and model."""

from __future__ import annotations

from typing import Any

import pytest

import solvers


def _solve(node: str) -> dict[str, Any]:
    document = {
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": node, "gpus": 576},
        "training": {
            "seq_len": 8192,
            "global_batch_seqs": 576,
            "layout": {"tp": 8, "pp": 1, "zero_stage": 1},
        },
    }
    return dict(solvers.solve(document, ranges=False))


def test_nvl72_default_checkpoint_writers_are_not_one_per_72_gpu_rack():
    # DGX B200: 72 servers x 7 GB/s -> capped at 500 GB/s, 988.4e9 B in 1.98 s.
    # GB200 NVL72: 8 "nodes" -> 8 writers x 7 GB/s = 56 GB/s, 17.65 s, although a rack holds 18 compute
    # trays (each with its own CPUs, NICs and NVMe) and 72 NICs.
    dgx = _solve("dgx-b200")["reliability"]
    nvl = _solve("gb200-nvl72")["reliability"]
    assert dgx["checkpoint_write_s"] == pytest.approx(1.9768, rel=1e-3)
    assert nvl["checkpoint_write_s"] <= dgx["checkpoint_write_s"] * 1.01


def test_nvl72_cluster_mtbf_not_longer_than_the_same_gpus_in_8_gpu_servers():
    # Defaults: GPU 50,000 h, NIC 150,000 h (one per GPU), PSU 100,000 h, "2 PSUs in series per 8-GPU node".
    # DGX B200:   1/(8/5e4 + 8/1.5e5 + 2/1e5) = 4,285.7 h / 72 nodes = 59.52 h
    # NVL72 rack: 1/(72/5e4 + 72/1.5e5 + 2/1e5) = 515.5 h / 8 nodes = 64.43 h (2 PSUs for 72 GPUs);
    # with the source's 2 PSUs per 8 GPUs (18 per rack) it is 476.2 h / 8 = 59.52 h, the DGX figure.
    dgx = _solve("dgx-b200")["reliability"]
    nvl = _solve("gb200-nvl72")["reliability"]
    assert dgx["cluster_mtbf_h"] == pytest.approx(59.5238, rel=1e-4)
    assert nvl["cluster_mtbf_h"] <= dgx["cluster_mtbf_h"] * (1 + 1e-9)


def test_nvl72_host_power_is_per_compute_tray():
    # 2 kW of host power per server: 144 trays of 4 GPUs for 576 GPUs, not 8 racks (2 kW for 72 GPUs)
    nvl = _solve("gb200-nvl72")
    assert nvl["reliability"]["nodes"] == 144
    host = next(a for a in nvl["assumptions"] if a["key"] == "cluster.power.host_w_per_node")
    assert host["value"] == 2_000.0
    nics = next(a for a in nvl["assumptions"] if a["key"] == "cluster.reliability.nics_per_node")
    assert nics["value"] == 4 and "compute trays" in nics["source"]


def test_a_stated_smaller_nvlink_domain_keeps_the_tray():
    # gpus_per_node 64 (two EP groups of 32 a domain, as corpus rows state): still trays of 4 GPUs
    document = {
        "model": {"preset": "llama3-70b"},
        "cluster": {"node": "gb200-nvl72", "gpus": 128, "gpus_per_node": 64},
        "training": {
            "seq_len": 8192,
            "global_batch_seqs": 128,
            "layout": {"tp": 8, "pp": 1, "zero_stage": 1},
        },
    }
    assert solvers.solve(document, ranges=False)["reliability"]["nodes"] == 32
