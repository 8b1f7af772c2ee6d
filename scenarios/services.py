"""Workflows that cross models, the transaction and the queue. The API calls only these for writes.

Validation failures raise ``django.core.exceptions.ValidationError`` with a dict {field path: [messages]}
or ``solvers.ScenarioError`` (every broken rule of a scenario document with its path).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from scenarios import adapters, pricing
from scenarios.actors import UserLike as UserLike
from scenarios.actors import user_or_none
from scenarios.errors import ScenarioInUse

# The plan's inputs (rows and price books to a document) live in ``scenarios.inputs``; re-exported here.
from scenarios.inputs import PlanInputs as PlanInputs
from scenarios.inputs import plan_base_document as plan_base_document
from scenarios.inputs import plan_document as plan_document
from scenarios.inputs import plan_inputs as plan_inputs
from scenarios.models import (
    PRICE_MODE_PATCH,
    RUN_KIND_CHOICES,
    SCENARIO_MODELS,
    TRIGGER_API,
    TRIGGER_CHOICES,
    ClusterRevision,
    ClusterScenario,
    Membership,
    ModelRevision,
    ModelScenario,
    Plan,
    Result,
    RevisionBase,
    Run,
    ScenarioBase,
    SiteRevision,
    SiteScenario,
    Team,
)

# Price books live in ``scenarios.price_books``; re-exported here.
from scenarios.price_books import MAX_PRICE_ENTRIES as MAX_PRICE_ENTRIES
from scenarios.price_books import PRICE_MODES as PRICE_MODES
from scenarios.price_books import SITE_KEY_PREFIX as SITE_KEY_PREFIX
from scenarios.price_books import PriceBookChanges as PriceBookChanges
from scenarios.price_books import PriceBookSummary as PriceBookSummary
from scenarios.price_books import fan_out_state as fan_out_state
from scenarios.price_books import price_book_changes as price_book_changes
from scenarios.price_books import price_book_publish as price_book_publish
from scenarios.price_books import price_book_summary as price_book_summary
from scenarios.price_books import price_entries_validate as price_entries_validate
from scenarios.price_books import price_limit_text as price_limit_text
from scenarios.price_books import price_value_problem as price_value_problem
from scenarios.price_books import published_summary as published_summary
from solvers import ScenarioError, validate_scenario
from solvers.prices import (
    PRICE_ELECTRICITY,
    provider_problem,
)

PLAN_FIELDS = frozenset(
    {
        "name",
        "description",
        "cluster",
        "model",
        "site",
        "cluster_revision",
        "model_revision",
        "site_revision",
        "training",
        "economics",
        "auto_rerun",
        "cloud_provider",
    }
)
PLAN_REQUIRED = ("name", "cluster", "model", "site")


def _user(user: UserLike) -> User | None:
    return user_or_none(user)


def _manager(model: type[Any]) -> Any:
    """The default manager of a model class chosen at run time (cluster, model or site)."""
    return model._default_manager


# --- Teams --------------------------------------------------------------------------------------------


def team_create(*, name: str, slug: str, owner: UserLike = None) -> Team:
    """A team; ``owner`` (if given) becomes its admin."""
    if Team.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": [f"a team with slug '{slug}' already exists"]})
    with transaction.atomic():
        team = Team.objects.create(name=name, slug=slug)
        owner_user = _user(owner)
        if owner_user is not None:
            Membership.objects.create(team=team, user=owner_user, role="admin")
    return team


def membership_set(*, team: Team, user: User, role: str) -> Membership:
    """``user``'s role on ``team``, in force at once (the operator's commands and the admin site); a new member
    an admin adds through the API is invited instead (``membership_invite``). A role change keeps whether the
    membership was accepted."""
    if role not in {"viewer", "editor", "admin"}:
        raise ValidationError({"role": ["must be one of viewer, editor, admin"]})
    membership, _ = Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return membership


def membership_enrol(*, team: Team, user: User, role: str) -> Membership:
    """``membership_set``, accepted now if it was an invitation: the operator's commands (``create_access``)
    enrol a user, as the admin site does."""
    membership = membership_set(team=team, user=user, role=role)
    if membership.accepted_at is None:
        membership = membership_accept(membership=membership)
    return membership


def membership_invite(*, team: Team, user: User, role: str) -> Membership:
    """Invite ``user`` to ``team`` with ``role``: the membership holds no access until the user accepts it
    (``membership_accept``). Anyone may make a team and name any user, so being named must not move the user's
    default team, lists or tokens unasked."""
    if role not in {"viewer", "editor", "admin"}:
        raise ValidationError({"role": ["must be one of viewer, editor, admin"]})
    return Membership.objects.create(team=team, user=user, role=role, accepted_at=None)


def membership_accept(*, membership: Membership) -> Membership:
    """The invitee's acceptance: the membership is in force from now (a second acceptance changes nothing).
    Raises ``Membership.DoesNotExist`` when the invitation was withdrawn (or declined) meanwhile."""
    with transaction.atomic():
        # the row is saved, not updated in place, so that the audit log records who accepted and when
        accepted = Membership.objects.select_for_update(of=("self",)).select_related("team")
        row = accepted.filter(pk=membership.pk).first()
        if row is None:
            raise Membership.DoesNotExist(f"membership {membership.pk} no longer exists")
        if row.accepted_at is None:
            row.accepted_at = timezone.now()
            row.save(update_fields=["accepted_at"])
    return row


def membership_leave(*, membership: Membership) -> None:
    """Remove a membership (the member leaving, declining an invitation, or an admin removing them); refused
    while it holds the team's last accepted admin. The member's tokens restricted to the team are revoked by
    the API's receiver of the delete (``api.membership_tokens``)."""
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=membership.team_id)  # one member change at a time
        row = Membership.objects.select_for_update().filter(pk=membership.pk).first()
        if row is None:
            return
        if row.role == "admin" and row.accepted_at is not None and not other_admins(row):
            raise ValidationError({"role": ["a team keeps at least one admin"]})
        row.delete()


