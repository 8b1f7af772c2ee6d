"""The price books pages: versions, one version's entries, changes and what it moved; publishing a team's
next version with the API's rules (editors only, errors per row and field, nothing stored on a refusal)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from scenarios import execution, fanout, services
from scenarios.models import PriceBook, Result, Run
from tests.api import factories as f
from tests.api.inprocess import claim, solve_plan
from tests.web.conftest import Browsers
from web.templatetags.planner_format import usd

pytestmark = pytest.mark.django_db

LIST = reverse("web:price-books")
NEW = reverse("web:price-book-new")


def detail(book: Any) -> str:
    return reverse("web:price-book-detail", args=[book.pk])


def form_data(rows: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The publish form as a browser posts it: five rows, the given ones filled in."""
    data: dict[str, Any] = {
        "name": "Q3 prices",
        "mode": "patch",
        "source": "",
        "notes": "",
        "entries-TOTAL_FORMS": "5",
        "entries-INITIAL_FORMS": "0",
        "entries-MIN_NUM_FORMS": "0",
        "entries-MAX_NUM_FORMS": "5",
        **fields,
    }
    for i in range(5):
        row = rows[i] if i < len(rows) else {}
        for name in ("kind", "key", "value", "source"):
            data[f"entries-{i}-{name}"] = str(row.get(name, ""))
        if row.get("remove"):
            data[f"entries-{i}-remove"] = "on"
    return data


def text(response: Any) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def execute_queued() -> None:
    for run_id in Run.objects.filter(status="queued").order_by("pk").values_list("pk", flat=True):
        execution.run_execute(run_id=run_id, claim=claim())


def plan_with_amortization(browsers: Browsers, name: str, years: int) -> Any:
    world = browsers.world
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix=f"-{name}")
    cluster, model, site = trio
    return services.plan_create(
        team=world.alpha,
        user=world.alice.user,
        name=name,
        cluster=cluster,
        model=model,
        site=site,
        training=f.TRAINING,
        economics={"amortization_years": years},
    )


def test_an_electricity_price_change_lists_both_plans_by_the_size_of_their_change(
    browsers: Browsers, no_broker: None
) -> None:
    # Capex spread over 10 years leaves electricity a larger share of "long"'s bill than of "short"'s.
    short = plan_with_amortization(browsers, "short", 2)
    long = plan_with_amortization(browsers, "long", 10)
    before = {plan.pk: solve_plan(plan) for plan in (short, long)}

    page = browsers.carol.get(NEW)
    assert page.status_code == 200
    assert 'for="id_entries-0-kind">Entry 1 kind</label>' in page.content.decode()
    response = browsers.carol.post(
        NEW,
        form_data(
            [{"kind": "electricity", "key": "quebec", "value": "0.4", "source": "2026 tariff"}],
            source="utility contract",
        ),
    )
    book = PriceBook.objects.get(team=browsers.world.alpha)
    assert response.status_code == 302 and response["Location"] == detail(book)

    waiting = browsers.carol.get(detail(book))
    assert waiting.status_code == 200
    body = text(waiting)
    assert 'role="status" data-pending="2"' in body and "2 pending" in body
    assert "web/price_books.js" in body

    assert fanout.price_book_fan_out(price_book_id=book.pk).runs_created == 2
    execute_queued()
    after = {plan.pk: Result.objects.filter(plan=plan).latest("version") for plan in (short, long)}
    for plan in (short, long):
        assert after[plan.pk].previous_id == before[plan.pk].pk
        assert after[plan.pk].team_price_book_id == book.pk

    body = text(browsers.carol.get(detail(book)))
    assert 'data-pending="0"' in body and "web/price_books.js" not in body
    moved = body.split("Plans whose figures moved")[1].split("</table>")[0]

    def fraction(plan: Any) -> float:
        old, new = before[plan.pk], after[plan.pk]
        return max(
            abs(getattr(new, name) - getattr(old, name)) / getattr(old, name)
            for name in ("total_usd", "usd_per_million_tokens", "total_kgco2e", "wall_clock_days", "step_s")
        )

    expected = sorted((short, long), key=fraction, reverse=True)
    assert fraction(long) > fraction(short) and expected[0] == long
    positions = [moved.index(f">{plan.name}</a>") for plan in expected]
    assert positions == sorted(positions)
    for plan in (short, long):
        old, new = before[plan.pk].total_usd, after[plan.pk].total_usd
        assert old is not None and new is not None and new > old
        assert f"{usd(old)} → {usd(new)}" in moved
        assert f'href="/api/v1/results/{after[plan.pk].pk}/diff/"' in moved
    # The entries and the change against the (absent) previous version.
    assert "<caption>Entries</caption>" in body and "2026 tariff" in body and "$0.4 /kWh" in body
    assert "Price book version 1 (Alpha)" in body


def _moved_world(browsers: Browsers, plans: int) -> PriceBook:
    """A team book whose fan-out re-ran ``plans`` plans (one of them with unchanged figures), rows made as
    the worker makes them."""
    world = browsers.world
    book = services.price_book_publish(
        team=world.alpha,
        user=world.carol.user,
        name="book",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.2}],
        fan_out="none",
    )
    for i in range(plans):
        plan = f.plan_for(team=world.alpha, user=world.alice.user, name=f"p{i}")
        first = f.insert_result(plan=plan)
        second = f.insert_result(
            plan=plan, previous=first, team_price_book=book, scale=1.0 if i == 0 else 1.0 + i / 10
        )
        Run.objects.create(
            plan=plan,
            team=world.alpha,
            trigger="price_change",
            status="succeeded",
            price_book=book,
            result=second,
        )
    return book


