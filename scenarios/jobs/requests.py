"""Search and sweep requests: options checked and counted, and the run stored and sent, before anything
runs; a request over the limits or with a broken rule is refused with the field path."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from scenarios import execution, queue, services
from scenarios.models import (
    RUN_KIND_SEARCH,
    RUN_KIND_SWEEP,
    TRIGGER_API,
    TRIGGER_CHOICES,
    Plan,
    Run,
)
from solvers.prices import Pricing

log = logging.getLogger(__name__)


SEARCH_OPTION_KEYS: tuple[str, ...] = ("objective", "top", "pareto", "space", "within_validated")
SWEEP_OPTION_KEYS: tuple[str, ...] = ("axes", "mode", "objective", "pareto", "space", "within_validated")


def sweep_chunk_points() -> int:
    """At most this many points per chunk (``SWEEP_CHUNK_POINTS``) ..."""
    return max(1, int(settings.SWEEP_CHUNK_POINTS))


def sweep_chunk_layouts() -> int:
    """... at most about this many layouts per chunk (about 10 s of engine time at 200,000 layouts/s), so
    a chunk of large searches stays far inside the task time limit (``SWEEP_CHUNK_LAYOUTS``) ..."""
    return max(1, int(settings.SWEEP_CHUNK_LAYOUTS))


def sweep_min_chunks() -> int:
    """... and at least this many chunks when there are enough points, so that two or more workers share a
    small sweep (``SWEEP_MIN_CHUNKS``)."""
    return max(1, int(settings.SWEEP_MIN_CHUNKS))


# --- Validation: request field paths -----------------------------------------------------------------


def _request_path(path: str) -> str:
    """A solver field path as the request names it: ``sweep.axes[0].field`` -> ``axes[0].field``,
    ``search.space.tp`` -> ``space.tp``; paths of the plan's own document stay as they are."""
    for section in ("sweep", "search"):
        if path == section:
            return "__all__"
        if path.startswith(f"{section}."):
            return path[len(section) + 1 :]
    return path or "__all__"


def _refusal(exc: Exception) -> ValidationError:
    """``solvers.ScenarioError`` -> ``ValidationError`` {request field path: [messages]}."""
    errors: dict[str, list[str]] = {}
    for error in getattr(exc, "errors", []):
        errors.setdefault(_request_path(str(error.path)), []).append(str(error.message))
    return ValidationError(errors or {"__all__": [str(exc)]})


