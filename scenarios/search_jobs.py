"""Search and sweep jobs: a design-space search or a sweep of a plan, run as a Run with progress, stored as a
versioned Result like a solve.

Search (``kind="search"``): one task. ``search_request`` checks the options and counts the layouts of the
search space (milliseconds, ``solvers.search.count_layouts``) and refuses a space over
``MAX_LAYOUTS_PER_SEARCH`` before anything is queued; the run then goes through the same path as a solve
(``services.run_request`` -> ``scenarios.execute_run`` -> ``execution.runs_execute``) with the search
executor registered below, which reports layouts evaluated / layouts to evaluate on the Run row while the
engine works.

Sweep (``kind="sweep"``): ``sweep_request`` expands the points (refusing more than ``MAX_SWEEP_POINTS``
before anything is queued) and queues ``scenarios.sweep_start``, which claims the run like a solve (attempt
cap, lease), freezes the plan's priced inputs in ``Run.params["job"]`` and sends one ``scenarios.sweep_chunk``
task per chunk of points as a Celery group, so every worker process on the queue takes chunks. Each chunk:

* is claimed under the run's row lock, with an attempt count per chunk (a chunk whose worker is lost
  ``max_attempts`` times fails the run, as a solve would);
* solves its points (``solvers.sweep.sweep_point``) and records their rows with ONE conditional UPDATE
  (run running, same frozen inputs, chunk not yet recorded): ``points_done = points_done + n`` and the rows
  under ``params.job.chunks.<k>``, so a chunk delivered twice is counted once;
* then checks whether every chunk is recorded and, if so, runs the final aggregation (``sweep_finish``):
  rows in point order, the Pareto front, the best point, stored with ``execution.results_store``. The
  aggregation is safe to run twice or concurrently: the result is unique on (plan, input hash) and the run
  is marked succeeded only while it is running. Once stored, the rows are dropped from the run row (the
  result holds them), so reading runs does not carry them along.

A sweep that the sweeper re-sends (its message was lost, or its lease expired while chunks queued behind
other work) arrives through ``scenarios.execute_run``; the sweep executor registered below then finishes it
in that worker, keeping the chunks already recorded.

The result's ``input_hash`` hashes the job kind, the resolved scenario and the options, so a search or a
sweep of a plan never collides with the plan's solve result, and repeating an unchanged job returns the
stored result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celery import group, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from scenarios import adapters, conf, execution, pricing, queue, services
from scenarios.models import (
    RUN_KIND_SEARCH,
    RUN_KIND_SWEEP,
    STATUS_FAILED,
    STATUS_RUNNING,
    STATUS_SUCCEEDED,
    TRIGGER_API,
    TRIGGER_CHOICES,
    ClusterRevision,
    ModelRevision,
    Plan,
    Run,
    SiteRevision,
    SweepChunk,
)
from scenarios.tasks import RETRY_OPTIONS, _claim, _time_limit_error
from solvers.prices import Pricing

log = logging.getLogger(__name__)

SEARCH_OPTION_KEYS: tuple[str, ...] = ("objective", "top", "pareto", "space")
SWEEP_OPTION_KEYS: tuple[str, ...] = ("axes", "mode", "objective", "pareto", "space")

# How often a search writes its progress to the Run row.
SEARCH_PROGRESS_PERIOD_S = 0.2

CHUNK_GONE = "gone"  # the run no longer exists (deleted with its plan)
CHUNK_FINISHED = "finished"  # the run is done (succeeded or failed) or not running
CHUNK_STALE = "stale"  # the run's inputs were frozen again since this chunk was sent
CHUNK_DONE = "done"  # the chunk's rows are recorded already
CHUNK_GO = "go"  # this delivery solves the chunk
CHUNK_CAPPED = "capped"  # the chunk lost its worker too often: the run failed


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
    from solvers.search import count_layouts, default_space, space_from_document

    resolved = resolve(_auto_layout(document))
    model, cluster, training = resolved.model, resolved.cluster, resolved.training
    default = default_space(model=model, cluster=cluster, training=training)
    return int(
        count_layouts(
            model=model, cluster=cluster, training=training, space=space_from_document(space, default=default)
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
    search), its options and, for a sweep (whose document is unpriced: each point is priced after its
    fields are set), the pricing its points use. A search also keys on the plan's own layout: it is
    reported as the baseline."""
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
) -> dict[str, Any]:
    """The ``search`` section of a scenario document from the request's options (absent ones left out)."""
    options: dict[str, Any] = {}
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
) -> Run:
    """Queue a design-space search of the plan's current inputs (``training.layout`` is searched; the
    plan's own layout is reported as the baseline). Validated before anything is queued; the run is
    created in the caller's transaction and sent once it commits. ``points_total`` starts as the number of
    layouts the space builds and becomes the number the engine evaluates once the search runs."""
    _check_trigger(trigger)
    _check_plan(plan)
    options = search_options(objective=objective, top=top, pareto=pareto, space=space)
    layouts = search_check(plan=plan, options=options)
    return services.run_request(
        plan=plan,
        user=user,
        trigger=trigger,
        kind=RUN_KIND_SEARCH,
        params={"search": options},
        points_total=layouts,
    )


