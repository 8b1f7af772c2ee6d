"""Bad input that used to be a 500 or a wrong answer: each is a 400 naming the field path and the rule, and
nothing stored changes.

* a lone UTF-16 surrogate (JSON ``"\\ud800"``) in a key or a value of any body: scenario documents, plans,
  the stateless solve, search spaces, sweep axes;
* a charset naming a codec that is not a text encoding (``zlib``, ``base64``, ...);
* sweep values the solver refuses on their own (wrong type, out of range, unknown key or preset), found
  before the sweep is queued, while values that fail only in combination stay rows of the sweep.

Bodies are sent as raw JSON text so that the escapes really reach the server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scenarios.models import ClusterRevision, ModelRevision, Plan, Run, SiteRevision
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

LONE = "__lone__"  # replaced by the JSON escape \ud800 in the raw body
PAIR = "__pair__"  # replaced by the escaped pair \ud83d\ude80 (one character, U+1F680)
SCENARIO: dict[str, Any] = {
    "schema_version": 1,
    "model": f.MODEL_DOC,
    "cluster": f.CLUSTER_DOC,
    "site": f.SITE_DOC,
    "training": f.TRAINING,
    "economics": f.ECONOMICS,
}


@pytest.fixture
def env(world: World) -> dict[str, Any]:
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user)
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="target", trio=trio)
    return {"world": world, "trio": trio, "plan": plan}


def raw_with_lone_surrogate(body: dict[str, Any]) -> str:
    raw = json.dumps(body).replace(LONE, "\\ud800").replace(PAIR, "rocket \\ud83d\\ude80")
    assert "\\ud800" in raw
    return raw


def stored_state() -> list[Any]:
    """Every stored document and the runs, to show that a refused request changed nothing."""
    return [
        sorted(ClusterRevision.objects.values_list("id", "document")),
        sorted(ModelRevision.objects.values_list("id", "document")),
        sorted(SiteRevision.objects.values_list("id", "document")),
        sorted(Plan.objects.values_list("id", "name", "training", "economics")),
        Run.objects.count(),
    ]


def _target(env: dict[str, Any], target: str) -> str:
    cluster, model, _site = env["trio"]
    plan = env["plan"]
    urls = {
        "solve": "/api/v1/solve/",
        "sites": "/api/v1/sites/",
        "clusters": "/api/v1/clusters/",
        "model-update": f"/api/v1/models/{model.pk}/",
        "cluster-update": f"/api/v1/clusters/{cluster.pk}/",
        "plans": "/api/v1/plans/",
        "plan-update": f"/api/v1/plans/{plan.pk}/",
        "search": f"/api/v1/plans/{plan.pk}/search/",
        "sweep": f"/api/v1/plans/{plan.pk}/sweep/",
    }
    return urls[target]


def _plan_body(env: dict[str, Any], training: dict[str, Any]) -> dict[str, Any]:
    cluster, model, site = env["trio"]
    return {
        "name": "new",
        "cluster": cluster.pk,
        "model": model.pk,
        "site": site.pk,
        "training": training,
        "economics": f.ECONOMICS,
    }


# (target, body builder, the JSON path the 400 must name)
SURROGATE_CASES: list[tuple[str, Any, str]] = [
    # The name before it holds an astral character escaped as a (valid) surrogate pair: only the lone
    # half after it is refused.
    (
        "solve",
        lambda env: {"name": PAIR, **SCENARIO, "cluster": {**f.CLUSTER_DOC, "name": LONE}},
        "cluster.name",
    ),
    ("solve", lambda env: {**SCENARIO, "cluster": {**f.CLUSTER_DOC, LONE: 1}}, "cluster.\\ud800"),
    ("sites", lambda env: {"name": "s2", "document": {"region": LONE}}, "document.region"),
    ("sites", lambda env: {"name": "s2", "document": {LONE: "quebec"}}, "document.\\ud800"),
    ("clusters", lambda env: {"name": f"c{LONE}x", "document": f.CLUSTER_DOC}, "name"),
    ("cluster-update", lambda env: {"document": {**f.CLUSTER_DOC, "name": LONE}}, "document.name"),
    ("model-update", lambda env: {"description": LONE}, "description"),
    ("plans", lambda env: _plan_body(env, {**f.TRAINING, "precision": LONE}), "training.precision"),
    ("plan-update", lambda env: {"economics": {LONE: 3}}, "economics.\\ud800"),
    ("search", lambda env: {"space": {"tp": [LONE]}}, "space.tp[0]"),
    ("search", lambda env: {"space": {LONE: [1]}}, "space.\\ud800"),
    ("sweep", lambda env: {"axes": [{"field": f"cluster.{LONE}", "values": [1]}]}, "axes[0].field"),
    (
        "sweep",
        lambda env: {"axes": [{"field": "site.region", "values": ["quebec", LONE]}]},
        "axes[0].values[1]",
    ),
]


@pytest.mark.parametrize(
    ("target", "body", "path"),
    SURROGATE_CASES,
    ids=[f"{target}:{path}" for target, _, path in SURROGATE_CASES],
)
def test_a_lone_surrogate_is_a_400_naming_its_json_path(
    env: dict[str, Any], django_capture_on_commit_callbacks: Any, target: str, body: Any, path: str
) -> None:
    client = env["world"].alice.client
    before = stored_state()
    method = client.patch if target.endswith("-update") else client.post
    with django_capture_on_commit_callbacks() as callbacks:
        response = method(
            _target(env, target), data=raw_with_lone_surrogate(body(env)), content_type="application/json"
        )
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == [path], errors
    assert "unpaired UTF-16 surrogate \\ud800" in errors[0]["message"]
    assert stored_state() == before and callbacks == []


@pytest.mark.parametrize("charset", ["zlib", "bz2", "base64", "hex", "rot13", "uu", "punycode"])
def test_a_charset_that_is_not_a_text_encoding_is_a_400(env: dict[str, Any], charset: str) -> None:
    """The charset is the client's to name; a bytes-to-bytes codec must not run on the body (a zlib or bz2
    body would be inflated; the others fail with errors of their own)."""
    response = env["world"].alice.client.post(
        "/api/v1/solve/", data=json.dumps(SCENARIO), content_type=f"application/json; charset={charset}"
    )
    assert response.status_code == 400, response.content[:300]
    assert [e["path"] for e in response.json()["errors"]] == ["body"]


# --- Non-finite numbers: the field's path, not "body" ---------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
@pytest.mark.parametrize(
    ("target", "body", "path"),
    [
        ("solve", {**SCENARIO, "training": {**f.TRAINING, "total_tokens": LONE}}, "training.total_tokens"),
        ("sites", {"name": "s2", "document": {"region": "quebec", "pue": LONE}}, "document.pue"),
        ("search", {"space": {"tp": [1, LONE]}}, "space.tp[1]"),
        ("sweep", {"axes": [{"field": "site.pue", "values": [1.1, LONE]}]}, "axes[0].values[1]"),
    ],
)
def test_a_non_finite_number_is_refused_with_the_field_path(
    env: dict[str, Any], target: str, body: dict[str, Any], path: str, literal: str
) -> None:
    before = stored_state()
    raw = json.dumps(body).replace(json.dumps(LONE), literal)
    response = env["world"].alice.client.post(_target(env, target), data=raw, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert [e["path"] for e in response.json()["errors"]] == [path], response.json()
    assert stored_state() == before


def test_an_integer_too_long_to_convert_is_refused_with_the_field_path(env: dict[str, Any]) -> None:
    """Python refuses to convert integer literals over 4,300 digits at all; the field is still named."""
    raw = json.dumps({**SCENARIO, "cluster": {**f.CLUSTER_DOC, "gpus": LONE}}).replace(
        json.dumps(LONE), "9" * 5000
    )
    response = env["world"].alice.client.post("/api/v1/solve/", data=raw, content_type="application/json")
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["cluster.gpus"]


# --- Sweep values: validated whole before the 202 -------------------------------------------------------


def _sweep(env: dict[str, Any], body: dict[str, Any], callbacks_fixture: Any) -> tuple[Any, list[Any]]:
    with callbacks_fixture() as callbacks:
        response = env["world"].carol.client.post(_target(env, "sweep"), body, format="json")
    return response, callbacks


@pytest.mark.parametrize(
    ("axes", "expected"),
    [
        (
            [{"field": "cluster.gpus", "values": ["many", True]}],
            [
                ("axes[0].values[0]", "cluster.gpus: must be an integer, got string"),
                ("axes[0].values[1]", "cluster.gpus: must be an integer, got boolean"),
            ],
        ),
        (
            [{"field": "site.pue", "values": [1.1, 0.5, 1.3]}],
            [("axes[0].values[1]", "site.pue: must be >= 1, got 0.5")],
        ),
        (
            [
                {"field": "site.region", "values": ["quebec", "atlantis"]},
                {"field": "cluster.gpus", "values": [64, 128]},
            ],
            [("axes[0].values[1]", "site.region: unknown region 'atlantis'")],
        ),
        (
            [{"field": "cluster.scale_out", "values": [{"bandwidth_gb_s": 50}, {"bandwith_gb_s": 50}]}],
            [
                (
                    "axes[0].values[1].bandwith_gb_s",
                    "cluster.scale_out.bandwith_gb_s: unknown field (did you mean 'bandwidth_gb_s'?)",
                )
            ],
        ),
        (
            [{"field": "site.pue", "range": {"start": 0.5, "stop": 1.5, "step": 0.5}}],
            [("axes[0].range", "site.pue: must be >= 1, got 0.5 (value 1 of the range)")],
        ),
        # Values that fail only in combination are rows, not refusals: 12 GPUs are a partial node of 8
        # but whole nodes of 4 (only the (12, 8) point fails); "many" fails everywhere.
        (
            [
                {"field": "cluster.gpus", "values": [12, 64, "many"]},
                {"field": "cluster.gpus_per_node", "values": [4, 8]},
            ],
            [("axes[0].values[2]", "cluster.gpus: must be an integer, got string")],
        ),
        # fp8 is refused (at training.precision) on an A100 only: a rule across parts, in combination.
        (
            [
                {"field": "training.precision", "values": ["bf16", "fp8", "fp4"]},
                {"field": "cluster.accelerator", "values": ["h100-sxm", "a100-sxm-80gb"]},
            ],
            [
                (
                    "axes[0].values[2]",
                    "training.precision: must be one of bf16, fp16, fp8, fp32; got 'fp4' (did you mean 'fp8'?)",
                )
            ],
        ),
    ],
    ids=[
        "types",
        "out-of-range",
        "unknown-preset",
        "unknown-key-inside",
        "range",
        "node-size-combination-is-a-row",
        "precision-combination-is-a-row",
    ],
)
def test_a_sweep_value_the_solver_refuses_is_a_400_naming_it(
    env: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    axes: list[dict[str, Any]],
    expected: list[tuple[str, str]],
) -> None:
    before = stored_state()
    response, callbacks = _sweep(env, {"axes": axes}, django_capture_on_commit_callbacks)
    assert response.status_code == 400, response.json()
    assert [(e["path"], e["message"]) for e in response.json()["errors"]] == expected
    assert stored_state() == before and callbacks == []


def test_many_refused_values_are_listed_up_to_a_bound(
    env: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    axes = [{"field": "cluster.gpus", "values": [str(n) for n in range(1000)]}]
    response, callbacks = _sweep(env, {"axes": axes}, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e["path"] for e in errors[:20]] == [f"axes[0].values[{i}]" for i in range(20)]
    assert errors[20:] == [{"path": "axes", "message": "and 980 more refused values not listed"}]
    assert Run.objects.count() == 0 and callbacks == []


def test_a_sweep_whose_points_break_too_many_rules_is_refused_without_checking_them_all(
    env: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    """3,000 unknown keys in one value, swept against 100 others: 300,000 broken rules to find, each with
    its did-you-mean search. The check stops past 20,000 and refuses the sweep naming the first point."""
    junk = {f"key{i}": 1 for i in range(3000)}
    axes = [
        {"field": "cluster.scale_out", "values": [junk]},
        {"field": "site.pue", "range": {"start": 1.0, "stop": 1.99, "step": 0.01}},
    ]
    response, callbacks = _sweep(env, {"axes": axes}, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == ["axes"]
    assert errors[0]["message"].startswith(
        "the points of the sweep break more than 20,000 rules between them (checked 7 of 100 points); point 0"
    )
    assert "cluster.scale_out.key0: unknown field" in errors[0]["message"]
    assert Run.objects.count() == 0 and callbacks == []


def test_a_sweep_with_no_valid_point_is_refused_naming_axes(
    env: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    """Sweeping a field of a section the preset fills (moe of a dense model) leaves every point without
    the section's required fields: the run could only store errors."""
    axes = [{"field": "model.moe.moe_layers", "values": [1, 2]}]
    response, callbacks = _sweep(env, {"axes": axes}, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == ["axes"]
    assert errors[0]["message"].startswith("no point of the sweep is a valid scenario; point 0")
    assert "model.moe.experts: required" in errors[0]["message"]
    assert Run.objects.count() == 0 and callbacks == []


# --- Search and sweep options: JSON types as sent -------------------------------------------------------


@pytest.mark.parametrize("job", ["search", "sweep"])
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # A string is not taken for the list of its characters (six errors, one per letter).
        ({"pareto": "step_s"}, [("pareto", "must be a list of metric names")]),
        # A number is not turned into the text '5' and refused for a value the client never sent.
        ({"objective": 5}, [("objective", "Not a valid string.")]),
    ],
    ids=["pareto-string", "objective-number"],
)
def test_search_and_sweep_options_of_the_wrong_json_type_are_named_as_sent(
    env: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    job: str,
    options: dict[str, Any],
    expected: list[tuple[str, str]],
) -> None:
    body = {**options, **({"axes": [{"field": "site.pue", "values": [1.1]}]} if job == "sweep" else {})}
    with django_capture_on_commit_callbacks() as callbacks:
        response = env["world"].carol.client.post(_target(env, job), body, format="json")
    assert response.status_code == 400
    assert [(e["path"], e["message"]) for e in response.json()["errors"]] == expected
    assert Run.objects.count() == 0 and callbacks == []