def _auto_layout(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document with ``training.layout: auto`` (a search or sweep chooses the layout itself)."""
    out = dict(document)
    training = out.get("training")
    out["training"] = {**(dict(training) if isinstance(training, Mapping) else {}), "layout": "auto"}
    return out


def _layouts_of(document: Mapping[str, Any], space: Any) -> int:
    """Layouts the search of ``document`` over ``space`` would build (``count_layouts``, milliseconds)."""
    from solvers import resolve
    from solvers.search import count_layouts, search_space

    resolved = resolve(_auto_layout(document))
    return int(
        count_layouts(
            model=resolved.model,
            cluster=resolved.cluster,
            training=resolved.training,
            space=search_space(resolved, document, space),
        )
    )


def _job_hash(
    *,
    kind: str,
    document: Mapping[str, Any],
    options: Mapping[str, Any],
    prices_for: Pricing | None = None,
) -> str:
    """The result key of a job: its kind, the canonical hash of the resolved scenario (layout left to the
    search; a sweep's, of the document as written too), its options and, for a sweep (whose document is
    unpriced: each point is priced after its fields are set), the pricing its points use. A search also keys on the plan's own layout: it is
    reported as the baseline (and narrows the space). A sweep keys on the space its points search instead,
    in its options (``_sweep_options``)."""
    from solvers import canonical_hash, resolve

    training = document.get("training")
    given_layout = training.get("layout") if isinstance(training, Mapping) else None
    payload = {
        "kind": kind,
        "scenario": canonical_hash(resolve(_auto_layout(document)).document),
        "layout": given_layout if kind == RUN_KIND_SEARCH else None,
        "options": options,
        "pricing": None if prices_for is None else prices_for.to_json(),
    }
    if kind == RUN_KIND_SWEEP:
        # A sweep's points set fields on the document as written: a swept node re-derives an accelerator the
        # document leaves to its node, not one it states, though both resolve alike. Its key holds both (the
        # layout left to the search, as in the resolved form: what of it narrows the search is in the options).
        payload["written"] = canonical_hash(_auto_layout(document))
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_trigger(trigger: str) -> None:
    if trigger not in {value for value, _ in TRIGGER_CHOICES}:
        raise ValidationError({"trigger": [f"must be one of {', '.join(v for v, _ in TRIGGER_CHOICES)}"]})


def _check_plan(plan: Plan) -> None:
    if plan.archived_at is not None:
        raise ValidationError({"plan": ["the plan is archived"]})


# --- Search ------------------------------------------------------------------------------------------


def search_options(
    *,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
    space: Mapping[str, Any] | None = None,
    within_validated: bool | None = None,
) -> dict[str, Any]:
    """The ``search`` section of a scenario document from the request's options (absent ones left out)."""
    options: dict[str, Any] = {}
    if within_validated is not None:
        options["within_validated"] = within_validated
    if objective is not None:
        options["objective"] = objective
    if top is not None:
        options["top"] = top
    if pareto is not None:
        options["pareto"] = list(pareto)
    if space is not None:
        options["space"] = dict(space)
    return options


def search_check(*, plan: Plan, options: Mapping[str, Any]) -> int:
    """Validate a search of ``plan`` and return the number of layouts it would evaluate at most.

    Raises ``ValidationError`` naming the request field (``objective``, ``pareto[1]``, ``space.tp``, ...)
    for bad options, and ``space`` when the space holds more than ``MAX_LAYOUTS_PER_SEARCH`` layouts or
    none that passes the divisibility, batch and schedule rules."""
    from solvers import ScenarioError
    from solvers.search import MAX_LAYOUTS_PER_SEARCH, parse_search_request

    unknown = sorted(set(options) - set(SEARCH_OPTION_KEYS))
    if unknown:
        raise ValidationError(
            {name: [f"unknown option; expected one of {', '.join(SEARCH_OPTION_KEYS)}"] for name in unknown}
        )
    document = services.plan_document(plan=plan)
    try:
        request = parse_search_request({**document, "search": dict(options)})
        layouts = _layouts_of(request.scenario, request.space)
    except ScenarioError as exc:
        raise _refusal(exc) from None
    if layouts > MAX_LAYOUTS_PER_SEARCH:
        raise ValidationError(
            {
                "space": [
                    f"the search space holds {layouts:,} layouts, more than the limit of "
                    f"{MAX_LAYOUTS_PER_SEARCH:,} per search; list fewer values for some axes of space"
                ]
            }
        )
    if layouts == 0:
        raise ValidationError(
            {"space": ["no layout of the search space passes the divisibility, batch and schedule rules"]}
        )
    return layouts


def search_request(
    *,
    plan: Plan,
    user: services.UserLike,
    objective: str | None = None,
    top: int | None = None,
    pareto: Sequence[str] | None = None,
    space: Mapping[str, Any] | None = None,
    trigger: str = TRIGGER_API,
    within_validated: bool | None = None,
) -> Run:
    """Queue a design-space search of the plan's current inputs (``training.layout`` is searched; the
    plan's own layout is reported as the baseline; ``within_validated`` absent means the solver's default,
    true: only layouts inside the envelope of validated runs). Validated before anything is queued; the run is
    created in the caller's transaction and sent once it commits. ``points_total`` starts as the number of
    layouts the space builds and becomes the number the engine evaluates once the search runs."""
    _check_trigger(trigger)
    _check_plan(plan)
    options = search_options(
        objective=objective, top=top, pareto=pareto, space=space, within_validated=within_validated
    )
    layouts = search_check(plan=plan, options=options)
    return services.run_request(
        plan=plan,
        user=user,
        trigger=trigger,
        kind=RUN_KIND_SEARCH,
        params={"search": options},
        points_total=layouts,
    )


# --- Sweep: request ----------------------------------------------------------------------------------


def sweep_sections(
    *,
    axes: Any,
    mode: str | None = None,
    objective: str | None = None,
    pareto: Sequence[str] | None = None,
    space: Mapping[str, Any] | None = None,
    within_validated: bool | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``sweep`` and ``search`` sections of a sweep document from the request's options."""
    sweep: dict[str, Any] = {"axes": axes}
    if mode is not None:
        sweep["mode"] = mode
    if objective is not None:
        sweep["objective"] = objective
    if pareto is not None:
        sweep["pareto"] = list(pareto)
    search: dict[str, Any] = {} if space is None else {"space": dict(space)}
    if within_validated is not None:
        search["within_validated"] = within_validated
    return sweep, search


def _plan_of(document: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """``solvers.sweep.plan_sweep`` of the plan's document with the run's sweep and search sections."""
    from solvers.sweep import plan_sweep

    return plan_sweep({**document, "sweep": params.get("sweep") or {}, "search": params.get("search") or {}})


def _sweep_options(planned: Any) -> dict[str, Any]:
    """What a sweep's result depends on besides the scenario: the expanded axes, not their spelling, and the
    space its points search as ``solvers.search.search_space`` builds it from the plan's document (the key
    of the scenario has its layout left to the search, but the layout it states still narrows the space:
    a stated FP32 gradient reduction keeps every point's search to FP32)."""
    from solvers import resolve
    from solvers.search import search_space

    scenario = planned.request.scenario
    searched = search_space(resolve(_auto_layout(scenario)), scenario, planned.request.space)
    return {
        "axes": [{"field": a.field, "values": list(a.values)} for a in planned.axes],
        "mode": planned.mode,
        "objective": planned.request.objective,
        "pareto": list(planned.pareto),
        "space": planned.request.space,
        "searched": dataclasses.asdict(searched),
        "within_validated": planned.request.within_validated,
    }


def _sweep_hash(*, document: Mapping[str, Any], planned: Any, prices_for: Pricing) -> str:
    """The result key of a sweep of ``document`` (unpriced) with these options and this pricing."""
    return _job_hash(
        kind=RUN_KIND_SWEEP, document=document, options=_sweep_options(planned), prices_for=prices_for
    )


def _chunk_size(*, points: int, layouts_per_point: int) -> int:
    """Points per chunk: at most ``SWEEP_CHUNK_POINTS``, about ``SWEEP_CHUNK_LAYOUTS`` layouts, and at least
    ``SWEEP_MIN_CHUNKS`` chunks when there are that many points.

    Example: 1,000 points of 74,250 layouts each -> min(20, ceil(1000/16) = 63, 2e6 // 74,250 = 26) = 20
    points per chunk, 50 chunks."""
    by_layouts = sweep_chunk_layouts() // max(1, layouts_per_point)
    return max(1, min(sweep_chunk_points(), math.ceil(points / sweep_min_chunks()), by_layouts))


# The parts of a point a layout count reads (``count_layouts``: the model, the cluster, the training's
# sequence and batch); a point's other fields (tokens, site, economics) never change it.
_LAYOUT_PARTS = ("model.", "cluster.", "training.")


def _layouts_per_point(document: Mapping[str, Any], planned: Any) -> int:
    """The largest layout count of the sweep's points, for sizing its chunks so that none holds more than
    ``SWEEP_CHUNK_LAYOUTS`` layouts; each distinct combination of what a count reads is counted once (a
    millisecond each). Raises ``ValidationError`` naming ``space`` when every point that is a valid scenario
    would search more layouts than one search may (``MAX_LAYOUTS_PER_SEARCH``), as ``/search/`` refuses it:
    such a sweep could only store error rows."""
    from solvers import ScenarioError
    from solvers.search.space import MAX_LAYOUTS_PER_SEARCH
    from solvers.sweep import point_document

    counts: dict[tuple[tuple[str, str], ...], int] = {}
    for point in planned.points:
        key = tuple(
            sorted(
                (field, repr(value))
                for field, value in point.items()
                if field.startswith(_LAYOUT_PARTS) and field != "training.total_tokens"
            )
        )
        if key in counts:
            continue
        try:
            scenario = point_document(planned.request.scenario, point)
            counts[key] = _layouts_of(scenario, planned.request.space)
        except ScenarioError:
            continue  # that point's row will carry its error; it costs no engine time
    if counts and min(counts.values()) > MAX_LAYOUTS_PER_SEARCH:
        raise ValidationError(
            {
                "space": [
                    f"every point's search would build more than {MAX_LAYOUTS_PER_SEARCH:,} layouts (the "
                    f"smallest {min(counts.values()):,}); narrow the space (fewer tp, pp, cp, ep or microbatch "
                    "values)"
                ]
            }
        )
    if counts and max(counts.values()) == 0:
        raise ValidationError(
            {
                "space": [
                    "no point's search space holds a layout that passes the divisibility, batch and schedule "
                    "rules; widen the space"
                ]
            }
        )
    # the two refusals above, mixed: every point either holds no layout or more than a search may build
    if counts and not any(0 < n <= MAX_LAYOUTS_PER_SEARCH for n in counts.values()):
        raise ValidationError(
            {
                "space": [
                    "no point's search space can be searched: each holds either no layout that passes the "
                    f"divisibility, batch and schedule rules or more than {MAX_LAYOUTS_PER_SEARCH:,} layouts; "
                    "change the space"
                ]
            }
        )
    return max(counts.values(), default=1)


# At most this many refused sweep values are listed in a 400 (the rest are counted in the last message), so
# that a thousand bad values do not answer with a thousand errors.
_MAX_VALUE_REFUSALS = 20
# The point check stops once the points break this many rules between them. Each broken rule costs the
# solver some microseconds (an unknown key: a did-you-mean search), so one value of 40,000 unknown keys
# swept against 1,000 other values would keep the request busy for minutes. A sweep of sound values
# never comes near this many (1,000 points with a few row errors each).
_MAX_POINT_ERRORS = 20_000


def _value_picks(planned: Any) -> list[tuple[int, ...]]:
    """For each point, in point order, the index of its value on every axis: ``plan_sweep`` expands the
    points in this same order (``itertools.product`` of the axes, or the i-th value of each for zip)."""
    from itertools import product

    if planned.mode == "zip":
        return [(k,) * len(planned.axes) for k in range(len(planned.points))]
    return list(product(*(range(len(axis.values)) for axis in planned.axes)))


def _point_errors(planned: Any, index: int) -> list[Any]:
    """The rules point ``index`` breaks as a scenario (``solvers.resolve`` with the layout left to the
    search, as ``solvers.sweep.sweep_point`` resolves it): its ``FieldError``s, none when it is valid."""
    from solvers import ScenarioError, resolve
    from solvers.sweep import point_document

    try:
        resolve(_auto_layout(point_document(planned.request.scenario, planned.points[index])))
    except ScenarioError as exc:
        return exc.errors
    return []


def _at_field(errors: Sequence[Any], field: str) -> frozenset[tuple[str, str]]:
    """(path, message) of the errors at ``field`` itself or inside the value it was given."""
    return frozenset(
        (e.path, e.message)
        for e in errors
        if e.path == field or e.path.startswith((f"{field}.", f"{field}["))
    )


def _value_refusal(
    sweep: Mapping[str, Any], planned: Any, axis: int, pick: int, path: str, message: str
) -> tuple[str, str]:
    """(request path, message) of a refused value: ``axes[0].values[1]`` (``.key`` or ``[i]`` appended when
    the rule is about a part of the value), or ``axes[0].range`` for a value that a range produced."""
    field = planned.axes[axis].field
    if "values" in sweep["axes"][axis]:
        return f"axes[{axis}].values[{pick}]{path[len(field) :]}", f"{path}: {message}"
    return f"axes[{axis}].range", f"{path}: {message} (value {pick + 1} of the range)"


def _check_values(*, planned: Any, sweep: Mapping[str, Any]) -> None:
    """Refuse the values that break a rule of their own field at every point they are part of.

    Every point is resolved as a scenario (``_point_errors``; about 0.15 to 0.4 ms each, well under a
    second for ``MAX_SWEEP_POINTS``). An error at the swept field's own path (or inside the value) is the
    value's; the value is refused when it has such an error at every point it appears in, so a rule broken
    only with some values of the other axes (the GPU count against a swept node size) stays a row error.
    A sweep of which no point is a valid scenario is refused naming ``axes``: it could only store errors;
    so is one whose points break more than ``_MAX_POINT_ERRORS`` rules, without checking the rest.
    """
    # (axis, value index) -> the value's own errors at the first point it is part of, emptied as soon as
    # one of its points has none.
    own: dict[tuple[int, int], frozenset[tuple[str, str]]] = {}
    invalid: list[tuple[int, list[Any]]] = []
    broken = 0
    for index, picks in enumerate(_value_picks(planned)):
        errors = _point_errors(planned, index)
        if errors:
            invalid.append((index, errors))
            broken += len(errors)
            if broken > _MAX_POINT_ERRORS:
                raise ValidationError({"axes": [_too_broken(planned, invalid, checked=index + 1)]})
        for axis, pick in enumerate(picks):
            found = _at_field(errors, planned.axes[axis].field)
            if (axis, pick) not in own:
                own[axis, pick] = found
            elif not found:
                own[axis, pick] = frozenset()
    refusals = [
        _value_refusal(sweep, planned, axis, pick, path, message)
        for (axis, pick), found in sorted(own.items())
        for path, message in sorted(found)
    ]
    if refusals:
        errors_out: dict[str, list[str]] = {}
        for path, message in refusals[:_MAX_VALUE_REFUSALS]:
            errors_out.setdefault(path, []).append(message)
        if len(refusals) > _MAX_VALUE_REFUSALS:
            errors_out.setdefault("axes", []).append(
                f"and {len(refusals) - _MAX_VALUE_REFUSALS:,} more refused values not listed"
            )
        raise ValidationError(errors_out)
    if invalid and len(invalid) == len(planned.points):
        raise ValidationError(
            {"axes": [f"no point of the sweep is a valid scenario; {_first_invalid(planned, invalid)}"]}
        )


def _first_invalid(planned: Any, invalid: Sequence[tuple[int, list[Any]]]) -> str:
    """The first invalid point and the first rules it breaks, for a refusal of the whole sweep."""
    index, errors = invalid[0]
    point = ", ".join(f"{field}={value!r}" for field, value in planned.points[index].items())
    return f"point {index} ({point[:200]}) breaks " + "; ".join(str(e)[:300] for e in errors[:3])


def _too_broken(planned: Any, invalid: Sequence[tuple[int, list[Any]]], *, checked: int) -> str:
    return (
        f"the points of the sweep break more than {_MAX_POINT_ERRORS:,} rules between them (checked "
        f"{checked:,} of {len(planned.points):,} points); {_first_invalid(planned, invalid)}"
    )


def sweep_check(*, plan: Plan, sweep: Mapping[str, Any], search: Mapping[str, Any]) -> tuple[int, int]:
    """Validate a sweep of ``plan`` whole, before anything is queued; returns (points, points per chunk).

    Raises ``ValidationError`` naming the request field: ``axes`` when the sweep has more than
    ``MAX_SWEEP_POINTS`` points, ``axes[1].range.step``, ``mode``, ``pareto[0]``, ``space.tp`` ... for
    bad options, and ``axes[0].values[1]`` (or ``axes[0].range``) with the solver's rule for a bad value.

    Every point's scenario is checked by the solver's own validation (``_check_values``). What refuses the
    request and what is a row with an error:

    * refused (400): a value that breaks a rule of its own field at every point it is part of: a wrong
      type, a value out of range, an unknown key inside it, an unknown preset or choice, or a value that
      the plan's other fields rule out whatever the other axes hold (a batch that is not a multiple of the
      plan's sequence length). Such a value could only ever produce failed rows. A sweep of which no point
      is a valid scenario is refused too (``axes``).
    * a row with an error (202): a rule broken only in combination: at some points only (a GPU count that
      is a whole number of nodes for some swept node sizes only), at another field's path (a precision a
      swept accelerator lacks), or by the layout search of a point (a GPU count that no layout of ``space`` divides, a space with no
      valid layout for that point's cluster). Each is that point's answer, and the other points stand.

    Nothing is solved; resolving every point takes well under a second for ``MAX_SWEEP_POINTS`` points."""
    from solvers import ScenarioError, resolve
    from solvers.search import search_space

    # The points are set on the plan's unpriced document, as the worker sets them (each is priced after).
    document = services.plan_base_document(plan=plan)
    try:
        planned = _plan_of(document, {"sweep": sweep, "search": search})
        resolved = resolve(_auto_layout(planned.request.scenario))
        search_space(resolved, planned.request.scenario, planned.request.space)
    except ScenarioError as exc:
        raise _refusal(exc) from None
    _check_values(planned=planned, sweep=sweep)
    points = len(planned.points)
    return points, _chunk_size(points=points, layouts_per_point=_layouts_per_point(document, planned))


def sweep_request(
    *,
    plan: Plan,
    user: services.UserLike,
    axes: Any,
    mode: str | None = None,
    objective: str | None = None,
    pareto: Sequence[str] | None = None,
    space: Mapping[str, Any] | None = None,
    trigger: str = TRIGGER_API,
    within_validated: bool | None = None,
) -> Run:
    """Queue a sweep of the plan: the best layout at every point of ``axes`` and the Pareto front.

    Validated before anything is queued (at most ``solvers.sweep.MAX_SWEEP_POINTS`` points). The run is
    created in the caller's transaction with ``points_total`` = the number of points, and
    ``scenarios.sweep_start`` is sent once it commits."""
    _check_trigger(trigger)
    _check_plan(plan)
    sweep, search = sweep_sections(
        axes=axes,
        mode=mode,
        objective=objective,
        pareto=pareto,
        space=space,
        within_validated=within_validated,
    )
    points, chunk_points = sweep_check(plan=plan, sweep=sweep, search=search)
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.create(
            plan=plan,
            team_id=plan.team_id,
            kind=RUN_KIND_SWEEP,
            trigger=trigger,
            params={"sweep": sweep, "search": search, "chunk_points": chunk_points, "job": {}},
            points_total=points,
            requested_by=services._user(user),
            queued_at=now,
            enqueued_at=now,
        )
        run_id = run.pk
        # No time limit in the message: the worker applies its own. With the broker down the sweep stays
        # queued (enqueued_at NULL) and the sweeper sends it through ``scenarios.execute_run``.
        queue.on_commit(
            lambda: send_start(run_id), on_broker_down=lambda: execution.runs_mark_unsent([run_id])
        )
    return run


def send_start(run_id: int) -> None:
    """Send ``scenarios.sweep_start`` for a stored sweep (by name; the worker applies its time limits)."""
    queue.send(queue.SWEEP_START, [run_id])
