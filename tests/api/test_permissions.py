"""The permission matrix: every endpoint and method x {member, other team's member, no team, anonymous}.

A member of the owning team succeeds; a member of another team and a user in no team get 404 on every
object (never 403: existence does not leak), see none of the team's rows in lists, cannot create in the
team (400 on the team field), and leave every stored row unchanged; an anonymous caller gets 401.
Role checks within the team (viewer reads, editor writes, admin manages members and tokens) follow.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from api.models import ApiToken
from tests.api import factories as f
from tests.api.conftest import World, build_world, shared_rows, with_fresh_clients

pytestmark = pytest.mark.django_db

_counter = itertools.count()


@dataclass
class Objects:
    """Rows owned by team alpha that the matrix aims at."""

    ids: dict[str, int]


def make_objects(world: World) -> Objects:
    from scenarios import services
    from scenarios.models import Membership

    alice = world.alice.user
    trio = f.scenario_trio(team=world.alpha, user=alice, suffix="-used")
    spare = f.scenario_trio(team=world.alpha, user=alice, suffix="-spare")
    plan = f.plan_for(team=world.alpha, user=alice, name="plan", trio=trio)
    spare_plan = f.plan_for(team=world.alpha, user=alice, name="spare-plan", trio=trio)
    first = f.insert_result(plan=plan, scale=1.0)
    second = f.insert_result(plan=plan, scale=2.0, previous=first)
    run = services.run_request(plan=plan, user=alice)
    book = services.price_book_publish(
        team=world.alpha,
        user=alice,
        name="alpha prices",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 30000.0}],
        fan_out="none",
    )
    team_token, _ = ApiToken.issue(user=world.carol.user, name="alpha tool", team=world.alpha)
    get_user_model().objects.create_user(username="dave", password="dave-password-1234")
    return Objects(
        ids={
            "alpha": world.alpha.pk,
            "cluster": trio[0].pk,
            "model": trio[1].pk,
            "site": trio[2].pk,
            "spare_cluster": spare[0].pk,
            "spare_model": spare[1].pk,
            "spare_site": spare[2].pk,
            "plan": plan.pk,
            "spare_plan": spare_plan.pk,
            "result": second.pk,
            "run": run.pk,
            "book": book.pk,
            "bob_membership": Membership.objects.get(team=world.alpha, user=world.bob.user).pk,
            "team_token": team_token.pk,
        }
    )


@dataclass
class Shared:
    world: World
    objects: Objects
    rows: dict[str, list[dict[str, Any]]]  # fingerprint() right after they were built


@pytest.fixture(scope="module")
def _shared(django_db_setup: None, django_db_blocker: Any) -> Iterator[Shared]:
    """The personas and alpha's rows, built once for the module's ~300 cases instead of once per case.
    Every test runs in a savepoint that is rolled back afterwards (tests.api.conftest.shared_rows)."""

    def build() -> Shared:
        world = build_world()
        objects = make_objects(world)
        return Shared(world, objects, fingerprint())

    yield from shared_rows(django_db_blocker, build)


@pytest.fixture
def world(_shared: Shared, db: None) -> World:
    # Each case starts from exactly the rows built for the module, whatever the previous case changed.
    assert fingerprint() == _shared.rows, "a previous test's writes leaked into this one"
    return with_fresh_clients(_shared.world)


@pytest.fixture
def objects(_shared: Shared, world: World) -> Objects:
    return _shared.objects


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # formatted with Objects.ids
    kind: str  # "object": one of alpha's rows; "list": a list; "create": creates in alpha; "open": no team
    body: Callable[[dict[str, int]], Any] | None = None
    member_status: int | tuple[int, ...] = 200


def scenario_cases(plural: str, kind: str, document: dict[str, Any]) -> list[Case]:
    return [
        Case(f"{plural}-list", "get", f"/api/v1/{plural}/", "list"),
        Case(
            f"{plural}-create",
            "post",
            f"/api/v1/{plural}/",
            "create",
            lambda ids: {"team": ids["alpha"], "name": f"new-{next(_counter)}", "document": document},
            201,
        ),
        Case(f"{plural}-retrieve", "get", f"/api/v1/{plural}/{{{kind}}}/", "object"),
        Case(
            f"{plural}-patch",
            "patch",
            f"/api/v1/{plural}/{{{kind}}}/",
            "object",
            lambda ids: {"description": "edited"},
        ),
        Case(f"{plural}-delete", "delete", f"/api/v1/{plural}/{{spare_{kind}}}/", "object", None, 204),
        Case(f"{plural}-delete-in-use", "delete", f"/api/v1/{plural}/{{{kind}}}/", "object", None, 409),
        Case(f"{plural}-archive", "post", f"/api/v1/{plural}/{{{kind}}}/archive/", "object"),
        Case(f"{plural}-revisions", "get", f"/api/v1/{plural}/{{{kind}}}/revisions/", "object"),
        Case(f"{plural}-revision", "get", f"/api/v1/{plural}/{{{kind}}}/revisions/1/", "object"),
    ]


CASES: list[Case] = [
    Case("teams-list", "get", "/api/v1/teams/", "list"),
    Case(
        "teams-create",
        "post",
        "/api/v1/teams/",
        "open",
        lambda ids: {"name": "T", "slug": f"t-{next(_counter)}"},
        201,
    ),
    Case("teams-retrieve", "get", "/api/v1/teams/{alpha}/", "object"),
    Case("teams-patch", "patch", "/api/v1/teams/{alpha}/", "object", lambda ids: {"name": "Alpha renamed"}),
    Case("members-list", "get", "/api/v1/teams/{alpha}/members/", "object"),
    Case(
        "members-create",
        "post",
        "/api/v1/teams/{alpha}/members/",
        "object",
        lambda ids: {"user": "dave", "role": "viewer"},
        201,
    ),
    Case("members-retrieve", "get", "/api/v1/teams/{alpha}/members/{bob_membership}/", "object"),
    Case(
        "members-patch",
        "patch",
        "/api/v1/teams/{alpha}/members/{bob_membership}/",
        "object",
        lambda ids: {"role": "editor"},
    ),
    Case("members-delete", "delete", "/api/v1/teams/{alpha}/members/{bob_membership}/", "object", None, 204),
    Case("tokens-list", "get", "/api/v1/tokens/", "list"),
    Case("tokens-create", "post", "/api/v1/tokens/", "open", lambda ids: {"name": "mine"}, 201),
    Case("tokens-retrieve", "get", "/api/v1/tokens/{team_token}/", "object"),
    Case("tokens-revoke", "delete", "/api/v1/tokens/{team_token}/", "object", None, 204),
    *scenario_cases("clusters", "cluster", f.CLUSTER_DOC),
    *scenario_cases("models", "model", f.MODEL_DOC),
    *scenario_cases("sites", "site", f.SITE_DOC),
    Case("plans-list", "get", "/api/v1/plans/", "list"),
    Case(
        "plans-create",
        "post",
        "/api/v1/plans/",
        "create",
        lambda ids: {
            "team": ids["alpha"],
            "name": f"p-{next(_counter)}",
            "cluster": ids["cluster"],
            "model": ids["model"],
            "site": ids["site"],
            "training": f.TRAINING,
        },
        201,
    ),
    Case("plans-retrieve", "get", "/api/v1/plans/{plan}/", "object"),
    Case("plans-patch", "patch", "/api/v1/plans/{plan}/", "object", lambda ids: {"auto_rerun": True}),
    Case("plans-delete", "delete", "/api/v1/plans/{spare_plan}/", "object", None, 204),
    Case("plans-delete-with-results", "delete", "/api/v1/plans/{plan}/", "object", None, 409),
    Case("plans-archive", "post", "/api/v1/plans/{spare_plan}/archive/", "object"),
    Case("plans-run", "post", "/api/v1/plans/{plan}/run/", "object", None, 202),
    Case("runs-list", "get", "/api/v1/runs/", "list"),
    Case("runs-retrieve", "get", "/api/v1/runs/{run}/", "object"),
    Case("results-list", "get", "/api/v1/results/", "list"),
    Case("results-retrieve", "get", "/api/v1/results/{result}/", "object"),
    Case("results-diff", "get", "/api/v1/results/{result}/diff/", "object"),
    Case("price-books-list", "get", "/api/v1/price-books/", "list"),
    Case(
        "price-books-publish",
        "post",
        "/api/v1/price-books/",
        "create",
        lambda ids: {
            "team": ids["alpha"],
            "name": "q4",
            "entries": [{"kind": "electricity", "key": "quebec", "value": 0.04}],
        },
        201,
    ),
    Case("price-books-retrieve", "get", "/api/v1/price-books/{book}/", "object"),
    Case("compare", "get", "/api/v1/compare/?plans={plan}", "object"),
    Case("compare-results", "get", "/api/v1/compare/?results={result}", "object"),
    Case("catalog", "get", "/api/v1/catalog/", "open"),
    Case("catalog-kind", "get", "/api/v1/catalog/accelerators/", "open"),
    Case("catalog-entry", "get", "/api/v1/catalog/accelerators/h100-sxm/", "open"),
    Case(
        "solve",
        "post",
        "/api/v1/solve/",
        "open",
        lambda ids: {"schema_version": 1, "model": {"preset": "llama3-8b"}},
    ),
]


def fingerprint() -> dict[str, list[dict[str, Any]]]:
    """Every stored row the API can change (token use times excluded: reading with a token stamps them)."""
    from scenarios import models as m

    tables: dict[str, Any] = {
        "team": m.Team,
        "membership": m.Membership,
        "cluster": m.ClusterScenario,
        "model": m.ModelScenario,
        "site": m.SiteScenario,
        "cluster_rev": m.ClusterRevision,
        "model_rev": m.ModelRevision,
        "site_rev": m.SiteRevision,
        "plan": m.Plan,
        "run": m.Run,
        "result": m.Result,
        "book": m.PriceBook,
        "entry": m.PriceEntry,
    }
    out = {name: list(model.objects.order_by("pk").values()) for name, model in tables.items()}
    out["token"] = list(
        ApiToken.objects.order_by("pk").values("pk", "user_id", "team_id", "revoked_at", "key_hash")
    )
    return out


def call(client: Any, case: Case, ids: dict[str, int]) -> Any:
    path = case.path.format(**ids)
    body = case.body(ids) if case.body else None
    return (
        getattr(client, case.method)(path, body, format="json")
        if body is not None
        else getattr(client, case.method)(path)
    )


def ids_in(response: Any) -> set[int]:
    return {row["id"] for row in response.json()["results"]}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_member_of_the_owning_team_succeeds(world: World, objects: Objects, case: Case) -> None:
    response = call(world.alice.client, case, objects.ids)
    expected = case.member_status if isinstance(case.member_status, tuple) else (case.member_status,)
    assert response.status_code in expected, response.content[:500]


@pytest.mark.parametrize("persona", ["mallory", "nobody"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outsiders_neither_see_nor_change_the_teams_rows(
    world: World, objects: Objects, case: Case, persona: str
) -> None:
    client = getattr(world, persona).client
    before = fingerprint()
    response = call(client, case, objects.ids)
    if case.kind == "open":
        assert response.status_code < 300, response.content[:500]
        return
    if case.kind == "object":
        assert response.status_code == 404, response.content[:500]
    elif case.kind == "list":
        assert response.status_code == 200
        alpha_ids = {
            "teams-list": {objects.ids["alpha"]},
            "tokens-list": {objects.ids["team_token"]},
            "plans-list": {objects.ids["plan"], objects.ids["spare_plan"]},
            "runs-list": {objects.ids["run"]},
            "results-list": {objects.ids["result"]},
            "price-books-list": {objects.ids["book"]},
            "clusters-list": {objects.ids["cluster"], objects.ids["spare_cluster"]},
            "models-list": {objects.ids["model"], objects.ids["spare_model"]},
            "sites-list": {objects.ids["site"], objects.ids["spare_site"]},
        }[case.name]
        assert not ids_in(response) & alpha_ids
    elif case.kind == "create":
        assert response.status_code == 400, response.content[:500]
        assert any(e["path"] == "team" for e in response.json()["errors"])
    assert fingerprint() == before


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_anonymous_is_401_and_changes_nothing(world: World, objects: Objects, case: Case) -> None:
    before = fingerprint()
    response = call(world.anonymous, case, objects.ids)
    assert response.status_code == 401, response.content[:500]
    assert fingerprint() == before


WRITES = [c for c in CASES if c.method != "get" and c.kind in {"object", "create"}]
MEMBER_ADMIN_WRITES = {"teams-patch", "members-create", "members-patch", "members-delete", "tokens-revoke"}


@pytest.mark.parametrize("case", WRITES, ids=[c.name for c in WRITES])
def test_viewer_reads_but_cannot_write(world: World, objects: Objects, case: Case) -> None:
    before = fingerprint()
    response = call(world.bob.client, case, objects.ids)
    # A viewer cannot see carol's token (it is not theirs and they are not an admin): 404, not 403.
    expected = 404 if case.name == "tokens-revoke" else 403
    assert response.status_code == expected, response.content[:500]
    assert fingerprint() == before


@pytest.mark.parametrize("case", WRITES, ids=[c.name for c in WRITES])
def test_editor_writes_scenarios_but_admin_manages_members(
    world: World, objects: Objects, case: Case
) -> None:
    response = call(world.carol.client, case, objects.ids)
    if case.name in MEMBER_ADMIN_WRITES - {"tokens-revoke"}:
        assert response.status_code == 403, response.content[:500]
    else:
        expected = case.member_status if isinstance(case.member_status, tuple) else (case.member_status,)
        assert response.status_code in expected, response.content[:500]


def test_lists_of_a_viewer_show_the_teams_rows(world: World, objects: Objects) -> None:
    plans = world.bob.client.get("/api/v1/plans/").json()["results"]
    assert {p["id"] for p in plans} == {objects.ids["plan"], objects.ids["spare_plan"]}


def test_last_admin_cannot_leave_or_be_demoted(world: World) -> None:
    from scenarios.models import Membership

    mine = Membership.objects.get(team=world.alpha, user=world.alice.user)
    url = f"/api/v1/teams/{world.alpha.pk}/members/{mine.pk}/"
    assert world.alice.client.patch(url, {"role": "viewer"}, format="json").status_code == 400
    assert world.alice.client.delete(url).status_code == 400
    assert Membership.objects.get(pk=mine.pk).role == "admin"
