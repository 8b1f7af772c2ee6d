"""The ``search`` section of a scenario document (CONTRACT.md "Search"): objective, top, Pareto metrics, space.

``parse_search_request`` splits a document into the scenario proper and its search options and checks the
options (each error names its field path, e.g. ``search.top: must be an integer from 0 to 100, got 500``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from solvers.errors import FieldError, ScenarioError
from solvers.search.ranking import DEFAULT_PARETO, check_objectives

DEFAULT_TOP = 5
MAX_TOP = 100
SEARCH_KEYS: tuple[str, ...] = ("objective", "top", "pareto", "space", "within_validated")
# Keep only the layouts inside the envelope of validated runs (solvers.search.envelope) unless told otherwise:
# a layout unlike every run the step model was checked against is a guess, not a recommendation.
DEFAULT_WITHIN_VALIDATED = True


@dataclass(frozen=True)
class SearchRequest:
    """A scenario document split into the scenario proper and its ``search`` options."""

    scenario: dict[str, Any]  # the document without ``search``; training.layout as given
    objective: str
    top: int
    pareto: tuple[str, ...]
    space: Mapping[str, Any] | None
    within_validated: bool = DEFAULT_WITHIN_VALIDATED


def parse_search_request(
    document: Any,
    *,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
    within_validated: bool | None = None,
) -> SearchRequest:
    """Split ``document`` into scenario and ``search`` options; keyword arguments override the document."""
    if not isinstance(document, Mapping):
        raise ScenarioError.single(
            "", f"a scenario document must be a mapping, got {type(document).__name__}"
        )
    scenario = {k: v for k, v in document.items() if k not in ("search", "sweep")}
    options = document.get("search")
    options = {} if options is None else options  # null or absent: no options; [] or "" is refused
    if not isinstance(options, Mapping):
        raise ScenarioError.single("search", "must be a mapping")
    errors = [
        FieldError(f"search.{k}", f"unknown key; expected one of {', '.join(SEARCH_KEYS)}")
        for k in options
        if k not in SEARCH_KEYS
    ]
    chosen_objective = objective if objective is not None else options.get("objective", "step_s")
    chosen_top = top if top is not None else options.get("top", DEFAULT_TOP)
    if isinstance(chosen_top, bool) or not isinstance(chosen_top, int) or not 0 <= chosen_top <= MAX_TOP:
        errors.append(FieldError("search.top", f"must be an integer from 0 to {MAX_TOP}, got {chosen_top!r}"))
    chosen_pareto = pareto if pareto is not None else options.get("pareto", list(DEFAULT_PARETO))
    if not isinstance(chosen_pareto, list | tuple) or not all(isinstance(p, str) for p in chosen_pareto):
        errors.append(FieldError("search.pareto", "must be a list of metric names"))
        chosen_pareto = list(DEFAULT_PARETO)
    chosen_within = (
        within_validated
        if within_validated is not None
        else options.get("within_validated", DEFAULT_WITHIN_VALIDATED)
    )
    if not isinstance(chosen_within, bool):
        errors.append(FieldError("search.within_validated", f"must be true or false, got {chosen_within!r}"))
        chosen_within = DEFAULT_WITHIN_VALIDATED
    if not isinstance(chosen_objective, str):
        errors.append(FieldError("search.objective", f"must be a string, got {chosen_objective!r}"))
        chosen_objective = "step_s"
    names: tuple[str, ...] = ()
    try:
        names = check_objectives(objective=chosen_objective, pareto=chosen_pareto)
    except ScenarioError as exc:
        errors.extend(exc.errors)
    if errors:
        raise ScenarioError(errors)
    return SearchRequest(
        scenario=scenario,
        objective=chosen_objective,
        top=int(chosen_top),
        pareto=names,
        space=options.get("space"),
        within_validated=chosen_within,
    )


def with_auto_layout(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``scenario`` with ``training.layout: auto`` (what a search resolves)."""
    out = dict(scenario)
    training = out.get("training")
    if training is not None and not isinstance(training, Mapping):
        return out  # not an object: left for ``resolve`` to refuse, as a solve refuses it
    training = dict(training) if training is not None else {}
    training["layout"] = "auto"
    out["training"] = training
    return out