@pytest.mark.parametrize("plans", [2, 10])
def test_the_detail_page_reads_a_fixed_number_of_queries(
    browsers: Browsers, plans: int, django_assert_num_queries: Any
) -> None:
    book = _moved_world(browsers, plans)
    browsers.bob.get(LIST)  # the session is read once before counting
    with django_assert_num_queries(9):
        response = browsers.bob.get(detail(book))
    assert response.status_code == 200
    body = text(response)
    assert body.count("Diff of result v2") == plans - 1
    assert "1 plan re-ran with no change." in body
    # Sorted by the size of the change: the last plan (the largest scale) first, p1 (+10%) last.
    assert body.index(f">p{plans - 1}</a>") <= body.index(">p1</a>")


@pytest.mark.parametrize("books", [2, 10])
def test_the_list_reads_a_fixed_number_of_queries(
    browsers: Browsers, books: int, django_assert_num_queries: Any
) -> None:
    world = browsers.world
    for i in range(books):
        services.price_book_publish(
            team=world.alpha if i % 2 else None,
            user=world.carol.user,
            name=f"v{i}",
            entries=[{"kind": "electricity", "key": "quebec", "value": 0.05 + i / 100}],
            fan_out="none",
        )
    browsers.carol.get(LIST)
    with django_assert_num_queries(4):
        response = browsers.carol.get(LIST)
    assert response.status_code == 200
    assert text(response).count("Version ") == books


def test_a_viewer_sees_no_publish_link_and_cannot_publish(browsers: Browsers) -> None:
    assert NEW in browsers.carol.get(LIST).content.decode()
    assert NEW not in browsers.bob.get(LIST).content.decode()
    assert browsers.bob.get(NEW).status_code == 403
    response = browsers.bob.post(NEW, form_data([{"kind": "electricity", "key": "quebec", "value": "0.2"}]))
    assert response.status_code == 403
    assert not PriceBook.objects.exists()
    assert browsers.anonymous.get(LIST).status_code == 302


def test_another_teams_book_is_not_found(browsers: Browsers) -> None:
    world = browsers.world
    alphas = services.price_book_publish(
        team=world.alpha,
        user=world.carol.user,
        name="alpha secret",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.2}],
        fan_out="none",
    )
    shared = services.price_book_publish(
        team=None,
        user=None,
        name="global",
        entries=[{"kind": "electricity", "key": "quebec", "value": 0.05}],
        fan_out="none",
    )
    assert browsers.mallory.get(detail(alphas)).status_code == 404
    assert "alpha secret" not in browsers.mallory.get(LIST).content.decode()
    assert browsers.mallory.get(detail(shared)).status_code == 200
    assert browsers.alice.get(detail(alphas)).status_code == 200


def test_bad_entries_name_the_row_and_field_and_store_nothing(browsers: Browsers) -> None:
    response = browsers.carol.post(
        NEW,
        form_data(
            [
                {"kind": "electricity", "key": "quebec", "value": "-0.1"},
                {"kind": "gold", "key": "quebec", "value": "0.1"},
            ]
        ),
    )
    assert response.status_code == 400
    body = text(response)
    assert "Entry 1, value:" in body and "Entry 2, kind:" in body
    response = browsers.carol.post(
        NEW, form_data([{}, {"kind": "electricity", "key": "quebeck", "value": "0.1"}])
    )
    assert response.status_code == 400
    assert "Entry 2, key: unknown region &#x27;quebeck&#x27;; did you mean &#x27;quebec&#x27;?" in text(
        response
    )
    response = browsers.carol.post(NEW, form_data([]))
    assert response.status_code == 400 and "at least one row" in text(response)
    assert not PriceBook.objects.exists()


def test_a_patch_removes_a_key(browsers: Browsers) -> None:
    first = [
        {"kind": "electricity", "key": "quebec", "value": "0.2"},
        {"kind": "cloud", "key": "h100-sxm", "value": "2.5"},
    ]
    assert browsers.carol.post(NEW, form_data(first)).status_code == 302
    response = browsers.carol.post(NEW, form_data([{"kind": "cloud", "key": "h100-sxm", "remove": True}]))
    assert response.status_code == 302
    book = PriceBook.objects.get(team=browsers.world.alpha, version=2)
    assert list(book.entries.values_list("key", flat=True)) == ["quebec"]
    body = text(browsers.carol.get(detail(book)))
    assert "<td>removed</td><td>cloud</td><td>h100-sxm</td>" in body
    bad = browsers.carol.post(
        NEW, form_data([{"kind": "cloud", "key": "h100-sxm", "remove": True}], mode="replace")
    )
    assert bad.status_code == 400 and "Entry 1, remove: only a patch removes keys" in text(bad)
    assert PriceBook.objects.count() == 2


def test_the_publish_form_reads_a_fixed_number_of_queries(
    browsers: Browsers, django_assert_num_queries: Any
) -> None:
    browsers.carol.get(LIST)
    with django_assert_num_queries(4):
        response = browsers.carol.get(NEW)
    body = response.content.decode()
    assert response.status_code == 200 and "<h1>Publish price book version</h1>" in body
    for number in range(1, 6):
        for field in ("kind", "key", "value", "source", "remove"):
            assert f">Entry {number} {field}</label>" in body
    assert '<button type="submit">Publish</button>' in body
