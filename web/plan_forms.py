"""Forms of the plans pages: the list's filters, a new plan from the catalog's presets or from a file.

Both ways of creating a plan end in one workflow (``create_plan``): a whole scenario document is checked by
the solver (every broken rule at once, each with its field path), then split into a cluster, a model and a
site scenario and a plan through ``scenarios.services``, in one transaction, so a refusal stores nothing.
The rules themselves live in the solver and the services; these forms only parse what a browser sends and
put each refusal next to the field it names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction

from scenarios.models import STATUS_CHOICES, Plan, Team

# --- The catalog's presets ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def catalog() -> dict[str, Any]:
    """The solver's presets (constant for a solver build, so read once per process)."""
    from solvers import catalog_document

    return catalog_document()


def _choices(kind: str, label: Any) -> list[tuple[str, str]]:
    return [(key, label(key, entry)) for key, entry in catalog()[kind].items()]


def model_choices() -> list[tuple[str, str]]:
    return _choices("models", lambda key, entry: f"{entry.get('name', key)} ({key})")


def node_choices() -> list[tuple[str, str]]:
    def label(key: str, entry: Mapping[str, Any]) -> str:
        per_node = entry.get("gpus_per_node")
        return f"{entry.get('name', key)} ({per_node} × {entry.get('accelerator', '?')} per node)"

    return _choices("nodes", label)


def region_choices() -> list[tuple[str, str]]:
    return _choices("regions", lambda key, entry: f"{entry.get('name', key)} ({key})")


# The default choice solves and fits: Llama 3 8B on 8 DGX H100 nodes in Quebec (tests/web pin it).
PRESET_DEFAULTS: dict[str, Any] = {
    "model": "llama3-8b",
    "node": "dgx-h100",
    "gpus": 64,
    "region": "quebec",
    "total_tokens": 1.0e12,
    "seq_len": 8192,
    "global_batch_tokens": 4_194_304,
}

# Which form field a refusal's path belongs to (the longest matching prefix wins); anything else is listed
# above the form with its path.
PRESET_FIELD_OF_PATH: dict[str, str] = {
    "name": "name",
    "model": "model",
    "cluster.gpus": "gpus",
    "cluster": "node",
    "site": "region",
    "training.total_tokens": "total_tokens",
    "training.seq_len": "seq_len",
    "training.global_batch_tokens": "global_batch_tokens",
    "training.layout.tp": "tp",
    "training.layout.pp": "pp",
    "training.layout.cp": "cp",
}
LAYOUT_AXES = ("tp", "pp", "cp")


