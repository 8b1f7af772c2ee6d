"""Search and sweep jobs: limits refused before queueing, chunked sweeps recorded once, results stored like a
solve's; in process first, then through real ``celery worker`` processes."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from scenarios import execution, search_jobs, services
from scenarios.execution import Claim
from scenarios.jobs import requests, search
from scenarios.models import Result, Run, SweepChunk
from scenarios.runs import claims
from tests.conftest import wait_for, wait_until_ready
from tests.scenarios.factories import (
    SPACE,
    make_plan,
    make_scenario,
    make_team,
    new_claim,
    run_sweep_in_process,
)

# A narrow layout space keeps each point's search to a few hundred layouts.
AXES: list[dict[str, Any]] = [
    {"field": "cluster.gpus", "values": [32, 64]},
    {"field": "site.region", "values": ["quebec", "virginia"]},
    {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 25, "stop": 75, "step": 25}},
]
POINTS = 2 * 2 * 3

# DeepSeek-V3 on 2,048 H800 with microbatches up to 512 sequences: about 2.6 million layouts, over the limit.
DEEPSEEK_CLUSTER: dict[str, Any] = {"accelerator": "h800-sxm", "gpus": 2048, "gpus_per_node": 8}
DEEPSEEK_TRAINING: dict[str, Any] = {
    "seq_len": 4096,
    "global_batch_tokens": 15360 * 4096,
    "total_tokens": 14.8e12,
    "precision": "bf16",
    "layout": {"tp": 1, "pp": 16, "cp": 1, "microbatch_seqs": 1},
}
HUGE_SPACE: dict[str, Any] = {"microbatch_seqs": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]}


def _messages(exc: ValidationError) -> dict[str, list[str]]:
    return {key: [str(m) for m in value] for key, value in exc.message_dict.items()}


# --- Limits and validation, before anything is queued ------------------------------------------------


@pytest.mark.django_db
def test_an_oversized_search_space_is_refused_before_a_run_exists(
    sent, django_capture_on_commit_callbacks
) -> None:
    team = make_team()
    trio = (
        make_scenario(kind="cluster", team=team, document=DEEPSEEK_CLUSTER),
        make_scenario(kind="model", team=team, document={"preset": "deepseek-v3"}),
        make_scenario(kind="site", team=team, document={"region": "quebec"}),
    )
    plan = make_plan(team=team, trio=trio, training=DEEPSEEK_TRAINING)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError) as caught:
        search_jobs.search_request(plan=plan, user=None, space=HUGE_SPACE)
    message = _messages(caught.value)["space"][0]
    held = int(re.search(r"holds ([\d,]+) layouts", message).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert held > 2_000_000 and "limit of 2,000,000 per search" in message
    assert Run.objects.count() == 0 and sent == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"objective": "fastest"}, "objective"),
        ({"pareto": ["step_s", "happiness"]}, "pareto[1]"),
        ({"top": 1000}, "top"),
        ({"space": {"tp": [0]}}, "space.tp[0]"),
        ({"space": {"tp": [3]}}, "space"),  # 3 divides neither the node nor the heads: nothing to search
        ({"within_validated": "no"}, "within_validated"),
    ],
)
def test_bad_search_options_name_the_request_field(sent, options: dict[str, Any], path: str) -> None:
    plan = make_plan(team=make_team())
    with pytest.raises(ValidationError) as caught:
        search_jobs.search_request(plan=plan, user=None, **options)
    assert path in _messages(caught.value), _messages(caught.value)
    assert Run.objects.count() == 0 and sent == []


@pytest.mark.django_db
def test_a_sweep_over_the_point_limit_is_refused_before_a_run_exists(
    starts_sent, django_capture_on_commit_callbacks
) -> None:
    from solvers.sweep import MAX_SWEEP_POINTS

    plan = make_plan(team=make_team())
    axes = [
        {"field": "cluster.scale_out.bandwidth_gb_s", "range": {"start": 10, "stop": 100, "step": 1}},
        {"field": "cluster.scale_up.bandwidth_gb_s", "range": {"start": 400, "stop": 900, "step": 50}},
    ]  # 91 x 11 = 1,001 points
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError) as caught:
        search_jobs.sweep_request(plan=plan, user=None, axes=axes)
    message = _messages(caught.value)["axes"][0]
    assert "1,001 points" in message and f"{MAX_SWEEP_POINTS:,}" in message
    assert Run.objects.count() == 0 and starts_sent == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"axes": [{"field": "training.layout.tp", "values": [1, 2]}]}, "axes[0].field"),
        (
            {"axes": [{"field": "cluster.gpus", "range": {"start": 8, "stop": 64, "step": 0}}]},
            "axes[0].range.step",
        ),
        ({"axes": AXES, "mode": "zip"}, "mode"),
        ({"axes": AXES, "pareto": ["step_s"]}, "pareto"),
        ({"axes": AXES, "space": {"pp": [0]}}, "space.pp[0]"),
    ],
)
def test_bad_sweep_options_name_the_request_field(starts_sent, kwargs: dict[str, Any], path: str) -> None:
    plan = make_plan(team=make_team())
    with pytest.raises(ValidationError) as caught:
        search_jobs.sweep_request(plan=plan, user=None, **kwargs)
    assert path in _messages(caught.value), _messages(caught.value)
    assert Run.objects.count() == 0 and starts_sent == []


def _sweep_key(layout: Any) -> str:
    """The result key of a sweep of a small plan whose training states ``layout``."""
    from solvers.prices import Pricing

    document = {
        "model": {"preset": "llama3-8b"},
        "cluster": {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8},
        "training": {"seq_len": 4096, "global_batch_tokens": 4096 * 256, "layout": layout},
    }
    planned = requests._plan_of(document, {"sweep": {"axes": AXES[:1]}, "search": {"space": SPACE}})
    return requests._sweep_hash(document=document, planned=planned, prices_for=Pricing())


def test_a_sweep_key_holds_the_gradient_reduction_the_stated_layout_keeps() -> None:
    """The stated layout's gradient-reduction dtype narrows every point's search (``search_space``), so
    two plans differing only there get different sweep keys; a layout field no search keeps does not."""
    layout = {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1}
    fp32 = _sweep_key({**layout, "grad_reduce_dtype": "fp32"})
    bf16 = _sweep_key({**layout, "grad_reduce_dtype": "bf16"})
    assert fp32 != bf16
    assert bf16 == _sweep_key("auto") == _sweep_key({**layout, "tp": 4, "grad_reduce_dtype": "bf16"})
    assert fp32 == _sweep_key({**layout, "tp": 4, "grad_reduce_dtype": "fp32"})


# --- Search, in process ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_search_run_stores_a_versioned_result_apart_from_the_solve(
    sent, claim, django_capture_on_commit_callbacks
) -> None:
    plan = make_plan(team=make_team())
    solved = execution.run_execute(run_id=services.run_request(plan=plan, user=None).pk, claim=claim)
    assert solved.result_id is not None
    solved_result_id: int = solved.result_id
    with django_capture_on_commit_callbacks(execute=True):
        run = search_jobs.search_request(
            plan=plan, user=None, objective="usd_per_million_tokens", space=SPACE
        )
    assert run.kind == "search" and run.status == "queued" and run.points_total > 0
    assert sent[-1] == [run.pk]  # the solve's path: scenarios.execute_run
    outcome = execution.run_execute(run_id=run.pk, claim=new_claim())
    run.refresh_from_db()
    assert (outcome.status, run.status) == ("succeeded", "succeeded"), run.error
    assert 0 < run.points_done == run.points_total
    result = Result.objects.get(runs=run)
    assert result.pk != solved.result_id and (result.kind, result.version) == ("search", 2)
    assert result.report["objective"] == "usd_per_million_tokens"
    assert result.report["evaluated"] == run.points_total
    assert result.step_s == result.report["best"]["step"]["step_s"]
    assert result.usd_per_million_tokens == result.report["best"]["tco"]["usd_per_million_tokens"]
    assert result.input_hash != Result.objects.get(pk=solved_result_id).input_hash
    # The plan's own layout is the baseline the best one is compared with.
    assert result.report["baseline"]["layout"]["tp"] == 2
    # The same search again returns the stored result; another objective is another result.
    again = execution.run_execute(
        run_id=search_jobs.search_request(
            plan=plan, user=None, objective="usd_per_million_tokens", space=SPACE
        ).pk,
        claim=new_claim(),
    )
    assert (again.result_id, again.created) == (result.pk, False)
    other = execution.run_execute(
        run_id=search_jobs.search_request(plan=plan, user=None, objective="step_s", space=SPACE).pk,
        claim=new_claim(),
    )
    assert other.created and other.result_id != result.pk


@pytest.mark.django_db
def test_search_progress_is_written_while_the_engine_runs(sent, monkeypatch) -> None:
    monkeypatch.setattr(search, "SEARCH_PROGRESS_PERIOD_S", 0.0)
    monkeypatch.setattr("solvers.search.ranking.EVAL_CHUNK_LAYOUTS", 64)
    seen: list[tuple[int, int]] = []
    original = claims.run_progress

    def spy(**kwargs: Any) -> bool:
        ok = original(**kwargs)
        row = Run.objects.values_list("points_done", "points_total").get(pk=kwargs["run_id"])
        seen.append(row)
        return ok

    monkeypatch.setattr(claims, "run_progress", spy)
    plan = make_plan(team=make_team())
    run = search_jobs.search_request(plan=plan, user=None, space=SPACE)
    assert execution.run_execute(run_id=run.pk, claim=new_claim()).status == "succeeded"
    assert len(seen) >= 3
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[0] < seen[0][1] and done[-1] == seen[-1][1]


# --- Sweep, in process: chunks recorded once, aggregation idempotent -----------------------------------


def _sweep(plan: Any, settings: Any, *, chunk_points: int = 2) -> Run:
    settings.SWEEP_CHUNK_POINTS = chunk_points
    settings.SWEEP_MIN_CHUNKS = 1
    return search_jobs.sweep_request(
        plan=plan, user=None, axes=AXES, objective="total_kgco2e", pareto=["step_s", "total_usd"], space=SPACE
    )


@pytest.mark.django_db
def test_sweep_chunks_in_any_order_and_twice_are_counted_once(
    settings, starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    from solvers.sweep import sweep_document

    plan = make_plan(team=make_team())
    with django_capture_on_commit_callbacks(execute=True):
        run = _sweep(plan, settings)
    assert starts_sent == [run.pk] and run.points_total == POINTS and run.params["chunk_points"] == 2
    assert search_jobs.sweep_begin(run_id=run.pk, claim=new_claim()) == "started"
    assert [c[1] for c in chunks_sent] == list(range(POINTS // 2))
    order = list(chunks_sent) + random.Random(7).sample(chunks_sent, 3)  # three redelivered
    random.Random(1).shuffle(order)
    progress: list[int] = []
    for run_id, chunk, input_hash in order:
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
        progress.append(Run.objects.get(pk=run.pk).points_done)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert progress == sorted(progress) and progress[-1] == POINTS
    result = Result.objects.get(runs=run)
    assert result.kind == "sweep" and result.report["points"] == POINTS
    rows = result.report["rows"]
    assert [r["index"] for r in rows] == list(range(POINTS))
    # The chunked job gives the rows a single process gives.
    inputs = services.plan_inputs(plan=plan)
    alone = sweep_document(
        {
            **inputs.base_document,
            "sweep": {"axes": AXES, "objective": "total_kgco2e", "pareto": ["step_s", "total_usd"]},
            "search": {"space": SPACE},
        },
        pricing=inputs.pricing,
    )
    strip = lambda rs: [{k: v for k, v in r.items() if k != "elapsed_s"} for r in rs]  # noqa: E731
    assert strip(rows) == strip(alone["rows"]) and result.report["pareto"] == alone["pareto"]
    best = result.report["best"]
    assert best["metrics"]["total_kgco2e"] == min(
        r["best"]["metrics"]["total_kgco2e"] for r in rows if "best" in r
    )
    assert (
        result.total_kgco2e == best["metrics"]["total_kgco2e"] and result.step_s == best["metrics"]["step_s"]
    )
    # The aggregation again (a late duplicate chunk, or by hand) changes nothing.
    assert search_jobs.sweep_finish(run_id=run.pk) == "succeeded"
    run_id, chunk, input_hash = chunks_sent[0]
    assert (
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
        == "finished"
    )
    assert Result.objects.filter(plan=plan).count() == 1
    assert Run.objects.get(pk=run.pk).points_done == POINTS


def _solve_point(plan: Any, row: dict[str, Any]) -> dict[str, Any]:
    """What a solve of the plan's document with the point's fields set, priced by the plan's books, at the
    point's best layout gives (``/solve/`` applies no price book, so this prices the document first)."""
    from solvers import solve
    from solvers.sweep import point_document

    inputs = services.plan_inputs(plan=plan)
    document, _ = inputs.pricing.apply(point_document(inputs.base_document, row["point"]))
    document["training"] = {**document["training"], "layout": row["best"]["layout"]}
    return dict(solve(document))


