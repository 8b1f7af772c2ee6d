"""History rows stay while what they belong to lives: a revision of a live scenario and an event of a live
team cannot be removed one by one, whatever code (or psql session) sends the DELETE; the database refuses it
when the transaction commits (migration 0017). A scenario nobody depends on is still deleted with its whole
history, and a team with its events."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from scenarios import services
from scenarios.models import ClusterRevision, ClusterScenario, Event, Team
from tests.scenarios.factories import CLUSTER_H100, make_plan, make_scenario, make_team

pytestmark = pytest.mark.django_db(transaction=True)  # the check runs at COMMIT


def _raw(sql: str, params: list[Any]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def _edited_three_times() -> Any:
    plan = make_plan(team=make_team())
    cluster = plan.cluster
    document = dict(cluster.latest_revision.document)
    for gpus in (128, 256):
        services.scenario_update(scenario=cluster, user=None, document={**document, "gpus": gpus})
    return ClusterScenario.objects.get(pk=cluster.pk)


def test_a_middle_revision_of_a_live_scenario_cannot_be_deleted_by_sql() -> None:
    cluster = _edited_three_times()
    middle = cluster.revisions.get(number=2)
    with pytest.raises(DatabaseError, match="is not allowed while"):
        _raw("DELETE FROM scenarios_clusterrevision WHERE id = %s", [middle.pk])
    assert sorted(cluster.revisions.values_list("number", flat=True)) == [1, 2, 3]


def test_a_revision_of_a_live_scenario_cannot_be_deleted_through_the_orm() -> None:
    cluster = _edited_three_times()
    with pytest.raises(DatabaseError), transaction.atomic():
        ClusterRevision.objects.filter(scenario=cluster, number=2).delete()
    with pytest.raises(DatabaseError), transaction.atomic():
        ClusterRevision.objects.get(scenario=cluster, number=1).delete()
    cluster.refresh_from_db()
    assert sorted(cluster.revisions.values_list("number", flat=True)) == [1, 2, 3]
    assert cluster.latest_revision is not None and cluster.latest_revision.number == 3


def test_an_unused_scenario_is_still_deleted_with_its_history() -> None:
    team = make_team()
    unused = make_scenario(kind="cluster", team=team, document=CLUSTER_H100)
    services.scenario_update(scenario=unused, user=None, document={**CLUSTER_H100, "gpus": 16})
    services.scenario_delete(scenario=unused)
    assert not ClusterScenario.objects.filter(pk=unused.pk).exists()
    assert not ClusterRevision.objects.filter(scenario_id=unused.pk).exists()


def _team_with_an_event() -> tuple[Team, Event]:
    team = make_team()
    services.price_book_publish(
        team=team,
        user=None,
        name="prices",
        entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 30000.0}],
        fan_out="none",
    )
    return team, Event.objects.filter(team=team).get()


def test_one_event_of_a_live_team_cannot_be_deleted() -> None:
    _, event = _team_with_an_event()
    with pytest.raises(DatabaseError, match="is not allowed while"):
        _raw("DELETE FROM scenarios_event WHERE id = %s", [event.pk])
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.filter(pk=event.pk).delete()
    assert Event.objects.filter(pk=event.pk).exists()


def test_a_team_is_still_deleted_with_its_events() -> None:
    team = make_team()
    Event.objects.create(team=team, kind="webhook.disabled", payload={"endpoint": 1})
    team.delete()
    assert not Team.objects.filter(pk=team.pk).exists()
    assert not Event.objects.filter(team_id=team.pk).exists()