def field_of(path: str, table: Mapping[str, str]) -> str | None:
    """The form field for an error path: ``cluster.gpus`` -> ``gpus``, ``cluster.node`` -> ``node``."""
    best: str | None = None
    for prefix in table:
        if (path == prefix or path.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return None if best is None else table[best]


def refusals(exc: Exception) -> list[dict[str, str]] | None:
    """A refusal of the layers below as ``[{"path", "message"}]``, through the API's one mapping of them
    (``api.errors``), so that a page and the API word a refusal the same way; None for other errors."""
    from api.errors import exception_handler

    response = exception_handler(exc, {})
    if response is None or response.status_code != 400:
        return None
    errors = response.data.get("errors") if isinstance(response.data, dict) else None
    return list(errors) if errors else [{"path": "", "message": str(exc)}]


def error_text(error: Mapping[str, str]) -> str:
    return f"{error['path']}: {error['message']}" if error.get("path") else str(error["message"])


# --- Creating a plan from a whole scenario document ---------------------------------------------------


class Refused(Exception):
    """The document or the services refused the plan; ``errors`` lists each rule with its field path."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__("; ".join(error_text(e) for e in errors))
        self.errors = errors


SCENARIO_PARTS = ("cluster", "model", "site")
# Scenario names are "<plan name> <part>" and hold 200 characters, so a plan name holds this many.
MAX_PLAN_NAME = 200 - len(" cluster")


def create_plan(*, team: Team, user: Any, name: str, document: Mapping[str, Any]) -> Plan:
    """Three scenarios named after the plan ("<name> cluster", ...) and the plan, in one transaction.

    The solver reads the whole document first (``solvers.resolve``: unknown fields, bad numbers, a layout
    that does not divide the cluster, all at once); the services then apply their own rules (live names,
    the priced document). Raises ``Refused``; nothing is stored then."""
    from scenarios import services
    from solvers import resolve

    if len(name) > MAX_PLAN_NAME:
        raise Refused(
            [
                {
                    "path": "name",
                    "message": f"at most {MAX_PLAN_NAME} characters (its scenarios are named after it)",
                }
            ]
        )
    try:
        # every error of the document at once, before anything is stored; ``plan_create`` then refuses what no
        # solve would accept (an engine layout rule, ``layout: auto`` with nothing that fits)
        resolve(dict(document), step=False)
        with transaction.atomic():
            parts = {
                part: services.scenario_create(
                    kind=part, team=team, name=f"{name} {part}", document=document.get(part) or {}, user=user
                )
                for part in SCENARIO_PARTS
            }
            return services.plan_create(
                team=team,
                user=user,
                name=name,
                description=str(document.get("description") or ""),
                training=document.get("training") or {},
                economics=document.get("economics") or {},
                **parts,
            )
    except Exception as exc:
        errors = refusals(exc)
        if errors is None:
            raise
        raise Refused(errors) from None


# --- New plan from the presets ------------------------------------------------------------------------


class PresetPlanForm(forms.Form):
    """A plan from the catalog: model, node type and GPU count, region, and the run's size."""

    name = forms.CharField(label="Name", max_length=MAX_PLAN_NAME)
    model = forms.ChoiceField(label="Model", choices=model_choices)
    node = forms.ChoiceField(label="Node", choices=node_choices)
    gpus = forms.IntegerField(label="GPUs", help_text="Total GPUs of the cluster (whole nodes).")
    region = forms.ChoiceField(label="Region", choices=region_choices)
    total_tokens = forms.FloatField(label="Tokens to train", help_text="For example 1e12.")
    seq_len = forms.IntegerField(label="Sequence length", help_text="Tokens per sequence.")
    global_batch_tokens = forms.IntegerField(label="Global batch (tokens)", help_text="Tokens per step.")
    tp = forms.IntegerField(label="Tensor parallel (tp)", required=False)
    pp = forms.IntegerField(label="Pipeline parallel (pp)", required=False)
    cp = forms.IntegerField(label="Context parallel (cp)", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("initial", dict(PRESET_DEFAULTS))
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def document(self) -> dict[str, Any]:
        """The scenario document these choices make (CONTRACT.md); blank layout axes are the solver's."""
        data = self.cleaned_data
        training: dict[str, Any] = {
            "total_tokens": data["total_tokens"],
            "seq_len": data["seq_len"],
            "global_batch_tokens": data["global_batch_tokens"],
        }
        layout = {axis: data[axis] for axis in LAYOUT_AXES if data.get(axis) is not None}
        if layout:
            training["layout"] = layout
        return {
            "model": {"preset": data["model"]},
            "cluster": {"node": data["node"], "gpus": data["gpus"]},
            "site": {"region": data["region"]},
            "training": training,
        }

    def create(self, *, team: Team, user: Any) -> Plan | None:
        """The new plan, or None with each refusal added to the field it names."""
        try:
            return create_plan(team=team, user=user, name=self.cleaned_data["name"], document=self.document())
        except Refused as refused:
            for error in refused.errors:
                self.add_error(field_of(error["path"], PRESET_FIELD_OF_PATH), error_text(error))
            return None


# --- New plan from a file -----------------------------------------------------------------------------


class UploadPlanForm(forms.Form):
    """A plan from a whole scenario document, as the files of ``examples/`` hold."""

    name = forms.CharField(
        label="Name",
        max_length=MAX_PLAN_NAME,
        required=False,
        help_text="Blank: the file's own name field.",
    )
    file = forms.FileField(label="Scenario file (YAML or JSON)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "upload")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.problems: list[str] = []

    def _refuse(self, errors: list[dict[str, str]]) -> None:
        self.problems = [error_text(error) for error in errors]
        self.add_error("file", "The file was refused; each problem is listed with its field path.")

    def parsed(self) -> dict[str, Any] | None:
        """The file's document (JSON or YAML), checked as strictly as an API body; None when refused."""
        from api.limits import MAX_BODY_BYTES
        from api.parsers import loads_strict
        from solvers.cli import InputError, parse_text

        upload = self.cleaned_data["file"]
        if upload.size > MAX_BODY_BYTES:
            self._refuse([{"path": "file", "message": f"larger than the limit of {MAX_BODY_BYTES} bytes"}])
            return None
        try:
            text = upload.read().decode("utf-8-sig")
            document = parse_text(text)
        except UnicodeDecodeError:
            self._refuse([{"path": "file", "message": "not UTF-8 text"}])
            return None
        except InputError as exc:
            self._refuse([{"path": "file", "message": str(exc)}])
            return None
        if not isinstance(document, dict):
            self._refuse([{"path": "file", "message": "must hold a scenario document (a mapping of parts)"}])
            return None
        try:
            # YAML may hold what JSON refuses (.nan, .inf, dates): the API's strict reading names the path.
            checked = loads_strict(json.dumps(document, default=str, allow_nan=True))
        except Exception as exc:
            self._refuse(refusals(exc) or [{"path": "file", "message": str(exc)}])
            return None
        return checked if isinstance(checked, dict) else None

    def create(self, *, team: Team, user: Any) -> Plan | None:
        document = self.parsed()
        if document is None:
            return None
        name = self.cleaned_data.get("name") or document.get("name")
        if not isinstance(name, str) or not name.strip():
            self.add_error("name", "name: required (the file has no name field)")
            return None
        try:
            return create_plan(team=team, user=user, name=name.strip(), document=document)
        except Refused as refused:
            self._refuse(refused.errors)
            return None


# --- The list's filters, search and sort --------------------------------------------------------------

NO_RUN = "none"
RUN_STATUS_CHOICES = [("", "any"), *STATUS_CHOICES, (NO_RUN, "never run")]
YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


@dataclass(frozen=True)
class SortKey:
    label: str
    field: str


# The figure columns a list sorts by: {parameter value: (column heading, ordering field)}.
SORT_KEYS: dict[str, SortKey] = {
    "name": SortKey("Name", "name"),
    "step_s": SortKey("Step time", "latest_result__step_s"),
    "mfu": SortKey("MFU", "latest_result__mfu"),
    "wall_clock_days": SortKey("Days", "latest_result__wall_clock_days"),
    "total_usd": SortKey("TCO", "latest_result__total_usd"),
    "usd_per_million_tokens": SortKey("$ per million tokens", "latest_result__usd_per_million_tokens"),
    "total_kgco2e": SortKey("tCO2e", "latest_result__total_kgco2e"),
}


class PlanListForm(forms.Form):
    """The list's GET parameters; a value it does not know is a 400 naming the parameter."""

    q = forms.CharField(label="Search names", required=False, max_length=200)
    status = forms.ChoiceField(label="Run status", choices=RUN_STATUS_CHOICES, required=False)
    fits = forms.ChoiceField(label="Fits in memory", choices=YES_NO, required=False)
    current = forms.ChoiceField(label="Result current", choices=YES_NO, required=False)
    sort = forms.CharField(label="Sort by", required=False, max_length=64)
    page = forms.IntegerField(label="Page", required=False, min_value=1)

    def clean_sort(self) -> str:
        value: str = self.cleaned_data.get("sort") or "name"
        if value.removeprefix("-") not in SORT_KEYS:
            keys = ", ".join(SORT_KEYS)
            raise ValidationError(
                f"unknown sort key {value!r}; use one of {keys} (prefix '-' for descending)"
            )
        return value