@pytest.mark.django_db
def test_a_node_sweep_of_a_priced_plan_rederives_the_accelerator_and_its_price(
    starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    team = make_team()
    services.price_book_publish(
        team=team,
        user=None,
        name="team prices",
        entries=[
            {"kind": "accelerator", "key": "h100-sxm", "value": 30_000.0},
            {"kind": "accelerator", "key": "b200", "value": 45_000.0},
            {"kind": "electricity", "key": "quebec", "value": 0.05},
        ],
        fan_out="none",
    )
    plan = make_plan(team=team, cluster_doc={"node": "dgx-h100", "gpus": 64})
    with django_capture_on_commit_callbacks(execute=True):
        result = run_sweep_in_process(
            plan,
            [{"field": "cluster.node", "values": ["dgx-a100-80gb", "dgx-h100", "dgx-b200"]}],
            chunks_sent,
        )
    rows = result.report["rows"]
    steps = [row["best"]["metrics"]["step_s"] for row in rows]
    assert steps[0] > steps[1] > steps[2], steps  # A100, H100, B200: each its own accelerator
    prices = [row["prices"]["cluster.accelerator.unit_price_usd"] for row in rows]
    assert [p["origin"] for p in prices] == ["catalog", "team_book", "team_book"]
    assert [p["value"] for p in prices][1:] == [30_000.0, 45_000.0]
    for row in rows:
        assert "pinned" not in row
        report = _solve_point(plan, row)
        assert row["best"]["metrics"]["step_s"] == report["step"]["step_s"]
        assert row["best"]["metrics"]["total_usd"] == report["tco"]["total_usd"]
        assert row["best"]["metrics"]["total_kgco2e"] == report["carbon"]["total_kgco2e"]


@pytest.mark.django_db
def test_a_region_sweep_bills_every_region_at_its_own_price(
    starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    from solvers import catalog

    team = make_team()
    services.price_book_publish(
        team=team,
        user=None,
        name="team prices",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.09}],
        fan_out="none",
    )
    plan = make_plan(team=team)
    with django_capture_on_commit_callbacks(execute=True):
        result = run_sweep_in_process(
            plan, [{"field": "site.region", "values": ["quebec", "virginia", "iceland"]}], chunks_sent
        )
    rows = result.report["rows"]
    billed = [row["prices"]["site.electricity_usd_per_kwh"]["value"] for row in rows]
    assert billed == [
        0.09,
        catalog.REGIONS["virginia"]["electricity_usd_per_kwh"],
        catalog.REGIONS["iceland"]["electricity_usd_per_kwh"],
    ]
    for row in rows:
        assert row["best"]["metrics"]["total_usd"] == _solve_point(plan, row)["tco"]["total_usd"]