# --- A plan whose layout no solve accepts (an engine rule, or nothing fits): refused when stored --------


@pytest.mark.parametrize(
    ("layout", "path", "rule"),
    [
        ({"tp": 64}, "training.layout.tp", "must divide model.heads (=32), got 64"),
        ({"tp": 2, "microbatch_seqs": 3}, "training.layout.microbatch_seqs", "(=3)"),
        ("auto", "training.layout", "fits in memory"),  # with a 405B model: 6.5 TB of state, 5.1 TB of HBM
    ],
)
@pytest.mark.parametrize("target", ["plans", "plan-update"])
def test_a_plan_whose_layout_no_solve_accepts_is_a_400_and_nothing_is_stored(
    env: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
    target: str,
    layout: dict[str, Any] | str,
    path: str,
    rule: str,
) -> None:
    """Every solve of such a plan would fail: the rule is named when the plan is created or changed."""
    given = layout if isinstance(layout, str) else {**f.TRAINING["layout"], **layout}
    training = {**f.TRAINING, "layout": given}
    body = _plan_body(env, training) if target == "plans" else {"training": training}
    client = env["world"].alice.client
    if layout == "auto":
        from scenarios import services

        world = env["world"]
        big = services.scenario_create(
            kind="model",
            team=world.alpha,
            name="405b",
            document={"preset": "llama3-405b"},
            user=world.alice.user,
        )
        body["model"] = big.pk
    before = stored_state()
    method = client.patch if target.endswith("-update") else client.post
    with django_capture_on_commit_callbacks() as callbacks:
        response = method(_target(env, target), body, format="json")
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == [path], errors
    assert rule in errors[0]["message"], errors
    assert stored_state() == before and callbacks == []


