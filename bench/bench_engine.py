"""Step-engine throughput on one core: layouts per second for a large batch, and the time of a batch of one.

Scenario: Llama 3 405B on 16,384 H100 (catalog presets and calibration), 16M-token batch, 8,192 sequence.
About 100,000 random valid layouts (every layout field drawn at random, invalid draws discarded by the engine's
own rules) are evaluated as one batch; then one layout is evaluated alone many times. Times are the CPU time
of this process (``time.process_time``), so other processes sharing the machine do not inflate them; the
wall-clock rate is printed too.

    .venv/bin/python bench/bench_engine.py [--layouts 100000] [--repeat 5]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from solvers.catalog import MODELS, accelerator_entry, fabric_entry  # noqa: E402
from solvers.engine import check_layouts, evaluate  # noqa: E402
from solvers.specs import (  # noqa: E402
    AcceleratorSpec,
    ClusterSpec,
    LayoutBatch,
    LinkSpec,
    ModelSpec,
    OverlapSpec,
    TrainingSpec,
)


def scenario() -> tuple[ModelSpec, ClusterSpec, TrainingSpec]:
    m = MODELS["llama3-405b"]
    model = ModelSpec(
        name=m["name"],
        layers=m["layers"],
        hidden=m["hidden"],
        ffn_hidden=m["ffn_hidden"],
        heads=m["heads"],
        kv_heads=m["kv_heads"],
        vocab=m["vocab"],
        params=m["params"],
        active_params=m.get("active_params", m["params"]),
        gated_mlp=m["gated_mlp"],
    )
    a = accelerator_entry("h100-sxm")
    acc = AcceleratorSpec(
        name=a["name"],
        peak_tflops=a["peak_tflops"],
        hbm_gb=a["hbm_gb"],
        hbm_tb_s=a["hbm_tb_s"],
        tdp_w=a["tdp_w"],
        unit_price_usd=a["unit_price_usd"],
        embodied_kgco2e=a["embodied_kgco2e"],
        compute_efficiency=a["compute_efficiency"],
    )
    up, out = fabric_entry("nvlink4"), fabric_entry("roce-400g")
    cluster = ClusterSpec(
        accelerator=acc,
        gpus=16384,
        gpus_per_node=8,
        scale_up=LinkSpec(up["bandwidth_gb_s"], up["latency_us"]),
        scale_out=LinkSpec(out["bandwidth_gb_s"], out["latency_us"]),
    )
    training = TrainingSpec(
        seq_len=8192,
        global_batch_tokens=16 * 1024 * 1024,
        precision="bf16",
        optimizer="adam",
        compute_efficiency=acc.compute_efficiency,
        overlap=OverlapSpec(pp=0.9, dp=0.9),
    )
    return model, cluster, training


def random_valid_layouts(
    model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, count: int
) -> LayoutBatch:
    rng = np.random.default_rng(2026)
    draws = 4 * count
    tp = rng.choice([1, 2, 4, 8, 16], draws)
    pp = rng.choice([1, 2, 4, 8, 9, 16, 18, 32, 63], draws)
    cp = rng.choice([1, 2, 4, 8], draws)
    schedule = rng.integers(0, 5, draws)
    batch = LayoutBatch(
        tp=tp,
        pp=pp,
        cp=cp,
        ep=np.ones(draws, dtype=np.int64),
        dp=np.maximum(cluster.gpus // (tp * pp * cp), 1),
        microbatch_seqs=rng.choice([1, 2, 4], draws),
        schedule=schedule,
        virtual_stages=np.where(schedule == 2, rng.choice([1, 2, 4], draws), 1),
        sequence_parallel=rng.random(draws) < 0.5,
        zero_stage=rng.integers(0, 4, draws),
        fsdp_reshard_after_forward=rng.random(draws) < 0.5,
        expert_tp=tp,
        recompute=rng.integers(0, 3, draws),
        grad_reduce_fp32=rng.random(draws) < 0.5,
    )
    ok, _ = check_layouts(model=model, cluster=cluster, training=training, layouts=batch)
    index = np.flatnonzero(ok)
    index = np.resize(index, count)  # repeat valid layouts if fewer than ``count`` were drawn
    return LayoutBatch(**{name: getattr(batch, name)[index] for name in LayoutBatch.__dataclass_fields__})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model, cluster, training = scenario()
    layouts = random_valid_layouts(model, cluster, training, args.layouts)
    distinct = len(
        {
            tuple(
                int(getattr(layouts, f)[i])
                for f in (
                    "tp",
                    "pp",
                    "cp",
                    "microbatch_seqs",
                    "schedule",
                    "virtual_stages",
                    "zero_stage",
                    "recompute",
                )
            )
            for i in range(min(len(layouts), 20000))
        }
    )
    evaluate(model=model, cluster=cluster, training=training, layouts=layouts)  # warm up
    batch_s = []
    wall_s = []
    for _ in range(args.repeat):
        start, wall = time.process_time(), time.perf_counter()
        evaluate(model=model, cluster=cluster, training=training, layouts=layouts)
        batch_s.append(time.process_time() - start)
        wall_s.append(time.perf_counter() - wall)
    best = min(batch_s)
    single = LayoutBatch(**{name: getattr(layouts, name)[:1] for name in LayoutBatch.__dataclass_fields__})
    times = []
    for _ in range(5):
        n = 2000
        start = time.process_time()
        for _ in range(n):
            evaluate(model=model, cluster=cluster, training=training, layouts=single)
        times.append((time.process_time() - start) / n)
    start = time.process_time()
    for _ in range(2000):
        check_layouts(model=model, cluster=cluster, training=training, layouts=single)
    check = (time.process_time() - start) / 2000
    print(f"scenario: Llama 3 405B, 16,384 H100, 16M-token batch, s = 8,192 ({distinct:,}+ distinct layouts)")
    print(
        f"batch of {len(layouts):,}: best {best * 1e3:.1f} ms, median {statistics.median(batch_s) * 1e3:.1f} ms "
        f"-> {len(layouts) / best:,.0f} layouts/s on one core (wall clock: {len(layouts) / min(wall_s):,.0f}/s)"
    )
    print(
        f"batch of one: evaluate median {statistics.median(times) * 1e6:.1f} us, check_layouts {check * 1e6:.1f} us"
    )


if __name__ == "__main__":
    main()