@pytest.mark.django_db
def test_a_field_the_plan_states_by_value_is_kept_and_named_in_the_row(
    starts_sent, chunks_sent, django_capture_on_commit_callbacks
) -> None:
    plan = make_plan(
        team=make_team(), cluster_doc={"node": "dgx-h100", "accelerator": "h100-sxm", "gpus": 64}
    )
    with django_capture_on_commit_callbacks(execute=True):
        result = run_sweep_in_process(plan, [{"field": "cluster.node", "values": ["dgx-b200"]}], chunks_sent)
    (row,) = result.report["rows"]
    assert row["pinned"][0]["field"] == "cluster.accelerator" and row["pinned"][0]["value"] == "h100-sxm"


@pytest.mark.django_db
def test_a_chunk_whose_worker_is_lost_every_time_fails_the_run_at_the_cap(
    settings, starts_sent, chunks_sent
) -> None:
    run = _sweep(make_plan(team=make_team()), settings)
    search_jobs.sweep_begin(run_id=run.pk, claim=new_claim())
    run_id, chunk, input_hash = chunks_sent[0]
    delivery = new_claim()
    kwargs = {"run_id": run_id, "chunk": chunk, "input_hash": input_hash}
    assert search_jobs.chunk_claim(**kwargs, claim=delivery) == "go"
    # Our own retry after a database error (same task, next retry count) is not an attempt.
    assert search_jobs.chunk_claim(**kwargs, claim=Claim(delivery.task_id, 1)) == "go"
    assert search_jobs.chunk_claim(**kwargs, claim=Claim(delivery.task_id, 1)) == "go"  # redelivered: 2
    assert search_jobs.chunk_claim(**kwargs, claim=Claim(delivery.task_id, 1)) == "go"  # 3
    assert search_jobs.chunk_claim(**kwargs, claim=Claim(delivery.task_id, 1)) == "capped"
    run.refresh_from_db()
    assert run.status == "failed" and f"points chunk {chunk}" in run.error and "gave up after 3" in run.error
    assert search_jobs.chunk_claim(**kwargs, claim=new_claim()) == "finished"


