"""Search and sweep requests: the options of a design-space search or a sweep of a plan.

The serializers check the shape (known keys, JSON types); the rules themselves (objectives, Pareto metrics,
axes, ranges, the layout space, the documented limits, and every sweep point's scenario) are the solver's,
applied by ``scenarios.search_jobs`` before anything is queued, and a broken rule is a 400 naming its field
path (``axes[1].range.step``, ``axes[0].values[2]``, ``pareto[0]``, ``space.tp[2]``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework import serializers

from api.serializers.fields import JSONObjectField
from solvers.search import MAX_LAYOUTS_PER_SEARCH, MAX_TOP, OBJECTIVES, PARETO_METRICS
from solvers.sweep import MAX_AXES, MAX_SWEEP_POINTS, MAX_VALUES_PER_AXIS

_OBJECTIVES = ", ".join(OBJECTIVES)
_METRICS = ", ".join(PARETO_METRICS)
_SPACE_HELP = (
    "Narrow the layout space, axis by axis: {tp: [..], cp: [..], pp: [..], ep: [..], microbatch_seqs: [..], "
    "schedule: [..], virtual_stages: [..], sequence_parallel: [..], zero_stage: [..], recompute: [..], "
    "grad_reduce_dtype: [..]}; axes left out keep the default space."
)


class StringField(serializers.CharField):
    """A JSON string. DRF's ``CharField`` turns a number into its text, so ``"objective": 5`` would be
    refused for a value ('5') that the client never sent."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class MetricsField(serializers.JSONField):
    """A JSON list of metric names; a string would otherwise be taken for the list of its characters."""

    default_error_messages: ClassVar[dict[str, Any]] = {"not_list": "must be a list of metric names"}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, list):
            self.fail("not_list")
        return super().to_internal_value(data)


class StrictKeysSerializer(serializers.Serializer):
    """Refuses keys it does not declare, each named as its own field path."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        initial = self.initial_data if isinstance(self.initial_data, dict) else {}
        unknown = sorted(set(initial) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: [f"unknown option; expected one of {', '.join(self.fields)}"] for name in unknown}
            )
        return attrs


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false. DRF's ``BooleanField`` also takes "yes", "1" and 0, which a client never
    means as a switch of the search."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class SearchRequestSerializer(StrictKeysSerializer):
    objective = StringField(
        required=False, help_text=f"What ranks the layouts: one of {_OBJECTIVES} (default step_s)."
    )
    top = serializers.JSONField(
        required=False, help_text=f"Alternatives listed besides the best, 0 to {MAX_TOP} (default 5)."
    )
    pareto = MetricsField(
        required=False,
        help_text=f"2 or 3 metrics of the Pareto front, from {_METRICS} "
        "(default step_s, usd_per_million_tokens, total_kgco2e).",
    )
    space = JSONObjectField(
        required=False,
        help_text=f"{_SPACE_HELP} At most {MAX_LAYOUTS_PER_SEARCH:,} layouts per search.",
    )
    within_validated = StrictBooleanField(
        required=False,
        help_text="Keep only the layouts inside the envelope of validated runs (default true): per-GPU tokens "
        "per microbatch, cp, tokens per CP rank, layers per pipeline stage and per interleaved chunk, tensor "
        "parallelism across nodes, experts per GPU and the accelerator generation each within what the "
        "published runs of the model's class (dense or MoE) cover. Every returned layout carries support "
        "{within_validated, reasons, nearest_validated, distance, features}; false ranks every layout, and "
        "those outside carry the reason in support.reasons.",
    )


class SweepRequestSerializer(StrictKeysSerializer):
    axes = serializers.JSONField(
        help_text=(
            "The fields to vary: a list of {field: 'cluster.gpus', values: [...]} or {field, range: {start, "
            "stop, step} | {start, stop, factor}}; any scenario field except training.layout. At most "
            f"{MAX_AXES} axes, {MAX_VALUES_PER_AXIS:,} values per axis and {MAX_SWEEP_POINTS:,} points. "
            "Every point's scenario is validated before the sweep is queued: a value that breaks a rule of "
            "its own field wherever it appears (wrong type, out of range, unknown key or preset) is a 400 "
            "naming axes[i].values[j] (or axes[i].range) and the rule; a point that breaks a rule only in "
            "combination with other values becomes a row with its error."
        )
    )
    mode = StringField(
        required=False,
        help_text="product (every combination, default) or zip (the i-th value of every axis).",
    )
    objective = StringField(
        required=False, help_text=f"How each point picks its best layout: one of {_OBJECTIVES}."
    )
    pareto = MetricsField(
        required=False, help_text=f"2 or 3 metrics of the Pareto front over the points, from {_METRICS}."
    )
    space = JSONObjectField(required=False, help_text=f"{_SPACE_HELP} Applies to every point.")
    within_validated = StrictBooleanField(
        required=False,
        help_text="Each point picks its best layout among those inside the envelope of validated runs "
        "(default true, as a search); a point with none inside becomes a row with its error.",
    )


class JobAcceptedSerializer(serializers.Serializer):
    run = serializers.IntegerField(help_text="Id of the queued run.")
    kind = serializers.CharField(help_text="search or sweep.")
    status = serializers.CharField()
    points_total = serializers.IntegerField(
        help_text="Layouts (search) or points (sweep) to evaluate; the run counts points_done up to it."
    )
    url = serializers.URLField(
        help_text="Poll this URL for progress (points_done / points_total) and the result."
    )