class _SearchProgress:
    """The search's progress callback: layouts evaluated / to evaluate on the Run row, at most every
    ``SEARCH_PROGRESS_PERIOD_S`` (and always the last step), with the claim's conditional UPDATE."""

    def __init__(self, *, run_id: int, claim: execution.Claim) -> None:
        self.run_id = run_id
        self.claim = claim
        self.last_s: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and self.last_s is not None and now - self.last_s < SEARCH_PROGRESS_PERIOD_S:
            return
        self.last_s = now
        execution.run_progress(run_id=self.run_id, claim=self.claim, points_done=done, points_total=total)


def _search_executor(inputs: services.PlanInputs, run: Run, claim: execution.Claim) -> dict[str, Any]:
    """Executor of ``kind="search"`` runs (``execution.EXECUTORS``): the search document of the plan's
    inputs, keyed by ``_job_hash`` so that it is stored apart from the plan's solve result."""
    from solvers import SOLVER_VERSION
    from solvers.search import search_document

    document = inputs.document
    options = dict((run.params or {}).get("search") or {})
    out = search_document(
        {**document, "search": options}, progress=_SearchProgress(run_id=run.pk, claim=claim)
    )
    out["schema_version"] = adapters.SCHEMA_VERSION
    out["solver_version"] = SOLVER_VERSION
    out["kind"] = RUN_KIND_SEARCH
    out["input_hash"] = _job_hash(kind=RUN_KIND_SEARCH, document=document, options=options)
    return execution.label_book_prices(out, inputs.prices)


# --- Sweep: request ----------------------------------------------------------------------------------


