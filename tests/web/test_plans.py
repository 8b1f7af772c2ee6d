"""The plans list (/) and a new plan (/plans/new/): team scoping, roles, filters, sort, query counts, and
creation from the presets or from a file, where a refusal is a 400 naming the field and stores nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from scenarios.models import ClusterScenario, ModelScenario, Plan, SiteScenario
from tests.api import factories as f
from tests.web.conftest import Browsers, preset_fields

pytestmark = pytest.mark.django_db

LIST = reverse("web:plans")
CREATE = reverse("web:plan-create")

# Queries of a signed-in page: session, user, the user's teams.
LIST_QUERIES = 11
CREATE_PAGE_QUERIES = 3


def stored_counts() -> tuple[int, int, int, int]:
    return (
        Plan.objects.count(),
        ClusterScenario.objects.count(),
        ModelScenario.objects.count(),
        SiteScenario.objects.count(),
    )


def alpha_plans(browsers: Browsers, n: int, *, prefix: str = "p") -> list[Any]:
    world = browsers.world
    plans = []
    for i in range(n):
        plan = f.plan_for(team=world.alpha, user=world.alice.user, name=f"{prefix}{i}")
        f.insert_result(plan=plan, scale=1.0 + i)
        plans.append(plan)
    return plans


# --- List ---------------------------------------------------------------------------------------------


def test_list_shows_the_teams_plans_with_their_figures(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 2)
    f.plan_for(team=browsers.world.beta, user=browsers.world.mallory.user, name="beta-secret")
    response = browsers.bob.get(LIST)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Plans</h1>" in html
    for plan in plans:
        assert reverse("web:plan-detail", args=[plan.pk]) in html
    assert "beta-secret" not in html
    assert "llama3-8b" in html and "h100-sxm × 64" in html and "quebec" in html
    assert "1.15 s" in html  # step time of the first plan's fake report, printed to 3 digits
    assert "$1.06 M" in html  # its TCO
    assert "Compare selected" in html
    assert 'name="plans"' in html


def test_mallory_never_sees_alphas_plans(browsers: Browsers) -> None:
    alpha_plans(browsers, 2, prefix="alpha-plan-")
    html = browsers.mallory.get(LIST).content.decode()
    assert "alpha-plan-" not in html


def test_viewer_sees_no_new_plan_button_editor_does(browsers: Browsers) -> None:
    assert "New plan" not in browsers.bob.get(LIST).content.decode()
    assert "New plan" in browsers.carol.get(LIST).content.decode()


def test_anonymous_is_sent_to_log_in(browsers: Browsers) -> None:
    response = browsers.anonymous.get(LIST)
    assert response.status_code == 302 and reverse("web:login") in response["Location"]


def test_search_filter_and_sort(browsers: Browsers) -> None:
    plans = alpha_plans(browsers, 3)
    html = browsers.bob.get(LIST, {"q": "p1"}).content.decode()
    assert reverse("web:plan-detail", args=[plans[1].pk]) in html
    assert reverse("web:plan-detail", args=[plans[0].pk]) not in html

    html = browsers.bob.get(LIST, {"sort": "-total_usd"}).content.decode()
    positions = [html.index(f">{plan.name}</a>") for plan in plans]
    assert positions == sorted(positions, reverse=True)  # the largest TCO first
    assert 'aria-sort="descending"' in html

    # Fake reports have no memory section: neither fits nor does-not-fit matches them.
    html = browsers.bob.get(LIST, {"fits": "yes"}).content.decode()
    assert "No plans match." in html
    # Fake results were made by solver "test": none is current.
    html = browsers.bob.get(LIST, {"current": "no"}).content.decode()
    assert all(f">{plan.name}</a>" in html for plan in plans)
    assert "No plans match." in browsers.bob.get(LIST, {"current": "yes"}).content.decode()
    assert "No plans match." in browsers.bob.get(LIST, {"status": "running"}).content.decode()
    html = browsers.bob.get(LIST, {"status": "none"}).content.decode()
    assert all(f">{plan.name}</a>" in html for plan in plans)


def test_unknown_sort_key_is_a_400_naming_the_parameter(browsers: Browsers) -> None:
    response = browsers.bob.get(LIST, {"sort": "colour"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "sort: unknown sort key" in html and "colour" in html
    response = browsers.bob.get(LIST, {"status": "sleeping"})
    assert response.status_code == 400 and "status:" in response.content.decode()


def count_list_queries(client: Any, django_assert_num_queries: Any, params: dict[str, str]) -> None:
    client.get(LIST, params)
    with django_assert_num_queries(LIST_QUERIES):
        assert client.get(LIST, params).status_code == 200


@pytest.mark.parametrize("n", [2, 10])
def test_list_query_count_does_not_grow_with_plans(
    browsers: Browsers, django_assert_num_queries: Any, n: int
) -> None:
    alpha_plans(browsers, n)
    count_list_queries(browsers.bob, django_assert_num_queries, {})
    count_list_queries(browsers.bob, django_assert_num_queries, {"sort": "-step_s", "q": "p"})


@pytest.mark.parametrize("n", [2, 10])
def test_list_filtered_by_currency_costs_the_same(
    browsers: Browsers, django_assert_num_queries: Any, n: int
) -> None:
    alpha_plans(browsers, n)
    browsers.bob.get(LIST, {"current": "no"})
    # A fixed handful more: the ids of every matching plan and their results' currency, which decides
    # which plans are listed.
    with django_assert_num_queries(LIST_QUERIES + 7):
        assert browsers.bob.get(LIST, {"current": "no"}).status_code == 200


# --- New plan -----------------------------------------------------------------------------------------


def test_viewer_gets_403_on_the_create_page_and_its_post(browsers: Browsers) -> None:
    assert browsers.bob.get(CREATE).status_code == 403
    before = stored_counts()
    response = browsers.bob.post(CREATE, {"form": "preset", "name": "nope", **preset_fields()})
    assert response.status_code == 403
    assert stored_counts() == before


def test_create_page_shows_both_forms(browsers: Browsers, django_assert_num_queries: Any) -> None:
    browsers.carol.get(CREATE)
    with django_assert_num_queries(CREATE_PAGE_QUERIES):
        response = browsers.carol.get(CREATE)
    html = response.content.decode()
    assert "<h1>New plan</h1>" in html
    for text in (
        "Name",
        "Model",
        "Node",
        "GPUs",
        "Region",
        "Tokens to train",
        "Sequence length",
        "Global batch (tokens)",
        "Scenario file (YAML or JSON)",
        "Create plan",
        "Create from file",
    ):
        assert text in html, text


def test_preset_creation_stores_three_scenarios_and_a_plan(browsers: Browsers) -> None:
    before = stored_counts()
    response = browsers.carol.post(CREATE, {"form": "preset", "name": "Llama small", **preset_fields(tp="2")})
    plan = Plan.objects.get(name="Llama small")
    assert response.status_code == 302
    assert response["Location"] == reverse("web:plan-detail", args=[plan.pk])
    assert stored_counts() == tuple(n + 1 for n in before)
    assert plan.team_id == browsers.world.alpha.pk
    assert plan.cluster.name == "Llama small cluster" and plan.cluster.document == {
        "node": "dgx-h100",
        "gpus": 64,
    }
    assert plan.model.document == {"preset": "llama3-8b"} and plan.site.document == {"region": "quebec"}
    assert plan.training["layout"] == {"tp": 2}
    page = browsers.carol.get(response["Location"]).content.decode()
    assert "created" in page  # the success message


def test_preset_creation_query_count(browsers: Browsers, django_assert_num_queries: Any) -> None:
    browsers.carol.get(CREATE)
    # 27, plus one audit-log INSERT for each object created: the cluster, model and site scenarios and the plan,
    # plus four for the plan's foreign keys checked at its save (a savepoint, SET CONSTRAINTS twice, its release).
    with django_assert_num_queries(35):
        response = browsers.carol.post(CREATE, {"form": "preset", "name": "counted", **preset_fields()})
    assert response.status_code == 302


def test_preset_refusal_names_the_field_and_stores_nothing(browsers: Browsers) -> None:
    before = stored_counts()
    response = browsers.carol.post(CREATE, {"form": "preset", "name": "bad", **preset_fields(gpus="-8")})
    assert response.status_code == 400
    html = response.content.decode()
    assert "cluster.gpus: must be &gt;= 1" in html
    assert stored_counts() == before
    response = browsers.carol.post(CREATE, {"form": "preset", "name": "bad", **preset_fields(tp="3")})
    assert response.status_code == 400 and "training.layout" in response.content.decode()
    assert stored_counts() == before


def test_duplicate_name_is_refused_next_to_the_name(browsers: Browsers) -> None:
    browsers.carol.post(CREATE, {"form": "preset", "name": "twice", **preset_fields()})
    before = stored_counts()
    response = browsers.carol.post(CREATE, {"form": "preset", "name": "twice", **preset_fields()})
    assert response.status_code == 400
    assert "already used" in response.content.decode()
    assert stored_counts() == before


def upload(client: Any, content: str | bytes, *, name: str = "", filename: str = "plan.yaml") -> Any:
    data = content.encode() if isinstance(content, str) else content
    return client.post(
        CREATE,
        {"form": "upload", "upload-name": name, "upload-file": SimpleUploadedFile(filename, data)},
    )


QUICKSTART = """
name: Quick start
model: {preset: llama3-8b}
cluster: {node: dgx-h100, gpus: 64}
training:
  total_tokens: 1.0e12
  layout: {tp: 1, pp: 1, zero_stage: 1, recompute: selective}