def other_admins(membership: Membership) -> list[int]:
    """The team's accepted admins other than ``membership``, their rows locked in id order: two admins
    demoting or removing each other at once are serialised, and the second sees the first's change."""
    admins = list(
        Membership.objects.select_for_update()
        .filter(team_id=membership.team_id, role="admin", accepted_at__isnull=False)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return [pk for pk in admins if pk != membership.pk]


# --- Scenarios ----------------------------------------------------------------------------------------


def _scenario_model(kind: str) -> type[ScenarioBase]:
    try:
        return SCENARIO_MODELS[kind]
    except KeyError:
        raise ValidationError({"kind": [f"must be one of {', '.join(sorted(SCENARIO_MODELS))}"]}) from None


REVISION_MODELS: dict[str, type[RevisionBase]] = {
    "cluster": ClusterRevision,
    "model": ModelRevision,
    "site": SiteRevision,
}


def _revision_model(kind: str) -> type[RevisionBase]:
    return REVISION_MODELS[kind]


def _validate_part(part: str, document: Any) -> dict[str, Any]:
    from solvers import validate_part

    if not isinstance(document, Mapping):
        raise ValidationError({"document": ["must be a JSON object"]})
    validate_part(part, dict(document))
    return dict(document)


def check_live_name(
    model: type[ScenarioBase] | type[Plan], *, team: Team, name: str, exclude_pk: int | None
) -> None:
    if not name or not name.strip():
        raise ValidationError({"name": ["must not be empty"]})
    clash = _manager(model).filter(team=team, name=name, archived_at__isnull=True)
    if exclude_pk is not None:
        clash = clash.exclude(pk=exclude_pk)
    if clash.exists():
        raise ValidationError({"name": [f"'{name}' is already used by another live object of this team"]})


def scenario_create(
    *, kind: str, team: Team, name: str, document: dict[str, Any], user: UserLike, description: str = ""
) -> ScenarioBase:
    """A named scenario of ``kind`` (cluster, model or site) with its first revision."""
    model = _scenario_model(kind)
    doc = _validate_part(model.part, document)
    check_live_name(model, team=team, name=name, exclude_pk=None)
    try:
        with transaction.atomic():
            scenario = _manager(model).create(team=team, name=name, description=description)
            rev = _manager(_revision_model(kind)).create(
                scenario=scenario, number=1, document=doc, created_by=_user(user)
            )
            _manager(model).filter(pk=scenario.pk).update(latest_revision=rev)
            scenario.latest_revision = rev
    except IntegrityError:
        # Two creates with the same name raced past the check; the partial unique index decided.
        raise ValidationError(
            {"name": [f"'{name}' is already used by another live object of this team"]}
        ) from None
    return scenario


def scenario_update(
    *,
    scenario: ScenarioBase,
    user: UserLike,
    name: str | None = None,
    description: str | None = None,
    document: dict[str, Any] | None = None,
) -> ScenarioBase:
    """Rename, describe, or change the document; a changed document becomes a new immutable revision."""
    return scenario_edit(
        scenario=scenario, user=user, name=name, description=description, document=document, check_plans=False
    ).scenario


@dataclass(frozen=True)
class ScenarioEdit:
    """A scenario after an edit, and what its new revision did to the plans that follow it (None when the
    edit made no new revision, or the check was not asked for)."""

    scenario: ScenarioBase
    following_plans: FollowingPlans | None


def scenario_edit(
    *,
    scenario: ScenarioBase,
    user: UserLike,
    name: str | None = None,
    description: str | None = None,
    document: dict[str, Any] | None = None,
    check_plans: bool = True,
) -> ScenarioEdit:
    """``scenario_update``, and when the edit makes a new revision, ``following_plans_check`` of it. The check
    runs inside the edit's transaction, under its row lock: it reads exactly the revision this edit stored
    (not one a concurrent edit stored after it), and an error while checking (a database outage) stores
    nothing, so an answer that says nothing was done is true. The lock is held while the plans are checked
    (``SCENARIO_EDIT_PLAN_CHECK_S``): another edit of the same scenario waits for it."""
    model = type(scenario)
    doc = _validate_part(model.part, document) if document is not None else None
    if name is not None and name != scenario.name:
        check_live_name(model, team=scenario.team, name=name, exclude_pk=scenario.pk)
    with transaction.atomic():
        # The row lock serialises revision numbering between concurrent edits.
        locked = (
            _manager(model)
            .select_for_update(of=("self",))
            .select_related("latest_revision")
            .get(pk=scenario.pk)
        )
        changed: list[str] = []
        old_name = locked.name
        if name is not None and name != locked.name:
            problem = site_rename_problem(locked, name)
            if problem is not None:
                raise ValidationError({"name": [problem]})
            locked.name = name
            changed.append("name")
        if description is not None and description != locked.description:
            locked.description = description
            changed.append("description")
        current = locked.latest_revision
        if doc is not None and (current is None or current.document != doc):
            rev_model = _revision_model(model.kind)
            last = _manager(rev_model).filter(scenario=locked).order_by("-number").first()
            rev = _manager(rev_model).create(
                scenario=locked, number=(last.number if last else 0) + 1, document=doc, created_by=_user(user)
            )
            locked.latest_revision = rev
            changed.append("latest_revision")
        if changed:
            try:
                locked.save(update_fields=[*changed, "updated_at"])
            except IntegrityError:
                raise ValidationError(
                    {"name": [f"'{name}' is already used by another live object"]}
                ) from None
        if "name" in changed:
            _carry_site_price(locked, old_name, user)
        following = None
        if check_plans and "latest_revision" in changed:
            following = following_plans_check(scenario=locked)
    return ScenarioEdit(scenario=locked, following_plans=following)


def site_rename_problem(scenario: ScenarioBase, name: str) -> str | None:
    """Why ``scenario`` cannot be renamed ``name`` here, or None: an archived site whose team price is keyed by
    its name (``site:<name>``) would lose it, and a book can name only a live site."""
    if not isinstance(scenario, SiteScenario) or scenario.archived_at is None or name == scenario.name:
        return None
    if _site_price_entry(scenario, scenario.name) is None:
        return None
    return "the site is archived and the team's price book prices it by its name: un-archive it to rename it"


def _site_price_entry(scenario: SiteScenario, name: str) -> Any:
    book = pricing.newest_books(team_ids=[scenario.team_id]).get(scenario.team_id)
    key = f"{SITE_KEY_PREFIX}{name}"
    entry = None if book is None else book.entries.filter(kind=PRICE_ELECTRICITY, key=key).first()
    return None if entry is None else (book, entry)


def _carry_site_price(scenario: ScenarioBase, old_name: str, user: UserLike) -> None:
    """A site's team price is keyed by the site's name (``site:<name>``, ``solvers.prices``): a rename
    carries it to the new name, so that no plan of the site loses it. The team's book in force gets its next
    version (a patch: the price under the new name, ``source`` saying why), in the rename's transaction. The
    old key is removed unless another site of the team (an archived one, whose plans still run) has the old
    name. Its fan-out finds no plan whose price moved."""
    if not isinstance(scenario, SiteScenario):
        return
    found = _site_price_entry(scenario, old_name)
    if found is None:
        return
    book, entry = found
    carried: dict[str, Any] = {
        "kind": PRICE_ELECTRICITY,
        "key": f"{SITE_KEY_PREFIX}{scenario.name}",
        "value": entry.value,
        "unit": entry.unit,
    }
    if entry.source:
        carried["source"] = entry.source
    if entry.effective_date is not None:
        carried["effective_date"] = entry.effective_date.isoformat()
    entries = [carried]
    if (
        not SiteScenario.objects.filter(team_id=scenario.team_id, name=old_name)
        .exclude(pk=scenario.pk)
        .exists()
    ):
        entries.append({"kind": PRICE_ELECTRICITY, "key": entry.key, "remove": True})
    price_book_publish(
        team=scenario.team,
        user=user,
        name=book.name,
        entries=entries,
        notes=f"site '{old_name}' renamed '{scenario.name}': its price carried to the new name",
        source=book.source,
        mode=PRICE_MODE_PATCH,
        fan_out="async",
    )


def scenario_archive(*, scenario: ScenarioBase, user: UserLike) -> ScenarioBase:
    """Hide a scenario from lists and free its name; plans and results that use it keep working."""
    if scenario.archived_at is None:
        scenario.archived_at = timezone.now()
        scenario.save(update_fields=["archived_at", "updated_at"])
    return scenario


def scenario_delete(*, scenario: ScenarioBase) -> None:
    """Delete a scenario and its history. Refused with ``ScenarioInUse`` when a plan or a stored result
    depends on it (archive it instead: results are kept forever)."""
    model = type(scenario)
    try:
        with transaction.atomic():
            # Counted under the row's lock: a plan being made on the scenario holds a key-share lock on it
            # (its foreign key) until it commits, so the count below sees it, and none can be made after.
            _manager(model).select_for_update().filter(pk=scenario.pk).first()
            _refuse_if_used(scenario)
            _manager(model).filter(pk=scenario.pk).update(latest_revision=None)
            scenario.delete()
    except (ProtectedError, IntegrityError) as exc:  # a row that uses it after all: the same answer
        _refuse_if_used(scenario)
        found = list(getattr(exc, "protected_objects", ()))
        raise ScenarioInUse(
            f"{type(scenario).kind} scenario '{scenario.name}' came to be used by a plan or a stored result "
            "while it was being deleted; archive it instead",
            plans=sum(isinstance(row, Plan) for row in found),
            results=sum(isinstance(row, Result) for row in found),
        ) from None


def _refuse_if_used(scenario: ScenarioBase) -> None:
    field = type(scenario).kind
    plans = Plan.objects.filter(**{field: scenario}).count()
    results = Result.objects.filter(**{f"{field}_revision__scenario": scenario}).count()
    if plans or results:
        raise ScenarioInUse(
            f"{field} scenario '{scenario.name}' is used by {plans} plan(s) and {results} stored result(s); "
            "archive it instead",
            plans=plans,
            results=results,
        )


# --- Plans --------------------------------------------------------------------------------------------


def _resolve_fk(value: Any, model: type[Any], *, team: Team, path: str, errors: dict[str, list[str]]) -> Any:
    if value is None:
        return None
    obj = value
    if not isinstance(value, model):
        try:
            obj = model.objects.get(pk=int(value))
        except (TypeError, ValueError, model.DoesNotExist):
            errors[path] = [f"no such {model.__name__} in this team: {value!r}"]
            return None
    owner_team = getattr(obj, "team_id", None)
    if owner_team is None and hasattr(obj, "scenario"):
        owner_team = obj.scenario.team_id
    if owner_team != team.pk:
        errors[path] = [f"no such {model.__name__} in this team: {value!r}"]
        return None
    return obj


def plan_values(*, team: Team, fields: Mapping[str, Any], current: Plan | None) -> dict[str, Any]:
    """A plan's fields (``PLAN_FIELDS``) checked for ``team``: its scenarios and pinned revisions are the team's
    (another team's reads as "no such"), a newly chosen scenario is not archived, a pinned revision is one of
    its part's scenario, JSON parts are objects; raises ``ValidationError`` {field: [messages]}. The rule of
    every way a plan is written: the API and the dashboard through ``plan_create``/``plan_update``, the admin's
    form directly."""
    unknown = sorted(set(fields) - PLAN_FIELDS)
    if unknown:
        raise ValidationError({name: ["unknown field"] for name in unknown})
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = dict(fields)
    for name, model in (("cluster", ClusterScenario), ("model", ModelScenario), ("site", SiteScenario)):
        if name in values:
            values[name] = _resolve_fk(values[name], model, team=team, path=name, errors=errors)
            if values[name] is None and name not in errors:
                errors[name] = ["required"]
            elif (
                values[name] is not None
                and values[name].archived_at is not None
                and (current is None or getattr(current, f"{name}_id") != values[name].pk)
            ):
                errors[name] = ["the scenario is archived"]
    for name, rev_model in (
        ("cluster_revision", ClusterRevision),
        ("model_revision", ModelRevision),
        ("site_revision", SiteRevision),
    ):
        if name in values:
            values[name] = _resolve_fk(values[name], rev_model, team=team, path=name, errors=errors)
    for part in ("training", "economics"):
        if part in values and values[part] is None:
            values[part] = {}
        if part in values and not isinstance(values[part], Mapping):
            errors[part] = ["must be a JSON object"]
    if "auto_rerun" in values and not isinstance(values["auto_rerun"], bool):
        errors["auto_rerun"] = ["must be true or false"]
    if "cloud_provider" in values:
        provider = values["cloud_provider"]
        problem = "must be a string" if not isinstance(provider, str) else provider_problem(provider or "")
        if problem is not None:
            errors["cloud_provider"] = [problem]
    if errors:
        raise ValidationError(errors)
    # Pinned revisions must belong to the plan's scenario of that part.
    for part in ("cluster", "model", "site"):
        scenario = values.get(part, getattr(current, part, None) if current else None)
        rev = values.get(f"{part}_revision", getattr(current, f"{part}_revision", None) if current else None)
        if rev is not None and scenario is not None and rev.scenario_id != scenario.pk:
            errors[f"{part}_revision"] = [f"revision {rev.pk} is not a revision of {part} '{scenario.name}'"]
    if errors:
        raise ValidationError(errors)
    return values


def validate_plan_document(plan: Plan, *, sheet: pricing.PriceSheet | None = None) -> None:
    """The whole document must be one a solve accepts: it resolves (cross-part rules: a layout must divide the
    cluster...), a given layout breaks no engine rule (tp must divide the heads...) and ``layout: auto`` finds
    a layout that fits, so that no plan is stored that every run of would fail. The document is the one a run
    solves (``plan_inputs``: the same revisions and prices; ``sheet``, the team's price sheet, when the caller
    holds it)."""
    validate_scenario(plan_inputs(plan=plan, sheet=sheet).document)


@dataclass(frozen=True)
class UnsolvablePlan:
    """A plan that no run could solve now, with every rule its document breaks as (field path, message)."""

    plan: Plan
    errors: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FollowingPlans:
    """What a new revision of a scenario did to the live plans that follow its latest revision: ``following``
    of them, the first ``checked`` by name checked as ``plan_create`` checks a plan, ``unsolvable`` the ones a
    run would now refuse (their runs fail naming the same rules until the plan or the scenario is changed)."""

    following: int
    checked: int
    unsolvable: tuple[UnsolvablePlan, ...]


def following_plans_check(*, scenario: ScenarioBase) -> FollowingPlans:
    """Check the team's live plans that follow ``scenario``'s latest revision (a plan pinned to a revision is
    not moved by an edit), at most ``settings.SCENARIO_EDIT_PLAN_CHECKS`` of them in name order, and
    none begun after ``settings.SCENARIO_EDIT_PLAN_CHECK_S`` seconds of checking: each check is a solve's own
    (``validate_plan_document``), a layout search for ``layout: auto`` (up to seconds). The scenario
    edit itself is kept whatever this finds: a cluster that shrinks is a change the plans then follow, and the
    caller is told which of them no longer solve and why."""
    kind = scenario.kind
    # the scenario's team only: its editor is told of its own plans, each priced with the team's sheet
    plans = Plan.objects.filter(
        **{kind: scenario, f"{kind}_revision__isnull": True},
        team_id=scenario.team_id,
        archived_at__isnull=True,
    ).order_by("name", "pk")
    following = plans.count()
    cap = settings.SCENARIO_EDIT_PLAN_CHECKS
    if not following or cap <= 0:
        return FollowingPlans(following=following, checked=0, unsolvable=())
    sheet = pricing.sheet_for_team(team_id=scenario.team_id)
    deadline = time.monotonic() + settings.SCENARIO_EDIT_PLAN_CHECK_S
    checked: list[Plan] = []
    unsolvable: list[UnsolvablePlan] = []
    for plan in plans.select_related(*adapters.PLAN_RELATED)[:cap]:
        if checked and time.monotonic() > deadline:  # the answer says how many were checked
            break
        checked.append(plan)
        try:
            validate_plan_document(plan, sheet=sheet)
        except ScenarioError as exc:
            errors = tuple((e.path, e.message) for e in exc.errors)
            unsolvable.append(UnsolvablePlan(plan=plan, errors=errors))
        except ValidationError as exc:  # the plan's rows no longer give a document (not expected)
            unsolvable.append(UnsolvablePlan(plan=plan, errors=tuple(("", m) for m in exc.messages)))
    return FollowingPlans(following=following, checked=len(checked), unsolvable=tuple(unsolvable))


# Plan fields that change no solve: a change to these alone is not checked again (nor searched again).
PLAN_LABEL_FIELDS = frozenset({"name", "description", "auto_rerun"})


def plan_create(*, team: Team, user: UserLike, **fields: Any) -> Plan:
    missing = [name for name in PLAN_REQUIRED if fields.get(name) in (None, "")]
    if missing:
        raise ValidationError({name: ["required"] for name in missing})
    values = plan_values(team=team, fields=fields, current=None)
    check_live_name(Plan, team=team, name=values["name"], exclude_pk=None)
    plan = Plan(team=team, created_by=_user(user), **values)
    validate_plan_document(plan)
    _save_plan(plan, name_taken=f"'{values['name']}' is already used by another live plan")
    return plan


def plan_update(*, plan: Plan, user: UserLike, **fields: Any) -> Plan:
    values = plan_values(team=plan.team, fields=fields, current=plan)
    if "name" in values and values["name"] != plan.name:
        check_live_name(Plan, team=plan.team, name=values["name"], exclude_pk=plan.pk)
    solved_change = any(
        name not in PLAN_LABEL_FIELDS and value != getattr(plan, name) for name, value in values.items()
    )
    for name, value in values.items():
        setattr(plan, name, value)
    if solved_change:
        validate_plan_document(
            plan
        )  # may take seconds, while a worker stores a result or the plan is archived
    # Only the fields this update sets: the others (latest_result, archived_at) may have moved meanwhile.
    _save_plan(plan, name_taken="already used by another live plan", update_fields=[*values, "updated_at"])
    return plan


_PLAN_REFERENCES = (
    ("cluster", ClusterScenario),
    ("model", ModelScenario),
    ("site", SiteScenario),
    ("cluster_revision", ClusterRevision),
    ("model_revision", ModelRevision),
    ("site_revision", SiteRevision),
)


def _save_plan(plan: Plan, *, name_taken: str, update_fields: list[str] | None = None) -> None:
    """Save ``plan``, its foreign keys checked before the save returns; a failure names its field.

    Django's foreign keys are checked when the transaction commits, so a scenario deleted between
    ``plan_values`` reading it and the save (a concurrent DELETE, which counts the scenario's plans under its
    row lock) used to fail the save as "name already used". Checked at once instead, the insert takes its key-share
    lock on each referenced row: a delete that has not committed waits for this plan (and then counts it,
    ``scenario_delete``), and one that has committed makes the check fail here, answered as the field's
    "no such" rather than the name's clash.
    """
    try:
        with transaction.atomic():
            plan.save(update_fields=update_fields)
            with connection.cursor() as cursor:
                # Run the pending deferred checks now, then defer again for the rest of any outer transaction.
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    except IntegrityError:
        gone = {
            name: [f"no such {model.__name__} in this team: {pk!r} (deleted while the plan was saved)"]
            for name, model in _PLAN_REFERENCES
            if (pk := getattr(plan, f"{name}_id")) is not None and not model.objects.filter(pk=pk).exists()
        }
        raise ValidationError(gone or {"name": [name_taken]}) from None


def plan_archive(*, plan: Plan, user: UserLike) -> Plan:
    if plan.archived_at is None:
        plan.archived_at = timezone.now()
        plan.save(update_fields=["archived_at", "updated_at"])
    return plan


# --- Runs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRequested:
    """A queued run and what became of its message once the request's transaction commits: ``queued`` (sent
    to the broker) or ``deferred`` (the broker was down; the sweeper sends it within about 30 s of the
    broker's return)."""

    run: Run
    sending: Any


def run_submit(
    *,
    plan: Plan,
    user: UserLike,
    trigger: str = TRIGGER_API,
    kind: str = "solve",
    params: dict[str, Any] | None = None,
    points_total: int = 0,
) -> RunRequested:
    """A queued run, created in the caller's transaction and sent to the broker only once it commits
    (a rolled-back request leaves no message pointing at a row that does not exist). A broker that is down
    does not fail the request: the row is the work, and the sweeper sends it later (``scenarios.queue``)."""
    from scenarios.runs import execute

    if trigger not in {value for value, _ in TRIGGER_CHOICES}:
        raise ValidationError({"trigger": [f"must be one of {', '.join(v for v, _ in TRIGGER_CHOICES)}"]})
    if kind not in {value for value, _ in RUN_KIND_CHOICES}:
        raise ValidationError({"kind": [f"must be one of {', '.join(v for v, _ in RUN_KIND_CHOICES)}"]})
    if plan.archived_at is not None:
        raise ValidationError({"plan": ["the plan is archived"]})
    now = timezone.now()
    run = Run.objects.create(
        plan=plan,
        team_id=plan.team_id,
        kind=kind,
        trigger=trigger,
        params=params or {},
        points_total=points_total,
        requested_by=_user(user),
        queued_at=now,
        enqueued_at=now,
    )
    return RunRequested(run=run, sending=execute.enqueue_runs_on_commit(run_ids=[run.pk]))


def run_request(
    *,
    plan: Plan,
    user: UserLike,
    trigger: str = TRIGGER_API,
    kind: str = "solve",
    params: dict[str, Any] | None = None,
    points_total: int = 0,
) -> Run:
    """``run_submit`` for callers that need only the run."""
    return run_submit(
        plan=plan, user=user, trigger=trigger, kind=kind, params=params, points_total=points_total
    ).run