@pytest.mark.django_db
def test_a_chunk_is_a_row_claimed_like_a_run(settings, starts_sent, chunks_sent) -> None:
    import datetime as dt

    from django.utils import timezone

    run = _sweep(make_plan(team=make_team()), settings)
    search_jobs.sweep_begin(run_id=run.pk, claim=new_claim())
    assert SweepChunk.objects.filter(run=run).count() == POINTS // 2 == len(chunks_sent)
    run_id, chunk, input_hash = chunks_sent[0]
    kwargs = {"run_id": run_id, "chunk": chunk, "input_hash": input_hash}
    holder = new_claim()
    assert search_jobs.chunk_claim(**kwargs, claim=holder) == "go"
    # Another delivery of the same chunk while its holder lives: not solved twice.
    assert search_jobs.chunk_claim(**kwargs, claim=new_claim()) == "busy"
    row = SweepChunk.objects.get(run=run, index=chunk)
    assert (row.status, row.attempts, row.claim_task_id) == ("running", 1, holder.task_id)
    # The holder died: once its lease expired, the next delivery takes it (a second attempt).
    SweepChunk.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert search_jobs.chunk_claim(**kwargs, claim=new_claim()) == "go"
    assert SweepChunk.objects.get(pk=row.pk).attempts == 2


