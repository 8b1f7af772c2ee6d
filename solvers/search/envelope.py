"""The validated envelope: how close a layout is to the published runs the step model was checked against.

A layout's features (``layout_features``, vectorised over a ``LayoutBatch``):

  tokens_per_gpu     rows of every GEMM a GPU runs per microbatch: seq_len x microbatch_seqs / cp. Sequence
                     parallelism does not shrink it: Megatron-LM's sequence parallelism all-gathers the
                     sequence before each tensor-parallel GEMM and splits only the LayerNorm and dropout
                     regions (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
                     Transformer Models", §4.2.2), so the GEMM shape is that of the whole CP chunk.
  cp                 context-parallel degree.
  tokens_per_cp_rank with cp > 1 only: seq_len / cp, the sequence chunk each rank of a ring-attention exchange
                     holds. Its range is that of the validated runs that use context parallelism: a run at
                     cp 1 says nothing of the exchange and causal load balance of small chunks.
  layers_per_stage   model layers / pp (a pipeline stage's share, uneven splits averaged).
  layers_per_chunk   model layers / (pp x virtual_stages): what one interleaved model chunk holds.
  tp_across_nodes    tp > GPUs per node: tensor-parallel exchanges cross the scale-out fabric.
  experts_per_gpu    MoE only: experts / ep.
  generation         the accelerator's architecture (Ampere, Hopper, ...), one value for the whole scenario.

The envelope (``Envelope``) holds, per validated run, the same features, written by
``python -m solvers envelope --write`` into ``solvers/catalog/validated_envelope.json`` from the runs of the
validation corpus and the published cases (``solvers.envelope``); nothing in it is typed by hand.
A numeric feature is inside when it lies in [min, max] of the validated runs of the layout's class (dense or
MoE); a categorical one when a validated run of that class has the same value. A layout is within the
envelope when every feature is inside. The file is solver data: regenerating it can move what a search or
``layout: auto`` returns, so a new file is a solver change (``SOLVER_VERSION`` and the CHANGELOG), and every
search names the file it was judged against (``envelope.digest``).

Distances are in octaves (log2 units): a numeric feature's distance is log2(min / value) below the range,
log2(value / max) above it and 0 inside; a categorical feature's is 0 or 1. A layout's distance to a run is
the Euclidean norm over the features of those per-feature distances between the two, and
``nearest_validated`` names the run at the smallest one.

Example: Llama 3 405B on 16,384 H100 at tp 2, cp 16, pp 64 runs 8,192 / 16 = 512 tokens per GPU per
microbatch; when the dense runs go down to 2,048 the feature is 2 octaves outside and the layout carries
"512 tokens per GPU per microbatch; validated dense runs go down to 2,048".
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from solvers.catalog.fitted import family_of
from solvers.specs import BoolArray, ClusterSpec, FloatArray, LayoutBatch, ModelSpec, TrainingSpec

ENVELOPE_FILE = Path(__file__).resolve().parent.parent / "catalog" / "validated_envelope.json"
ENVELOPE_FORMAT = 1

DENSE, MOE = "dense", "moe"
NUMERIC_FEATURES: tuple[str, ...] = (
    "tokens_per_gpu",
    "cp",
    "tokens_per_cp_rank",
    "layers_per_stage",
    "layers_per_chunk",
    "experts_per_gpu",
)
CATEGORICAL_FEATURES: tuple[str, ...] = ("tp_across_nodes", "generation")
FEATURES: tuple[str, ...] = (*NUMERIC_FEATURES, *CATEGORICAL_FEATURES)
_MOE_ONLY = frozenset({"experts_per_gpu"})

# Architecture of an accelerator: a catalog accelerator's architecture (``solvers.catalog.fitted.FAMILY``, the one
# table of it; GB300's calibration family is its own, its architecture Blackwell), else the words of its name (the vendors' own product families, for an accelerator a
# scenario describes itself: NVIDIA A100 is Ampere, H100/H800/H200 are Hopper, B200/GB200 and Blackwell Ultra's
# B300/GB300 are Blackwell; AMD MI300X is CDNA 3). A name that matches none is its own generation, which no
# validated run shares unless one used that accelerator.
_GENERATIONS: tuple[tuple[str, str], ...] = (
    ("A100", "ampere"),
    ("A800", "ampere"),
    ("H100", "hopper"),
    ("H800", "hopper"),
    ("H200", "hopper"),
    ("B200", "blackwell"),
    ("B300", "blackwell"),
    ("MI300", "cdna3"),
)

# How a warning names each feature, and whether its validated range is read as "tokens" or a plain count.
_LABEL = {
    "tokens_per_gpu": "tokens per GPU per microbatch",
    "cp": "context-parallel degree",
    "tokens_per_cp_rank": "tokens per context-parallel rank",
    "layers_per_stage": "layers per pipeline stage",
    "layers_per_chunk": "layers per interleaved model chunk",
    "experts_per_gpu": "experts per GPU",
    "tp_across_nodes": "tensor parallelism across nodes",
    "generation": "accelerator generation",
}


def generation_of(accelerator_name: str) -> str:
    """The architecture of an accelerator from its catalog name. Example: "NVIDIA H100 SXM5 80GB" -> hopper."""
    family = family_of(accelerator_name)
    if family is not None:
        return family
    upper = accelerator_name.upper()
    for word, generation in _GENERATIONS:
        if word in upper:
            return generation
    return accelerator_name.strip().lower()


def model_class(model: ModelSpec) -> str:
    return MOE if model.moe is not None else DENSE


def layout_features(
    *, model: ModelSpec, cluster: ClusterSpec, training: TrainingSpec, layouts: LayoutBatch
) -> dict[str, np.ndarray]:
    """The envelope features of every layout of ``layouts`` (arrays of one length; see the module docstring).

    Example: Llama 3 405B (126 layers), 8,192-token sequences, tp 8, cp 1, pp 16, 8 virtual stages, one
    sequence per microbatch on 8-GPU nodes: tokens_per_gpu 8,192, layers_per_stage 7.875, layers_per_chunk
    0.984, tp_across_nodes False.
    """
    n = len(layouts)
    tokens = training.seq_len * layouts.microbatch_seqs.astype(np.float64) / layouts.cp
    pp = layouts.pp.astype(np.float64)
    out: dict[str, np.ndarray] = {
        "tokens_per_gpu": tokens,
        "cp": layouts.cp.astype(np.float64),
        # NaN where the layout has no context parallelism: the feature does not apply (always inside)
        "tokens_per_cp_rank": np.where(
            layouts.cp > 1, training.seq_len / layouts.cp.astype(np.float64), np.nan
        ),
        "layers_per_stage": model.layers / pp,
        "layers_per_chunk": model.layers / (pp * np.maximum(layouts.virtual_stages, 1)),
        "tp_across_nodes": layouts.tp > cluster.gpus_per_node,
        "generation": np.full(n, generation_of(cluster.accelerator.catalog_ref), dtype=object),
    }
    if model.moe is not None:
        out["experts_per_gpu"] = model.moe.experts / layouts.ep.astype(np.float64)
    return {name: out[name] for name in FEATURES if name in out}


# ---------------------------------------------------------------------------------------------------------
# the envelope
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValidatedRun:
    id: str
    source: str
    model_class: str
    features: Mapping[str, Any]


@dataclass(frozen=True)
class Envelope:
    """The validated runs and their features (``solvers/catalog/validated_envelope.json``)."""

    runs: tuple[ValidatedRun, ...]
    digest: str = ""  # sha256 of the data file's text: which envelope an answer was judged against

    def of_class(self, cls: str) -> tuple[ValidatedRun, ...]:
        return tuple(r for r in self.runs if r.model_class == cls)

    def ranges(self, cls: str) -> dict[str, Any]:
        """Per feature of ``cls``: {min, max, values} (numeric) or {values} (categorical)."""
        runs = self.of_class(cls)
        out: dict[str, Any] = {}
        for name in FEATURES:
            if cls == DENSE and name in _MOE_ONLY:
                continue
            values = [r.features[name] for r in runs if r.features.get(name) is not None]
            if name in NUMERIC_FEATURES:
                floats = sorted({float(v) for v in values})
                out[name] = {"min": floats[0], "max": floats[-1], "values": floats} if floats else {}
            else:
                out[name] = {"values": sorted({v for v in values}, key=str)}
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": ENVELOPE_FORMAT,
            "features": list(FEATURES),
            "ranges": {cls: self.ranges(cls) for cls in (DENSE, MOE)},
            "runs": [
                {"id": r.id, "source": r.source, "class": r.model_class, "features": dict(r.features)}
                for r in self.runs
            ],
        }


def envelope_from_dict(data: Mapping[str, Any], *, digest: str = "") -> Envelope:
    runs = tuple(
        ValidatedRun(
            id=str(r["id"]),
            source=str(r["source"]),
            model_class=str(r["class"]),
            features=dict(r["features"]),
        )
        for r in data.get("runs", [])
    )
    return Envelope(runs=runs, digest=digest)


def load_envelope(path: Path | None = None) -> Envelope:
    """The envelope written by ``python -m solvers envelope --write`` (read on each call: no module cache)."""
    text = (path or ENVELOPE_FILE).read_text(encoding="utf-8")
    return envelope_from_dict(json.loads(text), digest=hashlib.sha256(text.encode("utf-8")).hexdigest())


# ---------------------------------------------------------------------------------------------------------
# judging layouts
# ---------------------------------------------------------------------------------------------------------


def _octaves_outside(values: FloatArray, low: float, high: float) -> FloatArray:
    below = np.log2(np.maximum(low, 1e-300) / np.maximum(values, 1e-300))
    above = np.log2(np.maximum(values, 1e-300) / max(high, 1e-300))
    return np.maximum(np.maximum(below, above), 0.0)


def feature_distances(
    features: Mapping[str, np.ndarray], envelope: Envelope, cls: str
) -> dict[str, FloatArray]:
    """Per feature, each layout's distance (octaves, or 0/1) outside the validated runs of ``cls``; +inf for a
    feature no validated run of the class has (e.g. every feature of a class without runs), except where the
    feature does not apply to the layout (NaN, such as tokens per CP rank at cp 1): 0 there, as with runs.

    Equation: d = max(0, log2(min / x), log2(x / max)) for a numeric feature x; 0 or 1 for a categorical one.
    Example: 512 tokens per GPU against dense runs from 2,048 to 131,072 tokens: log2(2048 / 512) = 2.
    """
    ranges = envelope.ranges(cls)
    out: dict[str, FloatArray] = {}
    for name, values in features.items():
        spec = ranges.get(name) or {}
        if name in NUMERIC_FEATURES:
            floats = values.astype(np.float64)
            if "min" not in spec:  # a layout the feature does not apply to (NaN) is inside, as everywhere
                out[name] = np.where(np.isnan(floats), 0.0, np.inf)
            else:
                out[name] = np.where(
                    np.isnan(floats),
                    0.0,
                    _octaves_outside(np.nan_to_num(floats, nan=1.0), spec["min"], spec["max"]),
                )
        else:
            allowed = spec.get("values", [])
            if not allowed:
                out[name] = np.full(values.shape[0], np.inf)
            else:
                inside = np.isin(values.astype(object), np.array(allowed, dtype=object))
                out[name] = np.where(inside, 0.0, 1.0)
    return out


def inside_mask(
    *,
    model: ModelSpec,
    cluster: ClusterSpec,
    training: TrainingSpec,
    layouts: LayoutBatch,
    envelope: Envelope,
) -> tuple[BoolArray, list[str | None]]:
    """Which layouts lie inside the envelope of their class, and for each one outside the feature that fails
    first (the accelerator generation, then ``FEATURES`` order), for counting rejections by reason."""
    features = layout_features(model=model, cluster=cluster, training=training, layouts=layouts)
    distances = feature_distances(features, envelope, model_class(model))
    inside = np.ones(len(layouts), dtype=np.bool_)
    first: np.ndarray = np.full(len(layouts), None, dtype=object)
    # the scenario's own feature first: when its generation is outside, that is every layout's reason
    for name in ("generation", *(f for f in FEATURES if f != "generation")):
        if name not in distances:
            continue
        out = distances[name] > 0.0
        first = np.where(inside & out, name, first)
        inside &= ~out
    return inside, list(first)


def outside_text(feature: str, cls: str) -> str:
    """What is outside, without numbers: "<feature> outside the validated <cls> runs"."""
    return f"{_LABEL[feature]} outside the validated {cls} runs"


def rejection_reason(feature: str, cls: str) -> str:
    """The rejection key of a layout outside the envelope (no numbers: one key per feature)."""
    return f"search.within_validated: {outside_text(feature, cls)}"


def _fmt(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def _warning(name: str, value: Any, spec: Mapping[str, Any], cls: str, cluster: ClusterSpec) -> str:
    runs = f"validated {cls} runs"
    if name in NUMERIC_FEATURES:
        if "min" not in spec:
            return f"{_fmt(value)} {_LABEL[name]}; no validated {cls} run to compare with"
        prefix = f"cp {_fmt(value)}" if name == "cp" else f"{_fmt(value)} {_LABEL[name]}"
        if value < spec["min"]:
            bound = f"cp {_fmt(spec['min'])}" if name == "cp" else _fmt(spec["min"])
            return f"{prefix}; {runs} go down to {bound}"
        bound = f"cp {_fmt(spec['max'])}" if name == "cp" else _fmt(spec["max"])
        return f"{prefix}; {runs} go up to {bound}"
    allowed = spec.get("values", [])
    if name == "tp_across_nodes":
        if value:
            return (
                f"tensor parallelism across nodes (tp > {cluster.gpus_per_node} GPUs per node); "
                f"no {runs[:-1]} spans nodes with tp"
            )
        return f"tensor parallelism within a node; every {runs[:-1]} spans nodes with tp"
    listed = ", ".join(str(v) for v in allowed) or "none"
    return f"{value} accelerator; no {runs[:-1]} on {value} (validated: {listed})"


def _nearest(value: float, validated: Sequence[float]) -> float | None:
    """The validated value closest to ``value`` in octaves (the smaller one on a tie)."""
    if not validated:
        return None
    return min(validated, key=lambda v: (abs(math.log2(value / v)), v))


def support_blocks(
    *,
    model: ModelSpec,
    cluster: ClusterSpec,
    training: TrainingSpec,
    layouts: LayoutBatch,
    envelope: Envelope,
) -> list[dict[str, Any]]:
    """The ``support`` block of each layout (CONTRACT.md "Support"): ``within_validated``, ``reasons`` (one
    warning per feature outside, naming it and the validated bound), ``nearest_validated`` (a run id),
    ``distance`` (octaves to that run) and ``features`` (per feature: value, validated min/max or values,
    nearest validated value, inside, distance outside, and the reason when outside).

    Equation: distance to run r = sqrt(sum over features of g_f^2), g_f = |log2(x_f / r_f)| for a numeric
    feature (1 when it applies to one side only), 0 or 1 for a categorical one; ``nearest_validated`` is the
    run of the layout's class at the smallest distance. Example: Llama 3 405B's published TP8 CP1 PP16
    layout is itself a validated run: within_validated true, distance 0, no reasons.
    """
    cls = model_class(model)
    features = layout_features(model=model, cluster=cluster, training=training, layouts=layouts)
    outside = feature_distances(features, envelope, cls)
    ranges = envelope.ranges(cls)
    runs = envelope.of_class(cls)
    # distance of every layout to every run of its class: per numeric feature |log2(a / b)|, categorical 0/1
    to_runs = np.zeros((len(layouts), len(runs)))
    for j, run in enumerate(runs):
        for name, values in features.items():
            theirs = run.features.get(name)
            if name in NUMERIC_FEATURES:
                # a feature that applies to one side only (cp 1 against cp > 1) counts one octave
                mine = values.astype(np.float64)
                if theirs is None:
                    to_runs[:, j] += np.where(np.isnan(mine), 0.0, 1.0)
                else:
                    gap = np.log2(np.nan_to_num(mine, nan=1.0) / float(theirs)) ** 2
                    to_runs[:, j] += np.where(np.isnan(mine), 1.0, gap)
            elif theirs is None:
                to_runs[:, j] += 1.0
            else:
                to_runs[:, j] += (values != theirs).astype(np.float64)
    to_runs = np.sqrt(to_runs)
    blocks: list[dict[str, Any]] = []
    for i in range(len(layouts)):
        per: dict[str, Any] = {}
        reasons: list[str] = []
        for name, values in features.items():
            value = values[i].item() if hasattr(values[i], "item") else values[i]
            if isinstance(value, float) and math.isnan(value):
                per[name] = {"value": None, "inside": True, "applies": False}
                continue
            spec = ranges.get(name) or {}
            distance = float(outside[name][i])
            item: dict[str, Any] = {"value": value, "inside": distance == 0.0}
            if name in NUMERIC_FEATURES:
                validated = spec.get("values", [])
                item.update({"min": spec.get("min"), "max": spec.get("max")})
                item["nearest"] = _nearest(float(value), validated)
            else:
                item["validated"] = list(spec.get("values", []))
            item["distance"] = distance if math.isfinite(distance) else None
            per[name] = item
            if distance > 0.0:
                item["reason"] = _warning(name, value, spec, cls, cluster)
                reasons.append(item["reason"])
        block: dict[str, Any] = {
            "within_validated": not reasons,
            "reasons": reasons,
            "class": cls,
            "nearest_validated": None,
            "distance": None,
            "features": per,
        }
        if runs:
            j = int(np.argmin(to_runs[i]))
            block["nearest_validated"] = runs[j].id
            block["distance"] = float(to_runs[i, j])
        else:
            block["reasons"] = [f"no validated {cls} run", *reasons]
            block["within_validated"] = False
        blocks.append(block)
    return blocks


def _plain(value: Any) -> Any:
    """A feature value as JSON holds it: python scalars, None where the feature does not apply."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isnan(value) else value


def features_of_runs(
    rows: Sequence[tuple[str, str, ModelSpec, ClusterSpec, TrainingSpec, LayoutBatch]],
) -> Envelope:
    """An envelope from (run id, source id, model, cluster, training, one-layout batch) rows."""
    runs: list[ValidatedRun] = []
    for run_id, source, model, cluster, training, layouts in rows:
        features = layout_features(model=model, cluster=cluster, training=training, layouts=layouts)
        values = {name: _plain(v[0]) for name, v in features.items()}
        runs.append(ValidatedRun(id=run_id, source=source, model_class=model_class(model), features=values))
    return Envelope(runs=tuple(runs))
