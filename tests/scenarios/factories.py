"""Rows for the scenarios tests, made through the services the API uses."""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any

CLUSTER_H100: dict[str, Any] = {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8}
CLUSTER_A100: dict[str, Any] = {"accelerator": "a100-sxm-80gb", "gpus": 64, "gpus_per_node": 8}
MODEL_DOC: dict[str, Any] = {"preset": "llama3-8b"}
SITE_DOC: dict[str, Any] = {"region": "quebec"}
TRAINING: dict[str, Any] = {
    "seq_len": 8192,
    "global_batch_tokens": 4194304,
    "total_tokens": 1.0e12,
    "precision": "bf16",
    "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1},
}

_counter = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}"


def make_user(username: str | None = None) -> Any:
    from django.contrib.auth.models import User

    return User.objects.create_user(username=username or unique("user"), password="x-unused-password-1")


def make_team(slug: str | None = None, owner: Any = None) -> Any:
    from scenarios import services

    slug = slug or unique("team")
    return services.team_create(name=slug.title(), slug=slug, owner=owner)


def make_scenario(
    *, kind: str, team: Any, document: dict[str, Any], name: str | None = None, user: Any = None
) -> Any:
    from scenarios import services

    return services.scenario_create(
        kind=kind, team=team, name=name or unique(kind), document=copy.deepcopy(document), user=user
    )


def make_plan(
    *,
    team: Any,
    user: Any = None,
    name: str | None = None,
    cluster_doc: dict[str, Any] | None = None,
    site_doc: dict[str, Any] | None = None,
    training: dict[str, Any] | None = None,
    economics: dict[str, Any] | None = None,
    trio: tuple[Any, Any, Any] | None = None,
    **fields: Any,
) -> Any:
    from scenarios import services

    if trio is None:
        trio = (
            make_scenario(kind="cluster", team=team, document=cluster_doc or CLUSTER_H100, user=user),
            make_scenario(kind="model", team=team, document=MODEL_DOC, user=user),
            make_scenario(kind="site", team=team, document=site_doc or SITE_DOC, user=user),
        )
    cluster, model, site = trio
    return services.plan_create(
        team=team,
        user=user,
        name=name or unique("plan"),
        cluster=cluster,
        model=model,
        site=site,
        training=copy.deepcopy(training or TRAINING),
        economics=copy.deepcopy(economics or {}),
        **fields,
    )


def training_with_tokens(total_tokens: float) -> dict[str, Any]:
    training = copy.deepcopy(TRAINING)
    training["total_tokens"] = total_tokens
    return training


def new_claim() -> Any:
    """A claim of a delivery of its own (a new task id), as each message a worker takes has."""
    from scenarios.execution import Claim

    return Claim(task_id=str(uuid.uuid4()), retries=0, worker="pytest")


# A small search space of Llama 3 8B's layouts (12 of them), for searches and sweeps run in a test.
SPACE: dict[str, Any] = {"tp": [1, 2, 4], "cp": [1], "pp": [1, 2], "microbatch_seqs": [1, 2]}


def run_sweep_in_process(plan: Any, axes: list[dict[str, Any]], chunks_sent: list[Any]) -> Any:
    """Queue a sweep of ``plan`` over ``SPACE`` and run its start and every chunk in this process (the
    ``chunks_sent`` fixture records the chunks); its stored result."""
    from scenarios import search_jobs
    from scenarios.models import Result

    chunks_sent.clear()
    run = search_jobs.sweep_request(plan=plan, user=None, axes=axes, space=SPACE)
    assert search_jobs.sweep_begin(run_id=run.pk, claim=new_claim()) == "started"
    for run_id, chunk, input_hash in list(chunks_sent):
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    return Result.objects.get(runs=run)


def global_price_cut(*, fan_out: str = "caller") -> Any:
    """A global book (H100 at $25,000, Quebec power) then its next version cutting the H100 to $20,000, whose
    fan-out is left to the caller: the price change the fan-out tests re-run plans for. Returns the second."""
    from scenarios import services

    h100 = {"kind": "accelerator", "key": "h100-sxm", "value": 25000}
    quebec = {"kind": "electricity", "key": "quebec", "value": 0.05}
    services.price_book_publish(team=None, user=None, name="v1", entries=[h100, quebec], fan_out="none")
    return services.price_book_publish(
        team=None, user=None, name="v2", entries=[{**h100, "value": 20000}], fan_out=fan_out
    )