def sweep_sections(
    *,
    axes: Any,
    mode: str | None = None,
    objective: str | None = None,
    pareto: Sequence[str] | None = None,
    space: Mapping[str, Any] | None = None,
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
    return sweep, search


def _plan_of(document: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """``solvers.sweep.plan_sweep`` of the plan's document with the run's sweep and search sections."""
    from solvers.sweep import plan_sweep

    return plan_sweep({**document, "sweep": params.get("sweep") or {}, "search": params.get("search") or {}})


def _sweep_options(planned: Any) -> dict[str, Any]:
    """What a sweep's result depends on besides the scenario: the expanded axes, not their spelling."""
    return {
        "axes": [{"field": a.field, "values": list(a.values)} for a in planned.axes],
        "mode": planned.mode,
        "objective": planned.request.objective,
        "pareto": list(planned.pareto),
        "space": planned.request.space,
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


def _layouts_per_point(document: Mapping[str, Any], planned: Any) -> int:
    """The largest layout count of the first, middle and last point (a few milliseconds), for sizing."""
    from solvers import ScenarioError
    from solvers.sweep import point_document

    count = len(planned.points)
    largest = 1
    for index in sorted({0, count // 2, count - 1}):
        try:
            scenario = point_document(planned.request.scenario, planned.points[index])
            largest = max(largest, _layouts_of(scenario, planned.request.space))
        except ScenarioError:
            continue  # that point's row will carry its error; it costs no engine time
    return largest


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
    from solvers.search import default_space, space_from_document

    # The points are set on the plan's unpriced document, as the worker sets them (each is priced after).
    document = services.plan_base_document(plan=plan)
    try:
        planned = _plan_of(document, {"sweep": sweep, "search": search})
        resolved = resolve(_auto_layout(planned.request.scenario))
        space_from_document(
            planned.request.space,
            default=default_space(model=resolved.model, cluster=resolved.cluster, training=resolved.training),
        )
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
) -> Run:
    """Queue a sweep of the plan: the best layout at every point of ``axes`` and the Pareto front.

    Validated before anything is queued (at most ``solvers.sweep.MAX_SWEEP_POINTS`` points). The run is
    created in the caller's transaction with ``points_total`` = the number of points, and
    ``scenarios.sweep_start`` is sent once it commits."""
    _check_trigger(trigger)
    _check_plan(plan)
    sweep, search = sweep_sections(axes=axes, mode=mode, objective=objective, pareto=pareto, space=space)
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
            lambda: sweep_start.apply_async(args=[run_id], **queue.NO_TIME_LIMIT),
            on_broker_down=lambda: execution.runs_mark_unsent([run_id]),
        )
    return run


# --- Sweep: the job state in Run.params["job"], the chunks in SweepChunk rows ------------------------
#
# {"input_hash": key of the frozen inputs, "inputs": PlanInputs.snapshot() (or {"document"} when the sweep
#  executor froze them), "document", "pricing", "chunk_points": n, "chunks_total": k}; chunk k is the
#  SweepChunk (run, k) of that input_hash: claimed like a run, its rows recorded once.

_CHUNK_GAVE_UP_SQL = (
    "'gave up after ' || attempts || ' attempts: the worker solving this chunk was lost each time "
    "(killed, out of memory, or over the hard time limit) before it finished'"
)


def _lease() -> Any:
    import datetime as dt

    return timezone.now() + dt.timedelta(seconds=conf.run_lease_s())


@dataclass(frozen=True)
class SweepJob:
    """A sweep's frozen inputs and chunking, read from ``Run.params``."""

    run_id: int
    input_hash: str
    document: dict[str, Any]  # the plan's unpriced document: each point is priced after it is set
    pricing: Pricing
    chunk_points: int
    chunks_total: int
    points_total: int

    def bounds(self, chunk: int) -> tuple[int, int]:
        start = chunk * self.chunk_points
        return start, min(self.points_total, start + self.chunk_points)


def _job_of(run_id: int, params: Mapping[str, Any], points_total: int) -> SweepJob | None:
    job = params.get("job") or {}
    if not job.get("input_hash"):
        return None
    return SweepJob(
        run_id=run_id,
        input_hash=str(job["input_hash"]),
        document=dict(job.get("document") or {}),
        pricing=Pricing.from_json(job.get("pricing")),
        chunk_points=int(job["chunk_points"]),
        chunks_total=int(job["chunks_total"]),
        points_total=points_total,
    )


def _freeze(
    *, run: Run, claim: execution.Claim, inputs: services.PlanInputs, snapshot: dict[str, Any]
) -> SweepJob | None:
    """Freeze the sweep's inputs on the run (only while ``claim`` holds it): the plan's unpriced document
    and the pricing every point is priced with once its fields are set. Recorded chunks are dropped
    because they belong to other inputs. None when the claim was lost."""
    document = inputs.base_document
    planned = _plan_of(document, run.params)
    points = len(planned.points)
    chunk_points = int(run.params.get("chunk_points") or _chunk_size(points=points, layouts_per_point=1))
    key = _sweep_hash(document=document, planned=planned, prices_for=inputs.pricing)
    chunks_total = math.ceil(points / chunk_points)
    job: dict[str, Any] = {
        "input_hash": key,
        "document": document,
        "pricing": inputs.pricing.to_json(),
        "inputs": snapshot,
        "chunk_points": chunk_points,
        "chunks_total": chunks_total,
    }
    params = {**run.params, "job": job}
    with transaction.atomic():
        held = Run.objects.filter(pk=run.pk, status=STATUS_RUNNING, claim_task_id=claim.task_id).update(
            params=params, points_done=0, points_total=points, lease_expires_at=_lease()
        )
        if held != 1:
            return None
        SweepChunk.objects.filter(run_id=run.pk).delete()
        SweepChunk.objects.bulk_create(
            SweepChunk(run_id=run.pk, index=k, input_hash=key, max_attempts=run.max_attempts)
            for k in range(chunks_total)
        )
    return _job_of(run.pk, params, points)


def _chunks_of(job: SweepJob) -> Any:
    return SweepChunk.objects.filter(run_id=job.run_id, input_hash=job.input_hash)


def _missing_chunks(run_id: int, job: SweepJob) -> list[int]:
    return list(
        _chunks_of(job).exclude(status=STATUS_SUCCEEDED).order_by("index").values_list("index", flat=True)
    )


def _recorded(run_id: int, chunk: int) -> bool:
    return SweepChunk.objects.filter(run_id=run_id, index=chunk, status=STATUS_SUCCEEDED).exists()


def _chunk_record(*, job: SweepJob, chunk: int, rows: list[dict[str, Any]]) -> bool:
    """Record a chunk's rows and count its points, once: the conditional UPDATE matches only while the run
    is running, the chunk belongs to the same frozen inputs and is not recorded yet. True if this call
    recorded it."""
    with transaction.atomic():
        updated = (
            _chunks_of(job)
            .filter(index=chunk, run__status=STATUS_RUNNING)
            .exclude(status=STATUS_SUCCEEDED)
            .update(
                status=STATUS_SUCCEEDED,
                rows=rows,
                finished_at=timezone.now(),
                lease_expires_at=None,
                error="",
            )
        )
        if updated == 1:
            Run.objects.filter(pk=job.run_id).update(
                points_done=F("points_done") + len(rows), lease_expires_at=_lease()
            )
    return updated == 1


def _solve_chunk(job: SweepJob, planned: Any, chunk: int) -> list[dict[str, Any]]:
    from solvers.sweep import sweep_point

    start, stop = job.bounds(chunk)
    return [sweep_point(planned, index, pricing=job.pricing) for index in range(start, stop)]


def _fail_running(*, run_id: int, error: str) -> bool:
    """Fail a running sweep whichever delivery holds it (a chunk over its time limit or attempt cap)."""
    return (
        Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(
            status=STATUS_FAILED, finished_at=timezone.now(), lease_expires_at=None, error=error[:10_000]
        )
        == 1
    )


# --- Sweep: start, chunks, finish ---------------------------------------------------------------------


def _inputs_from_snapshot(*, plan: Plan, snapshot: Mapping[str, Any]) -> services.PlanInputs:
    """The ``PlanInputs`` a sweep froze, rebuilt from its snapshot (so the stored result's provenance is
    exactly the inputs its points were solved with, even if prices or revisions changed since)."""
    revisions = snapshot["revisions"]
    books = snapshot.get("price_books") or {}

    def book(ref: Mapping[str, Any] | None, team_id: int | None) -> pricing.BookRef | None:
        if not ref:
            return None
        return pricing.BookRef(
            id=int(ref["id"]), version=int(ref["version"]), team_id=team_id, name=str(ref["name"])
        )

    return services.PlanInputs(
        document=dict(snapshot["document"]),
        prices=dict(snapshot.get("prices") or {}),
        revisions=adapters.PlanRevisions(
            cluster=ClusterRevision.objects.get(pk=revisions["cluster"]["revision_id"]),
            model=ModelRevision.objects.get(pk=revisions["model"]["revision_id"]),
            site=SiteRevision.objects.get(pk=revisions["site"]["revision_id"]),
        ),
        sheet=pricing.PriceSheet(
            global_book=book(books.get("global"), None), team_book=book(books.get("team"), plan.team_id)
        ),
    )


def sweep_begin(*, run_id: int, claim: execution.Claim) -> str:
    """Claim a queued sweep (attempt cap, lease), freeze its inputs (first attempt only) and send a group
    of chunk tasks for the chunks not recorded yet. Returns what happened."""
    from solvers import ScenarioError

    state = execution.run_claim(run_id=run_id, claim=claim)
    if state not in (execution.CLAIMED, execution.RESUMED):
        return state
    run = Run.objects.select_related(*(f"plan__{p}" for p in adapters.PLAN_RELATED), "plan__site").get(
        pk=run_id
    )
    job = _job_of(run.pk, run.params, run.points_total)
    if job is None or "revisions" not in ((run.params.get("job") or {}).get("inputs") or {}):
        try:
            inputs = services.plan_inputs(plan=run.plan)
            job = _freeze(run=run, claim=claim, inputs=inputs, snapshot=inputs.snapshot())
        except ScenarioError as exc:
            detail = "; ".join(str(e) for e in exc.errors) or str(exc)
            execution.run_fail(run_id=run_id, claim=claim, error=f"the sweep cannot be solved: {detail}")
            return STATUS_FAILED
        except ValidationError as exc:
            execution.run_fail(
                run_id=run_id, claim=claim, error=f"the plan cannot be resolved: {'; '.join(exc.messages)}"
            )
            return STATUS_FAILED
        if job is None:
            return execution.BUSY
    missing = _missing_chunks(run_id, job)
    if not missing:
        return sweep_finish(run_id=run_id)
    group(
        sweep_chunk.s(run_id, chunk, job.input_hash).set(**queue.NO_TIME_LIMIT) for chunk in missing
    ).apply_async()
    log.info("sweep run %s: %d chunks of %d points sent", run_id, len(missing), job.chunk_points)
    return "started"


def chunk_claim(*, run_id: int, chunk: int, input_hash: str, claim: execution.Claim) -> str:
    """Take a chunk for this delivery with the run claim's conditional UPDATEs (``execution.claim_rows``):
    a new delivery or a redelivery of the same message (its worker died) is an attempt; our own retry after
    a database or broker error (same task, another retry count) is not; a chunk that a live delivery holds
    is BUSY. Past ``max_attempts`` the chunk and its run fail with the reason."""
    run = Run.objects.filter(pk=run_id).values_list("status", "params__job__input_hash").first()
    if run is None:
        return CHUNK_GONE
    if run[0] != STATUS_RUNNING:
        return CHUNK_FINISHED
    if run[1] != input_hash:
        return CHUNK_STALE
    row = (
        SweepChunk.objects.filter(run_id=run_id, index=chunk, input_hash=input_hash)
        .values_list("pk", "status")
        .first()
    )
    if row is None:
        return CHUNK_STALE
    if row[1] == STATUS_SUCCEEDED:
        return CHUNK_DONE
    state = execution.claim_rows(
        table=SweepChunk._meta.db_table, ids=[row[0]], claim=claim, gave_up=_CHUNK_GAVE_UP_SQL
    )[row[0]]
    if state == execution.CAPPED:
        error = SweepChunk.objects.values_list("error", flat=True).get(pk=row[0])
        _fail_running(run_id=run_id, error=f"points chunk {chunk}: {error}")
        return CHUNK_CAPPED
    if state == execution.BUSY:
        return CHUNK_DONE if _recorded(run_id, chunk) else execution.BUSY
    Run.objects.filter(pk=run_id, status=STATUS_RUNNING).update(lease_expires_at=_lease())
    return CHUNK_GO


def chunk_execute(*, run_id: int, chunk: int, input_hash: str, claim: execution.Claim) -> str:
    """Solve and record one chunk of a sweep, then finish the sweep if every chunk is recorded."""
    verdict = chunk_claim(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=claim)
    if verdict not in (CHUNK_GO, CHUNK_DONE):
        return verdict
    if verdict == CHUNK_GO:
        run = Run.objects.only("pk", "params", "points_total").get(pk=run_id)
        job = _job_of(run.pk, run.params, run.points_total)
        if job is None or job.input_hash != input_hash:
            return CHUNK_STALE
        try:
            # The sweep's run stays leased while this chunk solves (chunks run under their own task ids).
            with execution.keep_run_leased(run_id=run_id):
                rows = _solve_chunk(job, _plan_of(job.document, run.params), chunk)
        except SoftTimeLimitExceeded:
            raise  # not a solver error: ``sweep_chunk`` fails the run saying the chunk timed out
        except Exception as exc:  # the solver is pure: a failure here repeats on every delivery
            log.exception("sweep run %s: points chunk %s failed", run_id, chunk)
            _fail_running(
                run_id=run_id,
                error=f"points chunk {chunk}: internal solver error: {type(exc).__name__}: {exc}",
            )
            return STATUS_FAILED
        if not _chunk_record(job=job, chunk=chunk, rows=rows):
            verdict = CHUNK_DONE
    if sweep_complete(run_id=run_id, input_hash=input_hash):
        sweep_finish(run_id=run_id)
    return "recorded" if verdict == CHUNK_GO else verdict


def sweep_complete(*, run_id: int, input_hash: str) -> bool:
    """True while the run is running on these inputs and every chunk is recorded."""
    run = (
        Run.objects.filter(pk=run_id)
        .values_list("status", "params__job__input_hash", "params__job__chunks_total")
        .first()
    )
    if run is None or run[0] != STATUS_RUNNING or run[1] != input_hash:
        return False
    recorded = SweepChunk.objects.filter(
        run_id=run_id, input_hash=input_hash, status=STATUS_SUCCEEDED
    ).count()
    return recorded >= int(run[2] or 0) > 0


def _best_point(rows: Sequence[Mapping[str, Any]], objective: str) -> dict[str, Any] | None:
    """The point whose best layout ranks first by the objective (ties: step time, then point order), with
    its figures also under the report sections that results promote to columns (step, tco, carbon,
    schedule)."""
    solved = [row for row in rows if "best" in row]
    if not solved:
        return None
    row = min(
        solved,
        key=lambda r: (
            float(r["best"]["metrics"][objective]),
            float(r["best"]["metrics"]["step_s"]),
            int(r["index"]),
        ),
    )
    metrics = row["best"]["metrics"]
    return {
        "index": row["index"],
        "point": row["point"],
        "layout": row["best"]["layout"],
        "metrics": metrics,
        "step": {"step_s": metrics.get("step_s")},
        "tco": {
            "total_usd": metrics.get("total_usd"),
            "usd_per_million_tokens": metrics.get("usd_per_million_tokens"),
        },
        "carbon": {"total_kgco2e": metrics.get("total_kgco2e")},
        "schedule": {"wall_clock_days": metrics.get("wall_clock_days")},
    }


def sweep_report(
    *, job: SweepJob, planned: Any, rows: list[dict[str, Any]], elapsed_s: float
) -> dict[str, Any]:
    """The stored sweep document: ``solvers.sweep.sweep_document``'s fields (one row per point, in order;
    the Pareto front as row indices) plus the best point, the result key and how the job was chunked."""
    from solvers import SOLVER_VERSION
    from solvers.errors import SolverInternalError
    from solvers.sweep import MAX_AXES, MAX_SWEEP_POINTS, sweep_front

    if [row["index"] for row in rows] != list(range(len(planned.points))):
        raise SolverInternalError(
            f"sweep run {job.run_id} has rows for {len(rows)} of {len(planned.points)} points"
        )
    return {
        "schema_version": adapters.SCHEMA_VERSION,
        "solver_version": SOLVER_VERSION,
        "kind": RUN_KIND_SWEEP,
        "input_hash": job.input_hash,
        "objective": planned.request.objective,
        "mode": planned.mode,
        "axes": [{"field": a.field, "values": list(a.values)} for a in planned.axes],
        "points": len(planned.points),
        "solved": sum(1 for row in rows if "best" in row),
        "failed": sum(1 for row in rows if "error" in row),
        "elapsed_s": elapsed_s,
        "compute_s": sum(float(row.get("elapsed_s") or 0.0) for row in rows),
        "rows": rows,
        "pareto_objectives": list(planned.pareto),
        "pareto": sweep_front(rows, planned.pareto),
        "best": _best_point(rows, planned.request.objective),
        "chunks": {"points_per_chunk": job.chunk_points, "count": job.chunks_total},
        "limits": {"max_points": MAX_SWEEP_POINTS, "max_axes": MAX_AXES},
    }


def _rows_of(run_id: int) -> list[dict[str, Any]]:
    recorded = SweepChunk.objects.filter(run_id=run_id, status=STATUS_SUCCEEDED).order_by("index")
    return [row for rows in recorded.values_list("rows", flat=True) for row in rows or []]


def sweep_finish(*, run_id: int) -> str:
    """The final aggregation of a sweep whose chunks are all recorded: rows in point order, the Pareto
    front and the best point, stored with ``execution.results_store`` (the solve's store: versioned, unique
    on (plan, input hash), the run marked succeeded only while it is running). Safe to run twice or
    concurrently: the second finds the stored result and changes nothing."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return CHUNK_GONE
    if run.status != STATUS_RUNNING:
        return run.status
    job = _job_of(run.pk, run.params, run.points_total)
    snapshot = (run.params.get("job") or {}).get("inputs") or {}
    if job is None or not sweep_complete(run_id=run_id, input_hash=job.input_hash):
        return "incomplete"
    if "revisions" not in snapshot:
        return "executor"  # inputs frozen by the sweep executor, which stores the result itself
    planned = _plan_of(job.document, run.params)
    started = run.started_at or run.queued_at
    report = sweep_report(
        job=job, planned=planned, rows=_rows_of(run_id), elapsed_s=(timezone.now() - started).total_seconds()
    )
    inputs = _inputs_from_snapshot(plan=run.plan, snapshot=snapshot)
    stored = execution.results_store(
        solved=[execution.Solved(run=run, inputs=inputs, report=report)], claim=None
    )[run.pk]
    # The rows now live in the result: the chunks are dropped once the run links it.
    if Run.objects.filter(pk=run_id, result_id=stored.result_id).exists():
        SweepChunk.objects.filter(run_id=run_id).delete()
    log.info("sweep run %s stored as result %s (created: %s)", run_id, stored.result_id, stored.created)
    return "succeeded"


def _sweep_executor(inputs: services.PlanInputs, run: Run, claim: execution.Claim) -> dict[str, Any]:
    """Executor of ``kind="sweep"`` runs that arrive through ``scenarios.execute_run`` (the sweeper re-sent
    a sweep whose message was lost or whose lease expired): finish the sweep in this worker, keeping the
    chunks already recorded for the same inputs, with progress per chunk; ``runs_execute`` stores it."""
    planned = _plan_of(inputs.base_document, run.params)
    key = _sweep_hash(document=inputs.base_document, planned=planned, prices_for=inputs.pricing)
    job = _job_of(run.pk, run.params, len(planned.points))
    if job is None or job.input_hash != key:
        job = _freeze(run=run, claim=claim, inputs=inputs, snapshot={"document": inputs.document})
        if job is None:
            # Another delivery took the run between the claim and the freeze; ``runs_execute`` records
            # nothing for a run this delivery no longer holds.
            from solvers import ScenarioError

            raise ScenarioError.single("", f"sweep run {run.pk} was taken by another delivery")
    for chunk in range(job.chunks_total):
        if not _recorded(run.pk, chunk):
            _chunk_record(job=job, chunk=chunk, rows=_solve_chunk(job, planned, chunk))
    started = run.started_at or run.queued_at
    return sweep_report(
        job=job, planned=planned, rows=_rows_of(run.pk), elapsed_s=(timezone.now() - started).total_seconds()
    )


execution.register_executor(RUN_KIND_SEARCH, _search_executor)
execution.register_executor(RUN_KIND_SWEEP, _sweep_executor)


# --- Tasks -------------------------------------------------------------------------------------------


@shared_task(name="scenarios.sweep_start", bind=True, **RETRY_OPTIONS)
def sweep_start(self: Any, run_id: int) -> str:
    """Claim a sweep, freeze its inputs and fan its chunks out as a Celery group."""
    claim = _claim(self)
    try:
        return sweep_begin(run_id=run_id, claim=claim)
    except SoftTimeLimitExceeded:
        execution.run_fail(run_id=run_id, claim=claim, error=_time_limit_error())
        return STATUS_FAILED


@shared_task(name="scenarios.sweep_chunk", bind=True, **RETRY_OPTIONS)
def sweep_chunk(self: Any, run_id: int, chunk: int, input_hash: str) -> str:
    """Solve one chunk of a sweep's points; the chunk that completes the sweep stores its result."""
    try:
        return chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=_claim(self))
    except SoftTimeLimitExceeded:
        _fail_running(run_id=run_id, error=f"points chunk {chunk} timed out: {_time_limit_error()}")
        return STATUS_FAILED


__all__ = [
    "SEARCH_OPTION_KEYS",
    "SWEEP_OPTION_KEYS",
    "SweepJob",
    "chunk_claim",
    "chunk_execute",
    "search_check",
    "search_request",
    "sweep_begin",
    "sweep_check",
    "sweep_chunk",
    "sweep_complete",
    "sweep_finish",
    "sweep_report",
    "sweep_request",
    "sweep_start",
]