@pytest.mark.django_db
def test_the_data_migration_turns_json_chunks_into_rows(settings, starts_sent, chunks_sent) -> None:
    import importlib

    from django.apps import apps

    run = _sweep(make_plan(team=make_team()), settings)
    search_jobs.sweep_begin(run_id=run.pk, claim=new_claim())
    job = Run.objects.get(pk=run.pk).params["job"]
    rows = [{"index": 0, "point": {}}, {"index": 1, "point": {}}]
    old_job = {**job, "chunks": {"0": rows}, "claims": {"0": {"task": "t", "retries": 0, "attempts": 2}}}
    Run.objects.filter(pk=run.pk).update(params={**run.params, "job": old_job})
    SweepChunk.objects.all().delete()
    importlib.import_module("scenarios.migrations.0011_sweep_chunks").chunks_to_rows(apps, None)
    chunks = list(SweepChunk.objects.filter(run=run).order_by("index"))
    assert len(chunks) == job["chunks_total"] == POINTS // 2
    assert (chunks[0].status, chunks[0].rows, chunks[0].attempts) == ("succeeded", rows, 2)
    assert {c.status for c in chunks[1:]} == {"queued"}
    assert {c.input_hash for c in chunks} == {job["input_hash"]}
    assert "chunks" not in Run.objects.get(pk=run.pk).params["job"]