site: {region: us-average}
economics: {amortization_years: 4}
"""


def test_upload_yaml_creates_the_plan_named_by_the_file(browsers: Browsers) -> None:
    before = stored_counts()
    response = upload(browsers.carol, QUICKSTART)
    assert response.status_code == 302, response.content.decode()[:2000]
    plan = Plan.objects.get(name="Quick start")
    assert stored_counts() == tuple(n + 1 for n in before)
    assert plan.training["total_tokens"] == 1.0e12 and plan.economics == {"amortization_years": 4}
    assert plan.site.document == {"region": "us-average"}


def test_upload_json_with_a_name_given(browsers: Browsers) -> None:
    document = {
        "model": f.MODEL_DOC,
        "cluster": f.CLUSTER_DOC,
        "site": f.SITE_DOC,
        "training": f.TRAINING,
        "economics": f.ECONOMICS,
    }
    response = upload(browsers.carol, json.dumps(document), name="From JSON", filename="plan.json")
    assert response.status_code == 302
    assert Plan.objects.filter(name="From JSON").exists()


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("model: {preset: llama3-8b\ncluster: [", "not valid JSON or YAML"),
        (QUICKSTART + "colour: blue\n", "colour: unknown field"),
        (QUICKSTART.replace("gpus: 64", "gpus: -64"), "cluster.gpus: must be &gt;= 1"),
        (QUICKSTART.replace("gpus: 64", "gpus: .nan"), "cluster.gpus"),
        ("- just\n- a list\n", "must hold a scenario document"),
        # an engine rule (llama3-8b has 32 heads) that resolving alone would leave to the first solve
        (QUICKSTART.replace("tp: 1, pp: 1", "tp: 64, pp: 1"), "training.layout.tp: must divide model.heads"),
    ],
    ids=["invalid-yaml", "unknown-field", "negative-gpus", "nan-gpus", "not-a-mapping", "tp-over-heads"],
)
def test_bad_upload_is_a_400_naming_the_field_and_stores_nothing(
    browsers: Browsers, content: str, named: str
) -> None:
    before = stored_counts()
    response = upload(browsers.carol, content)
    assert response.status_code == 400
    html = response.content.decode()
    assert named in html, html[html.find("refused") :][:800]
    assert stored_counts() == before


def test_upload_without_any_name_is_refused(browsers: Browsers) -> None:
    response = upload(browsers.carol, QUICKSTART.replace("name: Quick start\n", ""))
    assert response.status_code == 400
    assert "name: required" in response.content.decode()


def test_upload_that_is_not_text_is_refused(browsers: Browsers) -> None:
    response = upload(browsers.carol, b"\xff\xfe\x00bad")
    assert response.status_code == 400 and "not UTF-8 text" in response.content.decode()
