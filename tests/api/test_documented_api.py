"""What README.md and the OpenAPI document promise about the API, checked against its answers.

Each test quotes the promise it holds the API (or its OpenAPI document) to.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.api import factories as f
from tests.api.conftest import World


@pytest.fixture
def openapi(db: None) -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return schema


# --- Idempotency-Key: an answer that held a secret ----------------------------------------------------------
# README: "An answer that held a secret (a new token, a webhook's signing secret) is not kept: its retry is a
# 409 saying where the request's result is."


def _where(response: Any) -> str:
    messages = " ".join(e["message"] for e in response.json().get("errors", []))
    return f"{response.get('Location', '')} {messages}"


def test_a_retried_token_create_is_a_409_naming_the_token_it_made(world: World) -> None:
    key = str(uuid.uuid4())
    first = world.alice.client.post(
        "/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY=key
    )
    assert first.status_code == 201
    retry = world.alice.client.post(
        "/api/v1/tokens/", {"name": "ci"}, format="json", HTTP_IDEMPOTENCY_KEY=key
    )
    assert retry.status_code == 409
    # The client lost the first answer: the retry must tell it which token was made, so it can revoke it.
    assert f"/api/v1/tokens/{first.json()['id']}/" in _where(retry), retry.json()


def test_a_retried_webhook_create_is_a_409_naming_the_endpoint_it_made(world: World, settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    body = {"team": world.alpha.pk, "url": "http://127.0.0.1:9/hook"}
    key = str(uuid.uuid4())
    first = world.alice.client.post("/api/v1/webhooks/", body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert first.status_code == 201
    retry = world.alice.client.post("/api/v1/webhooks/", body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert retry.status_code == 409
    assert f"/api/v1/webhooks/{first.json()['id']}/" in _where(retry), retry.json()


# --- the change feed in the OpenAPI document -----------------------------------------------------------------


def test_the_documented_feed_list_names_its_header_and_filters(openapi: dict[str, Any]) -> None:
    # README: "start from the event the feed's `Events-Settled-Through` header names ...; filters `plan`,
    # `team`, `kind` (repeatable), `since`, `until`". The list operation's description is what Swagger UI
    # shows a client author for GET /events/.
    description = openapi["paths"]["/api/v1/events/"]["get"].get("description", "")
    assert "SETTLED_HEADER" not in description, description  # a Python constant, not the header's name
    assert "Events-Settled-Through" in description, description
    assert "?after=" in description and "kind" in description, description


def test_the_documented_feed_ordering_parameter_is_accepted(world: World, openapi: dict[str, Any]) -> None:
    # The OpenAPI document offers ``ordering`` on GET /events/ ("Which field to use when ordering the
    # results."); a parameter it offers must take some value, yet every value is a 400 "orders by: none".
    names = [p["name"] for p in openapi["paths"]["/api/v1/events/"]["get"].get("parameters", [])]
    if "ordering" not in names:
        return
    answers = {value: world.alice.client.get(f"/api/v1/events/?ordering={value}") for value in ("-id", "id")}
    assert any(r.status_code == 200 for r in answers.values()), {
        value: r.json() for value, r in answers.items()
    }


# --- ETag and If-None-Match in the OpenAPI document ----------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/results/{id}/", "/api/v1/compare/"])
def test_the_documented_conditional_get_of_results_and_compare(
    world: World, openapi: dict[str, Any], path: str
) -> None:
    # README: "Results and compare carry an `ETag`; `If-None-Match` gets 304 while nothing changed." They do;
    # a client generated from the OpenAPI document should know it (the 304 status and the ETag header).
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="p")
    result = f.insert_result(plan=plan)
    url = path.replace("{id}", str(result.pk)) + ("" if "{id}" in path else f"?plans={plan.pk}")
    first = world.alice.client.get(url)
    assert world.alice.client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    operation = openapi["paths"][path]["get"]
    assert "304" in operation["responses"], sorted(operation["responses"])
    assert "ETag" in operation["responses"]["200"].get("headers", {}), operation["responses"]["200"]


# --- outages ---------------------------------------------------------------------------------------------------


def test_a_feed_poll_with_the_broker_unreachable_is_a_503_with_retry_after(
    world: World, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # README: "When the database or the broker is unreachable every endpoint answers 503 with `Retry-After`
    # (JSON under `/api/`...), never 500." POST /price-feeds/{id}/poll/ sends its task at once.
    from kombu.exceptions import OperationalError

    from scenarios import queue

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    feed = world.alice.client.post(
        "/api/v1/price-feeds/",
        {
            "team": world.alpha.pk,
            "name": "f",
            "source": "https://127.0.0.1/p.csv",
            "schedule": {"every_s": 3600},
        },
        format="json",
    )
    assert feed.status_code == 201, feed.json()

    def unreachable(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(queue, "send_kwargs", unreachable)
    response = world.alice.client.post(f"/api/v1/price-feeds/{feed.json()['id']}/poll/")
    assert response.status_code == 503
    assert response.get("Retry-After") == str(settings.OUTAGE_RETRY_AFTER_S), dict(response.items())


# --- the documented limits ---------------------------------------------------------------------------------------


def test_the_page_size_limit_is_enforced_as_the_openapi_document_says(
    world: World, openapi: dict[str, Any]
) -> None:
    # The OpenAPI description of every job and of /solve/ (api.schema.LIMITS_MARKDOWN): "**Limits** (each
    # enforced with a 400 naming the field and the limit): ... page size at most 500 (default 50)". A
    # page_size over it is answered 200 with 500 rows instead (api.pagination clamps it), so a client that
    # trusts the document and asks for 1,000 rows reads half of them as if they were all.
    from api.limits import MAX_PAGE_SIZE

    description = openapi["paths"]["/api/v1/solve/"]["post"]["description"]
    promised = (
        "each enforced with a 400" in description and f"page size at most {MAX_PAGE_SIZE}" in description
    )
    response = world.alice.client.get(f"/api/v1/clusters/?page_size={MAX_PAGE_SIZE + 1}")
    if promised:
        assert response.status_code == 400, (response.status_code, response.json())
        assert [e["path"] for e in response.json()["errors"]] == ["page_size"]


def test_every_operation_documents_the_429_of_wrong_tokens(openapi: dict[str, Any]) -> None:
    # README: "Repeated wrong tokens from one address get 429 (THROTTLE_TOKEN_FAILURES, 10/min)", and
    # api/throttling.py: "gets 429 with Retry-After on every token request until the window has passed" (the
    # right token included: tests/api/test_brute_force.py). A client generated from the OpenAPI document
    # meets that 429 on GET /teams/ or GET /plans/, where the document lists no 429.
    missing = sorted(
        f"{method.upper()} {path}"
        for path, operations in openapi["paths"].items()
        for method, operation in operations.items()
        if method in {"get", "post", "patch", "put", "delete"} and "429" not in operation["responses"]
    )
    assert not missing, f"{len(missing)} operations document no 429, e.g. {missing[:5]}"
