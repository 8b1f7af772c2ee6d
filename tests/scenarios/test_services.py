"""Scenario, plan and run workflows."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from scenarios import execution, services
from scenarios.errors import ScenarioInUse
from scenarios.models import ClusterRevision, ClusterScenario, Result, Run
from tests.scenarios.factories import CLUSTER_H100, TRAINING, make_plan, make_scenario, make_team, make_user

pytestmark = pytest.mark.django_db


def test_scenario_edit_makes_a_new_revision_and_keeps_history() -> None:
    user = make_user()
    team = make_team(owner=user)
    cluster = make_scenario(kind="cluster", team=team, document=CLUSTER_H100, user=user)
    assert cluster.latest_revision.number == 1
    services.scenario_update(scenario=cluster, user=user, document={**CLUSTER_H100, "gpus": 128})
    services.scenario_update(scenario=cluster, user=user, description="only the label changes")
    cluster.refresh_from_db()
    revisions = list(ClusterRevision.objects.filter(scenario=cluster).order_by("number"))
    assert [(r.number, r.document["gpus"]) for r in revisions] == [(1, 64), (2, 128)]
    assert cluster.latest_revision == revisions[-1] and cluster.description == "only the label changes"
    assert revisions[-1].created_by == user


def test_scenario_document_is_validated_by_the_solver_schema() -> None:
    from solvers import ScenarioError

    team = make_team()
    with pytest.raises(ScenarioError) as err:
        make_scenario(kind="cluster", team=team, document={"accelerator": "h100-sxm", "gpus": -8})
    assert any(e.path.startswith("cluster.gpus") for e in err.value.errors)
    with pytest.raises(ValidationError) as bad_kind:
        services.scenario_create(kind="rack", team=team, name="r", document={}, user=None)
    assert "kind" in bad_kind.value.message_dict


def test_live_names_are_unique_per_team_but_archive_frees_the_name() -> None:
    team = make_team()
    first = make_scenario(kind="site", team=team, document={"region": "quebec"}, name="dc1")
    with pytest.raises(ValidationError) as err:
        make_scenario(kind="site", team=team, document={"region": "quebec"}, name="dc1")
    assert "name" in err.value.message_dict
    services.scenario_archive(scenario=first, user=None)
    make_scenario(kind="site", team=team, document={"region": "iceland"}, name="dc1")
    make_scenario(kind="site", team=make_team(), document={"region": "quebec"}, name="dc1")


def test_delete_is_refused_while_plans_or_results_depend_on_the_scenario(claim, sent) -> None:
    team = make_team()
    plan = make_plan(team=team)
    with pytest.raises(ScenarioInUse) as err:
        services.scenario_delete(scenario=plan.cluster)
    assert err.value.plans == 1 and "archive it instead" in str(err.value)
    unused = make_scenario(kind="cluster", team=team, document=CLUSTER_H100)
    services.scenario_update(scenario=unused, user=None, document={**CLUSTER_H100, "gpus": 16})
    services.scenario_delete(scenario=unused)
    assert not ClusterScenario.objects.filter(pk=unused.pk).exists()


def test_plan_validation_names_fields() -> None:
    from solvers import ScenarioError

    team, other = make_team(), make_team()
    plan = make_plan(team=team)
    foreign = make_scenario(kind="cluster", team=other, document=CLUSTER_H100)
    with pytest.raises(ValidationError) as err:
        services.plan_create(
            team=team, user=None, name="x", cluster=foreign, model=plan.model, site=plan.site
        )
    assert "cluster" in err.value.message_dict
    with pytest.raises(ValidationError) as missing:
        services.plan_create(team=team, user=None, name="x")
    assert set(missing.value.message_dict) == {"cluster", "model", "site"}
    with pytest.raises(ValidationError) as unknown:
        services.plan_update(plan=plan, user=None, colour="red")
    assert "colour" in unknown.value.message_dict
    bad_layout = {**TRAINING, "layout": {"tp": 3, "pp": 1}}
    with pytest.raises(ScenarioError) as layout_err:
        services.plan_update(plan=plan, user=None, training=bad_layout)
    assert any(e.path.startswith("training.layout") for e in layout_err.value.errors)


def test_pinned_revision_is_solved_instead_of_the_latest() -> None:
    team = make_team()
    plan = make_plan(team=team)
    first = plan.cluster.latest_revision
    services.plan_update(plan=plan, user=None, cluster_revision=first)
    services.scenario_update(scenario=plan.cluster, user=None, document={**CLUSTER_H100, "gpus": 128})
    plan.refresh_from_db()
    assert services.plan_document(plan=plan)["cluster"]["gpus"] == 64
    services.plan_update(plan=plan, user=None, cluster_revision=None)
    assert services.plan_document(plan=plan)["cluster"]["gpus"] == 128


def test_run_is_enqueued_only_when_the_request_commits(sent, django_capture_on_commit_callbacks) -> None:
    team = make_team()
    plan = make_plan(team=team)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_request(plan=plan, user=None, trigger="user")
    assert sent == [[run.pk]] and run.status == "queued" and run.team_id == team.pk
    sent.clear()
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.run_request(plan=plan, user=None)
        raise RuntimeError("request failed after the run was created")
    assert sent == [] and Run.objects.count() == 1


def test_run_request_rejects_unknown_kind_and_archived_plans() -> None:
    team = make_team()
    plan = make_plan(team=team)
    with pytest.raises(ValidationError):
        services.run_request(plan=plan, user=None, kind="optimise")
    services.plan_archive(plan=plan, user=None)
    with pytest.raises(ValidationError):
        services.run_request(plan=plan, user=None)


def test_execute_stores_version_one_with_provenance(claim, sent) -> None:
    from solvers import SOLVER_VERSION

    team = make_team()
    plan = make_plan(team=team)
    run = services.run_request(plan=plan, user=None)
    outcome = execution.run_execute(run_id=run.pk, claim=claim)
    run.refresh_from_db()
    result = Result.objects.get(runs=run)
    assert outcome.created and run.status == "succeeded" and run.attempts == 1 and run.error == ""
    assert (result.version, result.previous, result.delta) == (1, None, {})
    assert result.solver_version == SOLVER_VERSION and result.input_hash == result.report["input_hash"]
    assert result.cluster_revision == plan.cluster.latest_revision
    assert result.input_snapshot["prices"]["cluster.accelerator.unit_price_usd"]["origin"] == "catalog"
    assert (
        result.step_s == result.report["step"]["step_s"]
        and result.total_usd == result.report["tco"]["total_usd"]
    )
    plan.refresh_from_db()
    assert plan.latest_result == result


def test_the_admin_holds_a_plan_change_to_the_rule_of_the_api() -> None:
    """A plan changed in the admin must still be solvable (``services.validate_plan_document``); a label
    change is saved without a solve's check."""
    import json

    from django.forms.models import model_to_dict

    from scenarios.admin import PlanAdminForm

    team = make_team()
    plan = make_plan(team=team, name="admin")

    def form(**changes: object) -> PlanAdminForm:
        data = {k: v for k, v in model_to_dict(plan).items() if v is not None}
        data.update({"training": json.dumps(plan.training), "economics": json.dumps(plan.economics)})
        data.update(changes)
        return PlanAdminForm(data=data, instance=plan)

    over_heads = form(training=json.dumps({**TRAINING, "layout": {**TRAINING["layout"], "tp": 64}}))
    assert not over_heads.is_valid()
    assert "training.layout.tp: must divide model.heads" in str(over_heads.non_field_errors())
    plan.refresh_from_db()
    assert plan.training == TRAINING  # the row is left as it was
    relabelled = form(name="renamed", description="a label")
    assert relabelled.is_valid(), relabelled.errors
    relabelled.save()
    plan.refresh_from_db()
    assert plan.name == "renamed" and plan.training == TRAINING