def test_a_plan_a_new_revision_made_unsolvable_can_be_renamed_but_not_changed_in_what_it_solves(
    env: dict[str, Any],
) -> None:
    """A label change (name, description, auto_rerun) solves nothing, so it is not checked again; a change to
    what is solved is, against the scenarios' revisions of now."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    cluster, _model, _site = env["trio"]
    # 48 GPUs at tp 2: 24 data-parallel ranks, which the batch of 512 sequences does not split into
    services.scenario_update(scenario=cluster, user=world.alice.user, document={**f.CLUSTER_DOC, "gpus": 48})
    client = world.alice.client
    url = _target(env, "plan-update")
    renamed = client.patch(url, {"name": "renamed", "auto_rerun": True}, format="json")
    assert renamed.status_code == 200, renamed.content[:300]
    before = stored_state()
    changed = client.patch(url, {"training": {**f.TRAINING, "total_tokens": 2.0e12}}, format="json")
    assert changed.status_code == 400, changed.content[:300]
    assert [e["path"] for e in changed.json()["errors"]] == ["training.layout.microbatch_seqs"]
    assert stored_state() == before
    plan.refresh_from_db()
    assert plan.name == "renamed" and plan.training == f.TRAINING


# --- A new revision of a scenario: the plans that follow it are checked, the edit is kept -----------------


def _following_plans(response: Any) -> Any:
    assert response.status_code == 200, response.content[:300]
    return response.json()["following_plans"]


def test_a_cluster_edit_names_each_following_plan_that_no_longer_solves_and_keeps_the_edit(
    env: dict[str, Any],
) -> None:
    """64 -> 48 GPUs at tp 2 leaves 24 data-parallel ranks, which the plan's batch of 512 sequences does not
    split into: the PATCH is a 200 that stores revision 2 and names the plan with the rule; a plan pinned to
    revision 1 is not moved, so it is neither counted nor checked; an archived plan is left out."""
    from scenarios import services

    world, plan = env["world"], env["plan"]
    cluster, model, site = env["trio"]
    pinned = services.plan_create(
        team=world.alpha,
        user=world.alice.user,
        name="pinned",
        cluster=cluster,
        cluster_revision=cluster.latest_revision,
        model=model,
        site=site,
        training=f.TRAINING,
    )
    archived = f.plan_for(team=world.alpha, user=world.alice.user, name="archived", trio=env["trio"])
    services.plan_archive(plan=archived, user=world.alice.user)
    response = world.alice.client.patch(
        _target(env, "cluster-update"), {"document": {**f.CLUSTER_DOC, "gpus": 48}}, format="json"
    )
    check = _following_plans(response)
    assert check["following"] == 1 and check["checked"] == 1, check
    [row] = check["unsolvable"]
    assert (row["id"], row["name"]) == (plan.pk, "target")
    assert [e["path"] for e in row["errors"]] == ["training.layout.microbatch_seqs"], row
    assert row["errors"][0]["message"] == (
        "global batch (=512 sequences) must divide into dp (=24) x microbatch_seqs (=1)"
    )
    cluster.refresh_from_db()
    assert cluster.latest_revision.number == 2 and cluster.latest_revision.document["gpus"] == 48
    assert response.json()["revision"] == 2 and pinned.pk not in {r["id"] for r in check["unsolvable"]}
    # the rule named is the one a run of the plan now fails on
    from solvers import ScenarioError

    with pytest.raises(ScenarioError) as refused:
        services.validate_plan_document(Plan.objects.get(pk=plan.pk))
    assert [(e.path, e.message) for e in refused.value.errors] == [
        (e["path"], e["message"]) for e in row["errors"]
    ]


def test_a_scenario_edit_that_every_plan_still_solves_lists_none_and_a_rename_checks_nothing(
    env: dict[str, Any],
) -> None:
    world = env["world"]
    url = _target(env, "cluster-update")
    more = _following_plans(
        world.alice.client.patch(url, {"document": {**f.CLUSTER_DOC, "gpus": 128}}, format="json")
    )
    assert more == {"following": 1, "checked": 1, "unsolvable": []}
    renamed = world.alice.client.patch(url, {"name": "c-renamed"}, format="json")
    assert _following_plans(renamed) is None  # no new revision: no plan moved
    same = world.alice.client.patch(url, {"document": {**f.CLUSTER_DOC, "gpus": 128}}, format="json")
    assert _following_plans(same) is None and same.json()["revision"] == 2


def test_a_model_edit_that_breaks_an_engine_rule_is_named_and_the_check_can_be_capped(
    env: dict[str, Any], settings: Any
) -> None:
    """An engine rule (tp must divide the heads), not only a cross-part one; with the cap at 0 the plans are
    counted, not checked; out of time, no further plan is begun."""
    world = env["world"]
    url = _target(env, "model-update")
    odd_heads = {"preset": "llama3-8b", "heads": 33, "kv_heads": 33, "hidden": 4224}
    check = _following_plans(world.alice.client.patch(url, {"document": odd_heads}, format="json"))
    [row] = check["unsolvable"]
    assert [e["path"] for e in row["errors"]] == ["training.layout.tp"], row
    settings.SCENARIO_EDIT_PLAN_CHECKS = 0
    capped = _following_plans(world.alice.client.patch(url, {"document": f.MODEL_DOC}, format="json"))
    assert capped == {"following": 1, "checked": 0, "unsolvable": []}
    # out of time: the first plan is always checked, none is begun after the budget
    f.plan_for(team=world.alpha, user=world.alice.user, name="second", trio=env["trio"])
    settings.SCENARIO_EDIT_PLAN_CHECKS, settings.SCENARIO_EDIT_PLAN_CHECK_S = 100, 0.0
    timed = _following_plans(world.alice.client.patch(url, {"document": odd_heads}, format="json"))
    assert (timed["following"], timed["checked"]) == (2, 1), timed
    assert [row["name"] for row in timed["unsolvable"]] == ["second"]  # name order: "second" < "target"


def test_an_outage_while_the_plans_are_checked_stores_nothing_so_the_503_is_true(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs inside the edit's transaction: the 503 says nothing was done, and nothing was (a retry
    makes the revision and answers with its plans)."""
    from django.db import OperationalError

    from scenarios import pricing

    def unreachable(**_: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    world = env["world"]
    url = _target(env, "cluster-update")
    before = stored_state()
    with monkeypatch.context() as patched:
        patched.setattr(pricing, "sheet_for_team", unreachable)
        down = world.alice.client.patch(url, {"document": {**f.CLUSTER_DOC, "gpus": 48}}, format="json")
    assert down.status_code == 503 and "Retry-After" in down, down.content[:300]
    assert stored_state() == before
    retried = _following_plans(
        world.alice.client.patch(url, {"document": {**f.CLUSTER_DOC, "gpus": 48}}, format="json")
    )
    assert [row["name"] for row in retried["unsolvable"]] == ["target"]


def test_a_rename_racing_an_edit_reports_no_plans_and_an_edit_reports_its_own_revision(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether this request made a revision is decided under the row lock: another edit landing between the
    read of the scenario and the lock does not make a rename answer for that edit's revision."""
    from api.views.scenarios import ScenarioViewSet
    from scenarios import services

    world, cluster = env["world"], env["trio"][0]
    read = ScenarioViewSet.get_object

    def read_then_another_edit_lands(self: Any) -> Any:
        scenario = read(self)
        services.scenario_update(
            scenario=cluster, user=world.carol.user, document={**f.CLUSTER_DOC, "gpus": 48}
        )
        return scenario

    monkeypatch.setattr(ScenarioViewSet, "get_object", read_then_another_edit_lands)
    renamed = world.alice.client.patch(_target(env, "cluster-update"), {"name": "renamed"}, format="json")
    assert _following_plans(renamed) is None and renamed.json()["revision"] == 2


def test_only_the_scenarios_own_team_plans_are_checked_and_named(env: dict[str, Any]) -> None:
    """A plan of another team that follows the scenario (the schema does not tie a plan's team to its
    scenarios'; the admin can move a plan) is neither named to this team nor priced with its sheet."""
    world = env["world"]
    moved = f.plan_for(team=world.alpha, user=world.alice.user, name="beta-secret", trio=env["trio"])
    Plan.objects.filter(pk=moved.pk).update(team=world.beta)
    check = _following_plans(
        world.alice.client.patch(
            _target(env, "cluster-update"), {"document": {**f.CLUSTER_DOC, "gpus": 48}}, format="json"
        )
    )
    assert check["following"] == 1 and [row["name"] for row in check["unsolvable"]] == ["target"]


def test_a_sweep_range_with_no_countable_number_of_values_is_a_400_naming_the_range(
    env: dict[str, Any],
) -> None:
    """(stop - start) / step overflows to infinity: refused naming the range, never a 500."""
    response = env["world"].carol.client.post(
        _target(env, "sweep"),
        {"axes": [{"field": "cluster.gpus", "range": {"start": 0, "stop": 1e308, "step": 1e-10}}]},
        format="json",
    )
    assert response.status_code == 400, response.content[:300]
    assert any(e["path"].endswith("axes[0].range") for e in response.json()["errors"]), response.json()
    assert Run.objects.count() == 0
