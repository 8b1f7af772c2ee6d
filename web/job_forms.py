"""The forms that start a search or a sweep of a plan from the dashboard.

A form only turns what a person types into the request body the API takes (``POST /plans/{id}/search/``
or ``/sweep/``): comma-separated text becomes a JSON list, each item a number when it reads as one. Every
rule (known objective, 2 or 3 Pareto metrics, the layout space and its limit, the sweep's fields, values
and point limit) is then checked where the API checks it: the API's request serializer for the shape and
``scenarios.search_jobs`` for the rules, so a value refused by the API is refused here with the same field
path and message, and nothing is queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from api.errors import flatten_errors as flatten_api_errors
from api.limits import is_id_text
from api.serializers.search import SearchRequestSerializer, SweepRequestSerializer
from scenarios import search_jobs
from scenarios.models import RUN_KIND_SEARCH, TRIGGER_USER, Plan, Run
from solvers.search import (
    DEFAULT_PARETO,
    DEFAULT_TOP,
    MAX_LAYOUTS_PER_SEARCH,
    MAX_TOP,
    OBJECTIVES,
    PARETO_METRICS,
)
from solvers.sweep import DEFAULT_PARETO_TOTAL, MAX_SWEEP_POINTS, MODES

AXES = 3  # axes the form offers (the API takes up to solvers.sweep.MAX_AXES)

# Names people read for the solver's metric keys (display only: the keys themselves are the solver's).
METRIC_LABELS: dict[str, str] = {
    "step_s": "Step time",
    "usd_per_million_tokens": "Cost per million tokens",
    "total_usd": "TCO",
    "total_kgco2e": "Carbon (tCO2e)",
    "wall_clock_days": "Time to train",
    "facility_kwh": "Facility energy",
    "water_l": "Water",
    "memory_bytes": "Memory per GPU",
}

# Suggestions for a sweep axis's field (a datalist: any scenario field but training.layout may be swept;
# the solver says which paths exist).
SWEEP_FIELD_SUGGESTIONS: tuple[str, ...] = (
    "cluster.gpus",
    "cluster.node",
    "cluster.accelerator",
    "cluster.gpus_per_node",
    "cluster.scale_out.bandwidth_gb_s",
    "cluster.scale_up.bandwidth_gb_s",
    "site.region",
    "site.grid_gco2_per_kwh",
    "site.electricity_usd_per_kwh",
    "training.global_batch_tokens",
    "training.seq_len",
    "training.total_tokens",
    "training.precision",
    "economics.amortization_years",
)

# The layout-space axes the form offers (solvers.search.SPACE_AXES has more; the API takes them all).
SPACE_FIELDS: tuple[tuple[str, str], ...] = (
    ("tp", "Tensor parallel (tp)"),
    ("pp", "Pipeline parallel (pp)"),
    ("cp", "Context parallel (cp)"),
    ("ep", "Expert parallel (ep)"),
    ("microbatch_seqs", "Microbatch (sequences)"),
)


def scalar(token: str) -> Any:
    """One typed item: an integer, a number, true/false, or the text itself (``"64"`` -> 64)."""
    lowered = token.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(token)
        except ValueError:
            continue
    return token


def items(text: str) -> list[Any]:
    """Comma-separated text as a list of typed items; blank items (a trailing comma) are left out."""
    return [scalar(part.strip()) for part in text.split(",") if part.strip()]


def _metric_choices() -> list[tuple[str, str]]:
    return [(name, f"{METRIC_LABELS.get(name, name)} ({name})") for name in PARETO_METRICS]


class JobForm(forms.Form):
    """What a search and a sweep share: the objective, the Pareto metrics and the layout space."""

    objective = forms.CharField(
        required=False,
        widget=forms.Select(choices=[(name, f"{METRIC_LABELS[name]} ({name})") for name in OBJECTIVES]),
        initial=OBJECTIVES[0],
        help_text="What ranks the layouts: the best is the one with the lowest value.",
    )
    pareto = forms.MultipleChoiceField(
        required=False,
        choices=_metric_choices,
        widget=forms.CheckboxSelectMultiple,
        label="Pareto metrics",
    )
    space_field_names = tuple(f"space_{name}" for name, _ in SPACE_FIELDS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        for name, label in SPACE_FIELDS:
            self.fields[f"space_{name}"] = forms.CharField(
                required=False,
                label=f"{label} values",
                help_text="Comma-separated, e.g. 1, 2, 4; blank keeps the default space.",
            )

    def space_bound(self) -> list[forms.BoundField]:
        return [self[name] for name in self.space_field_names]

    def space(self) -> dict[str, Any] | None:
        chosen = {
            name: items(self.cleaned_data.get(f"space_{name}") or "")
            for name, _ in SPACE_FIELDS
            if (self.cleaned_data.get(f"space_{name}") or "").strip()
        }
        return chosen or None

    def common_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.cleaned_data.get("objective"):
            body["objective"] = self.cleaned_data["objective"]
        if self.cleaned_data.get("pareto"):
            body["pareto"] = list(self.cleaned_data["pareto"])
        space = self.space()
        if space is not None:
            body["space"] = space
        return body

    def field_for(self, path: str) -> str | None:
        """The form field a request path belongs to (``space.tp[0]`` -> ``space_tp``), None for the form."""
        head = path.split(".", 1)[0].split("[", 1)[0]
        if head in ("objective", "pareto", "top", "mode") and head in self.fields:
            return head
        if head == "space":
            axis = path[len("space.") :].split(".", 1)[0].split("[", 1)[0]
            name = f"space_{axis}"
            return name if name in self.fields else None
        return None

    def add_refusal(self, errors: Mapping[str, list[str]]) -> None:
        """Show the API's refusal on the form, each message with its request field path."""
        for path, messages in errors.items():
            for message in messages:
                text = message if path in ("", "__all__") else f"{path}: {message}"
                self.add_error(self.field_for(path), text)

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    def start(self, *, plan: Plan, user: Any) -> Run | None:
        """Queue the job through the API's serializer and ``search_jobs``; None (with the errors on the form)
        when it is refused. Nothing is stored when refused."""
        serializer = self.serializer_class(data=self.body())
        if not serializer.is_valid():
            refused: dict[str, list[str]] = {}
            for error in flatten_api_errors(serializer.errors):
                refused.setdefault(error["path"], []).append(error["message"])
            self.add_refusal(refused)
            return None
        try:
            with transaction.atomic():
                return self.request_job(plan=plan, user=user, options=dict(serializer.validated_data))
        except DjangoValidationError as exc:
            self.add_refusal(
                exc.message_dict if hasattr(exc, "error_dict") else {"__all__": list(exc.messages)}
            )
            return None

    serializer_class: type[SearchRequestSerializer] | type[SweepRequestSerializer]

    def request_job(self, *, plan: Plan, user: Any, options: dict[str, Any]) -> Run:
        raise NotImplementedError


