"""A global and a team book published at the same time still re-run every plan whose resolved prices moved.

Each fan-out compares the two sheets on either side of its own publication, taking the other scope's book "in
force" by book id. Book ids are handed out when a publish inserts its row, not when it commits: a team publish
that inserted its book first (a lower id) and is still counting the plans it re-runs when a global book is
published and fanned out is, by id, published before that global book, though the global fan-out could not
see it. Neither fan-out then compares against the sheet the other one produced."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from scenarios import execution, fanout, price_books, services
from scenarios.models import PriceBook, Result, Run
from tests.scenarios.factories import make_plan, make_team

H100 = {"kind": "accelerator", "key": "h100-sxm", "value": 25000}
A100 = {"kind": "accelerator", "key": "a100-sxm-80gb", "value": 14000}
QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.05}


def publish(team: Any, entries: list[dict[str, Any]], name: str = "book") -> Any:
    return services.price_book_publish(team=team, user=None, name=name, entries=entries, fan_out="none")


@pytest.mark.django_db(transaction=True)
def test_a_team_book_committing_after_a_concurrent_global_book_still_re_runs_a_plan_whose_price_moved(
    sent: Any, claim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The H100 is 25,000 in the global book and pinned at 25,000 by the team. At the same time the team drops
    its pin (a patch removing the key) and the global book moves the H100 to 30,000: the plan's H100 goes from
    25,000 to 30,000, so one of the two fan-outs must re-run it."""
    team = make_team()
    plan = make_plan(team=team)
    publish(None, [H100, QUEBEC])
    publish(team, [H100, A100], name="team pins the H100")
    services.run_request(plan=plan, user=None)
    execution.run_execute(run_id=Run.objects.get(plan=plan).pk, claim=claim)
    first = Result.objects.get(plan=plan)
    assert first.prices["cluster.accelerator.unit_price_usd"]["value"] == 25000

    inserted, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    record = price_books._record_published

    def slow_record(book: Any) -> None:
        if book.team_id is not None:
            inserted.set()  # the team book's row exists (its id is taken), uncommitted
            assert release.wait(30)
        record(book)

    monkeypatch.setattr(price_books, "_record_published", slow_record)

    def team_publish() -> None:
        try:
            publish(team, [{"kind": "accelerator", "key": "h100-sxm", "remove": True}], name="unpin")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    fan_outs: dict[str, Any] = {}

    def global_publish_and_fan_out() -> None:
        try:
            moved = publish(None, [{**H100, "value": 30000}], name="H100 up")
            fan_outs["global"] = fanout.price_book_fan_out(price_book_id=moved.pk)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=team_publish)
    thread.start()
    assert inserted.wait(30)
    global_thread = threading.Thread(target=global_publish_and_fan_out)
    global_thread.start()
    global_thread.join(3)  # the global publish and its fan-out, while the team's publish is still open
    release.set()
    thread.join(30)
    global_thread.join(30)
    assert errors == []
    global_fan_out = fan_outs["global"]
    unpinned = PriceBook.objects.get(team=team, name="unpin")
    team_fan_out = fanout.price_book_fan_out(price_book_id=unpinned.pk)

    assert global_fan_out.runs_created + team_fan_out.runs_created >= 1, (
        "no fan-out re-ran a plan whose H100 moved from 25,000 to 30,000"
    )
    for run_id in Run.objects.filter(status="queued").values_list("pk", flat=True):
        execution.run_execute(run_id=run_id, claim=claim)
    plan.refresh_from_db()
    assert plan.latest_result.prices["cluster.accelerator.unit_price_usd"]["value"] == 30000