def test_the_admin_holds_a_plan_to_its_teams_scenarios_as_the_api_does() -> None:
    """Moving a plan to another team in the admin would leave it on the first team's scenarios (which that
    team's editors would then be told about, priced with the wrong team's sheet): refused field by field with
    the services' own rule, as is pinning a revision of another scenario."""
    import json

    from django.forms.models import model_to_dict

    from scenarios.admin import PlanAdminForm

    team, other = make_team(), make_team()
    plan = make_plan(team=team, name="admin-team")
    stranger = make_scenario(kind="cluster", team=team, document=CLUSTER_H100)

    def form(**changes: object) -> PlanAdminForm:
        data = {k: v for k, v in model_to_dict(plan).items() if v is not None}
        data.update({"training": json.dumps(plan.training), "economics": json.dumps(plan.economics)})
        data.update(changes)
        return PlanAdminForm(data=data, instance=plan)

    moved = form(team=other.pk)
    assert not moved.is_valid()
    assert set(moved.errors) == {"cluster", "model", "site"}, moved.errors
    assert "no such ClusterScenario in this team" in str(moved.errors["cluster"])
    plan.refresh_from_db()  # a bound ModelForm writes its values onto its instance (not the row) as it cleans
    pinned = form(cluster_revision=stranger.latest_revision.pk)
    assert not pinned.is_valid() and "is not a revision of cluster" in str(pinned.errors["cluster_revision"])
    plan.refresh_from_db()
    assert plan.team_id == team.pk and plan.cluster_revision_id is None


def test_the_admin_plan_pages_render_with_that_form(admin_client: Any) -> None:
    plan = make_plan(team=make_team(), name="shown")
    for url in ("/admin/scenarios/plan/add/", f"/admin/scenarios/plan/{plan.pk}/change/"):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert 'name="training"' in response.content.decode()


def test_the_admin_cannot_move_a_scenario_to_another_team(admin_client: Any) -> None:
    """Its team is set when it is made (through the API or the dashboard: the admin adds none), then shown, not
    offered."""
    team, other = make_team(), make_team()
    scenario = make_scenario(kind="cluster", team=team, document=CLUSTER_H100, name="kept")
    assert admin_client.get("/admin/scenarios/clusterscenario/add/").status_code == 403
    url = f"/admin/scenarios/clusterscenario/{scenario.pk}/change/"
    assert 'name="team"' not in admin_client.get(url).content.decode()
    response = admin_client.post(url, {"name": "kept", "description": "", "team": other.pk})
    assert response.status_code == 302, response.content.decode()[:2000]
    scenario.refresh_from_db()
    assert scenario.team_id == team.pk
