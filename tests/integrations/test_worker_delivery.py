"""End to end through a real ``celery worker`` process: a run is solved, its ``result.stored`` event nudges
``integrations.dispatch``, whose ``integrations.deliver`` task POSTs the signed event to the receiver."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from standardwebhooks import Webhook

from integrations import services
from integrations.models import Delivery
from scenarios import services as scenario_services
from scenarios.models import Result
from tests.conftest import WorkerProcess, wait_for
from tests.integrations.conftest import Receiver
from tests.scenarios.factories import make_plan, make_team


def test_a_result_from_a_real_run_reaches_the_receiver_through_a_worker(
    worker_factory: Callable[..., WorkerProcess], receiver: Receiver, webhook_settings: Any
) -> None:
    worker = worker_factory(env={"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1"})
    team = make_team()
    plan = make_plan(team=team)
    created = services.endpoint_create(team=team, user=None, url=receiver.url, event_kinds=["result.stored"])
    receiver.secrets = [created.secret]

    scenario_services.run_request(plan=plan, user=None)

    assert wait_for(lambda: any(r.verified for r in receiver.requests), timeout_s=60), worker.log()[-3000:]
    [request] = [r for r in receiver.requests if r.verified]
    payload = Webhook(created.secret).verify(request.body, request.headers)
    result = Result.objects.get(plan=plan)
    assert payload["type"] == "result.stored" and payload["data"]["result"] == result.pk
    assert payload["plan"] == plan.pk and payload["data"]["figures"]["total_usd"] == result.total_usd
    assert wait_for(lambda: Delivery.objects.get(endpoint=created.endpoint).status == "delivered")
    assert receiver.accepted[request.headers["webhook-id"]] == 1
    assert json.loads(request.body)["id"] == request.headers["webhook-id"]
