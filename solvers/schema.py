"""Names published under ``solvers.schema`` before the scenario reader became ``solvers.inputs``.

Kept so that existing imports (and the assumption sources that cite ``solvers.schema.transformer_params``)
stay valid; new code imports from ``solvers.inputs``. Everything here is derived from the field table.
"""

from __future__ import annotations

from solvers.inputs.fields import (
    FIELD_LIMITS,
    MAX_GPUS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    PARTS,
    SCHEMA_VERSION,
    TABLE,
)
from solvers.inputs.json_schema import scenario_json_schema
from solvers.inputs.layout import layout_batch, layout_from_batch
from solvers.inputs.model import DEFAULT_MODEL_PRESET, transformer_params
from solvers.inputs.scenario import TOP_KEYS, Resolved, resolve, validate_part
from solvers.inputs.training import DEFAULT_BATCH_TOKENS, DEFAULT_SEQ_LEN

# The keys each object of the document accepts, in document order.
MODEL_KEYS: tuple[str, ...] = TABLE.keys("model")
ACCELERATOR_KEYS: tuple[str, ...] = TABLE.keys("cluster.accelerator")
LINK_KEYS: tuple[str, ...] = TABLE.keys("cluster.scale_up")
CLUSTER_KEYS: tuple[str, ...] = TABLE.keys("cluster")
SITE_KEYS: tuple[str, ...] = TABLE.keys("site")
TRAINING_KEYS: tuple[str, ...] = TABLE.keys("training")
LAYOUT_KEYS: tuple[str, ...] = TABLE.keys("training.layout")
ECONOMICS_KEYS: tuple[str, ...] = TABLE.keys("economics")

__all__ = [
    "ACCELERATOR_KEYS",
    "CLUSTER_KEYS",
    "DEFAULT_BATCH_TOKENS",
    "DEFAULT_MODEL_PRESET",
    "DEFAULT_SEQ_LEN",
    "ECONOMICS_KEYS",
    "FIELD_LIMITS",
    "LAYOUT_KEYS",
    "LINK_KEYS",
    "MAX_GPUS",
    "MAX_HIDDEN",
    "MAX_LAYERS",
    "MAX_SEQ_LEN",
    "MODEL_KEYS",
    "PARTS",
    "SCHEMA_VERSION",
    "SITE_KEYS",
    "TOP_KEYS",
    "TRAINING_KEYS",
    "Resolved",
    "layout_batch",
    "layout_from_batch",
    "resolve",
    "scenario_json_schema",
    "transformer_params",
    "validate_part",
]