@pytest.mark.django_db
def test_a_chunk_sent_for_other_inputs_changes_nothing(settings, starts_sent, chunks_sent) -> None:
    run = _sweep(make_plan(team=make_team()), settings)
    search_jobs.sweep_begin(run_id=run.pk, claim=new_claim())
    run_id, chunk, _ = chunks_sent[0]
    assert (
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash="0" * 64, claim=new_claim())
        == "stale"
    )
    assert Run.objects.get(pk=run.pk).points_done == 0


@pytest.mark.django_db
def test_a_sweep_start_delivered_twice_sends_only_missing_chunks(settings, starts_sent, chunks_sent) -> None:
    run = _sweep(make_plan(team=make_team()), settings)
    first = new_claim()
    search_jobs.sweep_begin(run_id=run.pk, claim=first)
    sent_first = list(chunks_sent)
    search_jobs.chunk_execute(run_id=run.pk, chunk=0, input_hash=sent_first[0][2], claim=new_claim())
    chunks_sent.clear()
    # The same message again after its worker died: a new attempt, the same frozen inputs.
    assert search_jobs.sweep_begin(run_id=run.pk, claim=first) == "started"
    assert [c[1] for c in chunks_sent] == [c[1] for c in sent_first[1:]]
    assert {c[2] for c in chunks_sent} == {sent_first[0][2]}
    run.refresh_from_db()
    assert run.attempts == 2 and run.points_done == 2


@pytest.mark.django_db
def test_a_sweep_resent_by_the_sweeper_sends_only_its_missing_chunks_again(
    settings, starts_sent, chunks_sent, sent
) -> None:
    plan = make_plan(team=make_team())
    run = _sweep(plan, settings)
    search_jobs.sweep_begin(run_id=run.pk, claim=new_claim())
    for run_id, chunk, input_hash in chunks_sent[:2]:
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
    claims_before = {str(c.index): c.rows for c in SweepChunk.objects.filter(run=run, status="succeeded")}
    assert len(claims_before) == 2
    # The lease expired (chunks queued behind other work): the sweeper puts the run back and sends it
    # through scenarios.execute_run, which hands it over to scenarios.sweep_start.
    Run.objects.filter(pk=run.pk).update(status="queued", claim_task_id="")
    first_sending = list(chunks_sent)
    chunks_sent.clear()
    outcome = execution.run_execute(run_id=run.pk, claim=new_claim())
    assert outcome.status == "handed over" and starts_sent[-1] == run.pk
    assert search_jobs.sweep_begin(run_id=run.pk, claim=new_claim()) == "started"  # the start task's work
    assert [chunk for _, chunk, _ in chunks_sent] == [chunk for _, chunk, _ in first_sending[2:]]
    for run_id, chunk, input_hash in chunks_sent:
        search_jobs.chunk_execute(run_id=run_id, chunk=chunk, input_hash=input_hash, claim=new_claim())
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.points_done == POINTS and run.attempts == 2
    result = Result.objects.get(runs=run)
    assert [r["index"] for r in result.report["rows"]] == list(range(POINTS))
    kept = {k: result.report["rows"][int(k) * 2 : int(k) * 2 + 2] for k in claims_before}
    assert kept == claims_before  # the two recorded chunks were not solved again


