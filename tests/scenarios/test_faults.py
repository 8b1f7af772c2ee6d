"""Fault tests of issue 4 (real broker, real ``celery worker`` processes, real Postgres):

* kill -9 of the whole worker with 100 runs in flight -> after a restart 100/100 stored exactly once;
* a dedicated Redis restarted without persistence with 50 runs queued -> all complete via the sweeper;
* PostgreSQL unreachable for 5 s (a proxy the test cuts) during solves -> every run completes;
* a run that kills its worker every time ends failed after 3 attempts, with the reason;
* a price book published while a dedicated Redis is down -> the publish succeeds with its fan-out deferred,
  and once Redis is back the shipped beat sweeper (every 30 s, shipped lease) re-runs each affected plan
  exactly once (12 runs, 12 results);
* every recovery runs through the shipped beat schedule (sweeper every 30 s) and the shipped lease (20 s);
* after each: result versions per plan are 1..n without gaps or duplicates, and UPDATE/DELETE on results
  fail at the database.

Run with ``pytest -m fault tests/scenarios/test_faults.py`` (deselected from the default run).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from scenarios import services
from scenarios.models import Result, Run
from tests.conftest import database_url_for_tests, wait_for
from tests.scenarios.factories import CLUSTER_H100, MODEL_DOC, SITE_DOC, make_plan, make_scenario, make_team
from tests.scenarios.faults import CuttableProxy, DedicatedRedis

pytestmark = [pytest.mark.fault, pytest.mark.timeout(600)]

HOOKS = ("--include", "tests.scenarios.worker_hooks")


@pytest.fixture
def shipped_beat(tmp_path: Any) -> Iterator[None]:
    """``celery beat`` on the shipped schedules (the sweeper every 30 s), bound to the Redis the test uses
    (request it after ``dedicated_redis``). Workers keep the shipped lease (20 s): nothing is shortened."""
    from tests.scenarios.beat import running_beat

    with running_beat(tmp_path):
        yield


def worker_env(**extra: str) -> dict[str, str]:
    return dict(extra)


def make_plans(count: int, prefix: str = "plan") -> list[Any]:
    team = make_team()
    trio = (
        make_scenario(kind="cluster", team=team, document=CLUSTER_H100),
        make_scenario(kind="model", team=team, document=MODEL_DOC),
        make_scenario(kind="site", team=team, document=SITE_DOC),
    )
    return [make_plan(team=team, trio=trio, name=f"{prefix}-{i:03d}") for i in range(count)]


def sweep_until(predicate: Any, *, timeout_s: float) -> bool:
    """Wait while the shipped beat sweeper and the workers recover; the test itself sweeps nothing."""
    return wait_for(predicate, timeout_s=timeout_s, interval_s=0.5)


def succeeded() -> int:
    return Run.objects.filter(status="succeeded").count()


def assert_results_intact(expected_versions: int | None = None) -> None:
    rows = list(Result.objects.values_list("plan_id", "version", "input_hash"))
    by_plan: dict[int, list[int]] = {}
    for plan_id, version, _ in rows:
        by_plan.setdefault(plan_id, []).append(version)
    for plan_id, versions in by_plan.items():
        assert sorted(versions) == list(range(1, len(versions) + 1)), (
            f"plan {plan_id}: versions {sorted(versions)}"
        )
        if expected_versions is not None:
            assert len(versions) == expected_versions, f"plan {plan_id}: {len(versions)} results"
    assert len({(p, h) for p, _, h in rows}) == len(rows)
    assert not Run.objects.filter(status="succeeded", result__isnull=True).exists()
    if rows:
        some = Result.objects.order_by("pk")[0]
        for sql in (
            "UPDATE scenarios_result SET total_usd = 0 WHERE id = %s",
            "DELETE FROM scenarios_result WHERE id = %s",
        ):
            with (
                pytest.raises(DatabaseError, match="immutable"),
                transaction.atomic(),
                connection.cursor() as cur,
            ):
                cur.execute(sql, [some.pk])


def test_kill9_of_the_whole_worker_with_100_runs_in_flight(worker_factory, shipped_beat) -> None:
    plans = make_plans(100)
    # Each pool process holds up to 25 messages (prefetch): all 100 are delivered and unacknowledged
    # when the worker dies, 4 of them mid-solve.
    first = worker_factory(
        concurrency=4,
        env=worker_env(SCENARIOS_TEST_SOLVE_DELAY_S="0.15"),
        extra_args=(*HOOKS, "--prefetch-multiplier", "25"),
    )
    runs = [services.run_request(plan=plan, user=None) for plan in plans]
    assert wait_for(lambda: succeeded() >= 8, timeout_s=60), first.log()[-3000:]
    first.kill9()
    at_kill = {s: Run.objects.filter(status=s).count() for s in ("queued", "running", "succeeded")}
    assert at_kill["succeeded"] < 100 and at_kill["running"] >= 1, at_kill
    worker_factory(concurrency=2, env=worker_env(), extra_args=HOOKS)
    assert sweep_until(lambda: succeeded() == 100, timeout_s=300), {
        s: Run.objects.filter(status=s).count() for s in ("queued", "running", "succeeded", "failed")
    }
    assert Result.objects.count() == 100
    assert sorted(Result.objects.values_list("plan_id", flat=True)) == sorted(p.pk for p in plans)
    assert set(Run.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True)) == {
        "succeeded"
    }
    assert Run.objects.filter(attempts=2).count() >= at_kill["running"]
    assert_results_intact(expected_versions=1)


def _use_broker(app: Any, url: str) -> None:
    """Publish through ``url`` from now on (drops the cached connection and producer pools)."""
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def dedicated_redis(tmp_path, settings) -> Iterator[DedicatedRedis]:
    """Point this test process (producer, heartbeat reader) and its workers at a Redis of their own."""
    from planner import heartbeat
    from planner.celery import app

    server = DedicatedRedis(tmp_path / "redis")
    server.start()
    previous_broker = app.conf.broker_url
    settings.REDIS_URL = server.url
    heartbeat.client.cache_clear()
    _use_broker(app, server.url)
    try:
        yield server
    finally:
        _use_broker(app, previous_broker)
        heartbeat.client.cache_clear()
        server.stop()


def test_redis_restarted_without_persistence_with_50_runs_queued(
    worker_factory, dedicated_redis, shipped_beat
) -> None:
    from tests.conftest import TEST_QUEUE

    plans = make_plans(50)
    worker = worker_factory(
        concurrency=2,
        env=worker_env(REDIS_URL=dedicated_redis.url, SCENARIOS_TEST_SOLVE_DELAY_S="0.2"),
        extra_args=HOOKS,
    )
    for plan in plans:
        services.run_request(plan=plan, user=None)
    assert wait_for(lambda: succeeded() >= 4, timeout_s=60), worker.log()[-3000:]
    queued_before = dedicated_redis.queued_messages(TEST_QUEUE)
    dedicated_redis.restart()
    assert dedicated_redis.queued_messages(TEST_QUEUE) == 0 < queued_before
    lost = 50 - succeeded()
    assert lost > 20
    assert sweep_until(lambda: succeeded() == 50, timeout_s=300), (
        {s: Run.objects.filter(status=s).count() for s in ("queued", "running", "succeeded", "failed")},
        worker.log()[-3000:],
    )
    assert Result.objects.count() == 50
    assert_results_intact(expected_versions=1)


def test_postgres_unreachable_for_5_s_during_solves(worker_factory, shipped_beat) -> None:
    from urllib.parse import quote

    import dj_database_url

    plans = make_plans(40)
    url = dj_database_url.parse(database_url_for_tests())
    proxy = CuttableProxy(target_port=int(url["PORT"] or 5432))
    proxy.start()
    try:
        # The same role and password (the embedded server asks for one), through the proxy's port.
        password = f":{quote(url['PASSWORD'], safe='')}" if url.get("PASSWORD") else ""
        proxied = f"postgres://{url['USER']}{password}@127.0.0.1:{proxy.port}/{url['NAME']}"
        worker = worker_factory(
            concurrency=2,
            env=worker_env(DATABASE_URL=proxied, SCENARIOS_TEST_SOLVE_DELAY_S="0.1"),
            extra_args=HOOKS,
        )
        for plan in plans:
            services.run_request(plan=plan, user=None)
        assert wait_for(lambda: succeeded() >= 5, timeout_s=60), worker.log()[-3000:]
        # Second wave while the database goes away: a price change re-solves every plan (version 2).
        proxy.cut()
        cut_at = time.monotonic()
        time.sleep(5.0)
        proxy.restore()
        assert time.monotonic() - cut_at >= 5.0
        assert sweep_until(lambda: succeeded() == 40, timeout_s=300), worker.log()[-4000:]
        services.price_book_publish(
            team=None,
            user=None,
            name="cut",
            entries=[{"kind": "accelerator", "key": "h100-sxm", "value": 19000}],
            fan_out="sync",
        )
        assert wait_for(lambda: Run.objects.filter(trigger="price_change").count() == 40, timeout_s=30)
        time.sleep(0.5)
        proxy.cut()
        time.sleep(5.0)
        proxy.restore()
        assert sweep_until(lambda: succeeded() == 80, timeout_s=300), worker.log()[-4000:]
        log = worker.log()
    finally:
        proxy.stop()
    assert "OperationalError" in log or "Retry in" in log
    assert not Run.objects.filter(status="failed").exists()
    assert Result.objects.count() == 80
    assert_results_intact(expected_versions=2)


def test_a_run_that_kills_its_worker_every_time_ends_failed_after_3_attempts(
    worker_factory, shipped_beat
) -> None:
    (crasher,) = make_plans(1, prefix="crash")
    (healthy,) = make_plans(1, prefix="fine")
    worker = worker_factory(concurrency=1, env=worker_env(), extra_args=HOOKS)
    bad = services.run_request(plan=crasher, user=None)
    good = services.run_request(plan=healthy, user=None)
    assert sweep_until(
        lambda: Run.objects.filter(pk__in=[bad.pk, good.pk], status__in=["failed", "succeeded"]).count() == 2,
        timeout_s=300,
    ), worker.log()[-4000:]
    bad.refresh_from_db()
    good.refresh_from_db()
    assert (bad.status, bad.attempts) == ("failed", 3)
    assert bad.error.startswith("gave up after 3 attempts: the worker running this run was lost each time")
    assert good.status == "succeeded"
    assert not Result.objects.filter(plan=crasher).exists()
    assert_results_intact(expected_versions=1)


def test_a_price_book_published_while_redis_is_down_re_runs_every_affected_plan_once(
    worker_factory, dedicated_redis, tmp_path
) -> None:
    """The shipped sweeper schedule (beat, every 30 s) and the shipped lease: nothing here sweeps."""
    from scenarios.models import PriceFanOut
    from tests.scenarios.beat import running_beat

    plans = make_plans(12)
    team = plans[0].team
    h100 = {"kind": "accelerator", "key": "h100-sxm"}
    services.price_book_publish(
        team=team, user=None, name="v1", entries=[{**h100, "value": 25000}], fan_out="none"
    )
    worker = worker_factory(concurrency=2, env={"REDIS_URL": dedicated_redis.url}, extra_args=HOOKS)
    with running_beat(tmp_path) as beat:
        dedicated_redis.stop()
        started = time.monotonic()
        book = services.price_book_publish(
            team=team, user=None, name="cut", entries=[{**h100, "value": 19000}]
        )
        assert time.monotonic() - started < 5  # the publish does not wait for the broker
        assert services.fan_out_state(book=book) == "deferred"
        assert not Run.objects.exists()
        time.sleep(3)
        dedicated_redis.start()
        back_at = time.monotonic()
        assert wait_for(lambda: succeeded() == 12, timeout_s=180, interval_s=1), (
            {s: Run.objects.filter(status=s).count() for s in ("queued", "running", "succeeded", "failed")},
            beat.poll(),
            worker.log()[-3000:],
        )
        print(f"every affected plan re-ran {time.monotonic() - back_at:.1f} s after Redis came back")
    assert Run.objects.count() == 12
    assert set(Run.objects.values_list("trigger", flat=True)) == {"price_change"}
    assert sorted(Run.objects.values_list("plan_id", flat=True)) == sorted(p.pk for p in plans)
    fan_out = PriceFanOut.objects.get(pk=book.pk)
    assert fan_out.done_at is not None and (fan_out.runs_created, fan_out.plans_changed) == (12, 12)
    assert Result.objects.count() == 12
    assert_results_intact(expected_versions=1)
