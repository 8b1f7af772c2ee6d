"""A search space whose schedules list interleaved first: pp 1 layouts (where the schedule does not matter)
are kept with a schedule the engine accepts, as they are when 1f1b is listed first."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.inputs import resolve
from solvers.search import default_space, enumerate_layouts, space_from_document

SMALL: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
    "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "layout": "auto"},
}


def _pp1_layouts(schedules: list[str]) -> int:
    resolved = resolve(SMALL)
    model, cluster, training = resolved.model, resolved.cluster, resolved.training
    default = default_space(model=model, cluster=cluster, training=training)
    space = space_from_document({"schedule": schedules, "pp": [1, 2]}, default=default)
    layouts = enumerate_layouts(model=model, cluster=cluster, training=training, space=space).layouts
    return int(np.count_nonzero(layouts.pp == 1))


def test_pp1_layouts_do_not_depend_on_the_order_of_the_schedules() -> None:
    """With schedule [1f1b, interleaved] pp 1 layouts are built; listing the same two schedules the other
    way round must not drop every pp 1 layout (the best layout of a small model is often pp 1)."""
    first_1f1b = _pp1_layouts(["1f1b", "interleaved"])
    assert first_1f1b > 0
    assert _pp1_layouts(["interleaved", "1f1b"]) == first_1f1b