# --- Through real workers ----------------------------------------------------------------------------


def test_a_search_job_runs_on_a_worker_with_progress(celery_worker) -> None:
    plan = make_plan(team=make_team())
    run = search_jobs.search_request(plan=plan, user=None, space=SPACE)
    assert wait_for(lambda: Run.objects.get(pk=run.pk).finished, timeout_s=60), celery_worker.log()[-3000:]
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert 0 < run.points_done == run.points_total
    assert Result.objects.get(runs=run).kind == "search"


def test_a_sweep_fans_out_over_two_worker_processes(worker_factory, settings) -> None:
    workers = [worker_factory(concurrency=1, wait=False), worker_factory(concurrency=1, wait=False)]
    wait_until_ready(*workers)
    plan = make_plan(team=make_team())
    run = _sweep(plan, settings, chunk_points=1)
    seen: list[int] = []

    def done() -> bool:
        row = Run.objects.get(pk=run.pk)
        seen.append(row.points_done)
        return row.finished

    assert wait_for(done, timeout_s=120, interval_s=0.02), workers[0].log()[-3000:]
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.points_done == run.points_total == POINTS
    assert seen == sorted(seen)
    result = Result.objects.get(runs=run)
    assert [r["index"] for r in result.report["rows"]] == list(range(POINTS))
    assert result.report["chunks"] == {"points_per_chunk": 1, "count": POINTS}
    # Both processes solved chunks (each took some of the group's messages).
    for worker in workers:
        assert "scenarios.sweep_chunk" in worker.log() and "succeeded" in worker.log()
    chunk_counts = [w.log().count("Task scenarios.sweep_chunk[") for w in workers]
    assert all(c > 0 for c in chunk_counts), chunk_counts


# --- Faults (``pytest -m fault``): a worker killed mid-sweep ------------------------------------------


@pytest.mark.fault
@pytest.mark.timeout(600)
def test_a_sweep_survives_kill9_of_one_of_two_workers(worker_factory, settings) -> None:
    settings.SWEEP_QUEUED_AFTER_S = 3
    env = {"RUN_LEASE_S": "4"}
    doomed = worker_factory(concurrency=1, env=env)
    survivor = worker_factory(concurrency=1, env=env)
    plan = make_plan(team=make_team())
    settings.SWEEP_CHUNK_POINTS = 1
    settings.SWEEP_MIN_CHUNKS = 1
    # The default layout space: a few hundred milliseconds per point, so chunks are in flight at the kill.
    run = search_jobs.sweep_request(
        plan=plan, user=None, axes=[*AXES, {"field": "site.pue", "values": [1.1, 1.3]}]
    )
    assert wait_for(lambda: Run.objects.get(pk=run.pk).points_done >= 3, timeout_s=120), doomed.log()[-3000:]
    doomed.kill9()

    def finished() -> bool:
        execution.runs_sweep()  # what beat does every 30 s
        return Run.objects.get(pk=run.pk).finished

    assert wait_for(finished, timeout_s=300, interval_s=0.5), survivor.log()[-3000:]
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.points_done == run.points_total == 2 * POINTS
    result = Result.objects.get(runs=run)
    assert [r["index"] for r in result.report["rows"]] == list(range(2 * POINTS))
    assert Result.objects.filter(plan=plan).count() == 1
    # Normally 2: the sweeper sent the sweep to its start task again once the lease expired, which sent the
    # chunk the killed worker held again (1 if the kill fell between two chunks).
    assert run.attempts in (1, 2)
