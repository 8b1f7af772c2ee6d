"""A list read as CSV (a spreadsheet's import) holds one page of rows: the response says where the next page
is (``Link: <...>; rel="next"``) and how many rows the list holds (``X-Total-Count``), so that a tool does not
take the first page for the whole list."""

from __future__ import annotations

import csv
import io

import pytest

from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db


def test_a_page_of_a_csv_list_names_the_next_page_and_the_total(world: World) -> None:
    for name in ("a", "b", "c"):
        f.insert_result(plan=f.plan_for(team=world.alpha, user=world.alice.user, name=name))
    first = world.alice.client.get("/api/v1/results/?page_size=2&format=csv")
    assert first.status_code == 200 and first["Content-Type"].startswith("text/csv")
    assert len(list(csv.DictReader(io.StringIO(first.content.decode())))) == 2
    assert first["X-Total-Count"] == "3"
    link = first["Link"]
    assert link.startswith("<http") and link.endswith('rel="next"') and "page=2" in link, link

    next_url = link[1 : link.index(">")]
    second = world.alice.client.get(next_url)
    assert len(list(csv.DictReader(io.StringIO(second.content.decode())))) == 1
    assert 'rel="prev"' in second["Link"] and 'rel="next"' not in second["Link"]
    assert second["X-Total-Count"] == "3"


def test_json_lists_and_single_objects_carry_no_page_headers(world: World) -> None:
    result = f.insert_result(plan=f.plan_for(team=world.alpha, user=world.alice.user, name="a"))
    f.insert_result(plan=f.plan_for(team=world.alpha, user=world.alice.user, name="b"))
    listed = world.alice.client.get("/api/v1/results/?page_size=1")
    assert listed.json()["next"] and "Link" not in listed and "X-Total-Count" not in listed
    one = world.alice.client.get(f"/api/v1/results/{result.pk}/?format=csv")
    assert one.status_code == 200 and "Link" not in one and "X-Total-Count" not in one


def test_the_openapi_document_names_the_page_headers_of_a_csv_list(db: None) -> None:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    headers = schema["paths"]["/api/v1/results/"]["get"]["responses"]["200"].get("headers", {})
    assert {"Link", "X-Total-Count"} <= set(headers), headers
    plans = schema["paths"]["/api/v1/plans/"]["get"]["responses"]["200"].get("headers", {})
    assert "Link" not in plans  # plans are not offered as CSV