class SearchForm(JobForm):
    serializer_class = SearchRequestSerializer
    top = forms.CharField(
        required=False,
        initial=str(DEFAULT_TOP),
        label="Alternatives listed",
        help_text=f"Layouts listed besides the best, 0 to {MAX_TOP}.",
        widget=forms.NumberInput(attrs={"min": 0, "max": MAX_TOP, "step": 1}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pareto"].initial = list(DEFAULT_PARETO)
        self.fields["pareto"].help_text = "Two or three metrics the Pareto front trades off."
        for name in self.space_field_names:
            self.fields[name].help_text += f" At most {MAX_LAYOUTS_PER_SEARCH:,} layouts per search."

    def body(self) -> dict[str, Any]:
        body = self.common_body()
        top = (self.cleaned_data.get("top") or "").strip()
        if top:
            body["top"] = scalar(top)
        return body

    def request_job(self, *, plan: Plan, user: Any, options: dict[str, Any]) -> Run:
        return search_jobs.search_request(plan=plan, user=user, trigger=TRIGGER_USER, **options)


class SweepForm(JobForm):
    serializer_class = SweepRequestSerializer
    mode = forms.CharField(
        required=False,
        widget=forms.Select(
            choices=[
                ("product", "Every combination of the values (product)"),
                ("zip", "The i-th value of every axis together (zip)"),
            ]
        ),
        initial=MODES[0],
        label="Combine the axes",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["objective"].help_text = "How each point picks its best layout (every point is searched)."
        self.fields["pareto"].help_text = (
            "Two or three metrics the front over the points trades off; none checked: "
            f"{', '.join(DEFAULT_PARETO_TOTAL)}."
        )
        for number in range(1, AXES + 1):
            self.fields[f"axis_{number}_field"] = forms.CharField(
                required=False,
                label="Field",
                help_text="A scenario field, e.g. cluster.gpus or site.region.",
                widget=forms.TextInput(attrs={"list": "sweep-fields", "autocomplete": "off"}),
            )
            self.fields[f"axis_{number}_values"] = forms.CharField(
                required=False,
                label="Values",
                help_text=(
                    f"Comma-separated, e.g. 64, 128 or quebec, virginia; at most {MAX_SWEEP_POINTS:,} points."
                ),
            )
        if not self.is_bound:
            self.fields["axis_1_field"].initial = "cluster.gpus"
        self.axis_numbers: list[int] = []

    def axis_rows(self) -> list[tuple[int, forms.BoundField, forms.BoundField]]:
        return [(n, self[f"axis_{n}_field"], self[f"axis_{n}_values"]) for n in range(1, AXES + 1)]

    def body(self) -> dict[str, Any]:
        body = self.common_body()
        axes: list[dict[str, Any]] = []
        self.axis_numbers = []
        for number in range(1, AXES + 1):
            field = (self.cleaned_data.get(f"axis_{number}_field") or "").strip()
            values = self.cleaned_data.get(f"axis_{number}_values") or ""
            if field or values.strip():
                axes.append({"field": field, "values": items(values)})
                self.axis_numbers.append(number)
        body["axes"] = axes
        if self.cleaned_data.get("mode"):
            body["mode"] = self.cleaned_data["mode"]
        return body

    def field_for(self, path: str) -> str | None:
        if path.startswith("axes[") and "]" in path:
            index_text, rest = path[len("axes[") :].split("]", 1)
            if is_id_text(index_text) and int(index_text) < len(self.axis_numbers):
                number = self.axis_numbers[int(index_text)]
                part = "field" if rest.startswith(".field") else "values"
                return f"axis_{number}_{part}"
            return None
        return super().field_for(path)

    def request_job(self, *, plan: Plan, user: Any, options: dict[str, Any]) -> Run:
        return search_jobs.sweep_request(plan=plan, user=user, trigger=TRIGGER_USER, **options)


def form_for(kind: str, data: Any = None) -> SearchForm | SweepForm:
    return SearchForm(data) if kind == RUN_KIND_SEARCH else SweepForm(data)


__all__ = [
    "METRIC_LABELS",
    "SWEEP_FIELD_SUGGESTIONS",
    "SearchForm",
    "SweepForm",
    "form_for",
    "items",
    "scalar",
]
