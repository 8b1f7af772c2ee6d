"""Publishing price books through the API: patch by default, replace and removals, the publish answer
(changes, plans to re-run), unknown keys and out-of-range prices refused with the entry's path."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import pricing, services
from tests.api import factories as f
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

URL = "/api/v1/price-books/"
H100 = {"kind": "accelerator", "key": "h100-sxm", "value": 18000.0}
QUEBEC = {"kind": "electricity", "key": "quebec", "value": 0.031}
CLOUD = {"kind": "cloud", "key": "h100-sxm", "value": 2.9}


def publish(world: World, entries: list[dict[str, Any]], **body: Any) -> Any:
    payload = {"name": body.pop("name", "book"), "entries": entries, **body}
    return world.carol.client.post(URL, payload, format="json")


def created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.content[:800]
    body: dict[str, Any] = response.json()
    return body


def errors(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.content[:800]
    return {e["path"]: e["message"] for e in response.json()["errors"]}


def test_a_cloud_only_publish_keeps_the_earlier_overrides(world: World) -> None:
    plan = f.plan_for(team=world.alpha, user=world.alice.user, name="p")
    v1 = created(publish(world, [H100, QUEBEC]))
    v2 = created(publish(world, [CLOUD], name="cloud"))
    assert (v1["mode"], v1["based_on"], v2["mode"], v2["based_on"]) == ("patch", None, "patch", v1["id"])
    assert {(e["kind"], e["key"]): e["value"] for e in v2["entries"]} == {
        ("accelerator", "h100-sxm"): 18000.0,
        ("electricity", "quebec"): 0.031,
        ("cloud", "h100-sxm"): 2.9,
    }
    assert v2["changes"] == {
        "added": [{"kind": "cloud", "key": "h100-sxm", "value": 2.9}],
        "changed": [],
        "removed": [],
        "unchanged": 2,
    }
    prices = services.plan_inputs(plan=plan).prices
    assert prices[pricing.PATH_ACCELERATOR_PRICE]["value"] == 18000.0
    assert prices[pricing.PATH_ELECTRICITY_PRICE]["value"] == 0.031
    # The list and the detail show how each version was made.
    listed = {b["id"]: b for b in world.carol.client.get(URL).json()["results"]}
    assert (listed[v2["id"]]["mode"], listed[v2["id"]]["based_on"], listed[v2["id"]]["entry_count"]) == (
        "patch",
        v1["id"],
        3,
    )
    detail = world.carol.client.get(f"{URL}{v2['id']}/").json()
    assert (detail["mode"], detail["based_on"], len(detail["entries"])) == ("patch", v1["id"], 3)


def test_replace_drops_the_overrides_and_says_so(world: World) -> None:
    created(publish(world, [H100, QUEBEC]))
    v2 = created(publish(world, [CLOUD], mode="replace"))
    assert (v2["mode"], v2["based_on"], len(v2["entries"])) == ("replace", None, 1)
    assert v2["changes"]["removed"] == [
        {"kind": "accelerator", "key": "h100-sxm", "value": 18000.0},
        {"kind": "electricity", "key": "quebec", "value": 0.031},
    ]


def test_the_answer_counts_the_plans_whose_prices_move(world: World) -> None:
    moved = f.plan_for(team=world.alpha, user=world.alice.user, name="h100")
    still = f.plan_for(team=world.alpha, user=world.alice.user, name="a100")
    services.scenario_update(
        scenario=still.cluster, user=None, document={**f.CLUSTER_DOC, "accelerator": "a100-sxm-80gb"}
    )
    first = created(publish(world, [H100, QUEBEC]))
    assert first["plans_to_rerun"] == 2  # both plans run in Quebec
    second = created(
        publish(world, [{**H100, "value": 17000.0}, {"kind": "accelerator", "key": "b200", "value": 4e4}])
    )
    assert second["changes"] == {
        "added": [{"kind": "accelerator", "key": "b200", "value": 40000.0}],
        "changed": [{"kind": "accelerator", "key": "h100-sxm", "before": 18000.0, "after": 17000.0}],
        "removed": [],
        "unchanged": 1,
    }
    assert second["plans_to_rerun"] == 1
    from scenarios import fanout
    from scenarios.models import PriceBook

    book = PriceBook.objects.get(pk=second["id"])
    rerun = [plan.pk for plan, sheet in fanout.plans_with_price_changes(book=book) if sheet is not None]
    assert rerun == [moved.pk]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"kind": "electricity", "key": "quebeck", "value": 0.05},
            "unknown region 'quebeck'; did you mean 'quebec'?",
        ),
        (
            {"kind": "accelerator", "key": "h100", "value": 20000},
            "unknown accelerator 'h100'; did you mean 'h100-sxm'?",
        ),
    ],
)
def test_unknown_keys_are_400_with_the_entry_path_and_did_you_mean(
    world: World, entry: dict[str, Any], message: str
) -> None:
    found = errors(publish(world, [CLOUD, QUEBEC, entry]))
    assert found == {"entries[2].key": message}


def test_a_site_key_must_name_a_live_site_of_the_team(world: World) -> None:
    _, _, site = f.scenario_trio(team=world.alpha, user=world.alice.user, suffix="-mtl")
    found = errors(publish(world, [{"kind": "electricity", "key": f"site:{site.name}x", "value": 0.02}]))
    assert found == {"entries[0].key": f"unknown site '{site.name}x'; did you mean 'site:{site.name}'?"}
    created(publish(world, [{"kind": "electricity", "key": f"site:{site.name}", "value": 0.02}]))


def test_electricity_above_the_solvers_limit_is_refused_with_the_limit(world: World) -> None:
    found = errors(publish(world, [CLOUD, {"kind": "electricity", "key": "quebec", "value": 11}]))
    assert list(found) == ["entries[1].value"]
    assert "0 to 10 usd_per_kwh" in found["entries[1].value"]
    book = created(publish(world, [{"kind": "electricity", "key": "quebec", "value": 10}]))
    assert book["entries"][0]["value"] == 10.0


def test_every_kinds_limit_is_the_solvers_and_is_documented(world: World) -> None:
    from solvers.prices import PRICE_KINDS, price_limits

    for kind in PRICE_KINDS:
        key = {"accelerator": "h100-sxm", "node": "dgx-h100", "cloud": "h100-sxm", "electricity": "quebec"}[
            kind
        ]
        low, high = price_limits(kind)
        if kind == "node":  # the per-accelerator limit times THAT node's accelerators (8 in a DGX H100)
            low, high = (bound * 8 for bound in price_limits("accelerator"))
        for refused in (high * 1.01, low - 0.01):
            found = errors(publish(world, [{"kind": kind, "key": key, "value": refused}]))
            assert list(found) == ["entries[0].value"], (kind, refused)
        created(publish(world, [{"kind": kind, "key": key, "value": high}]))
    schema = world.carol.client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    value = schema["components"]["schemas"]["PriceEntryInputRequest"]["properties"]["value"]
    assert value["maximum"] == max(price_limits(kind)[1] for kind in PRICE_KINDS)
    assert "electricity 0 to 10 usd_per_kwh" in value["description"]


def test_a_node_price_the_solver_refuses_for_that_node_is_400(world: World) -> None:
    """1e11 USD for a DGX H100 (8 accelerators) is 1.25e10 per accelerator: the solver refuses it, so the
    publish does (the entry path and the node's limit), instead of every later run of a dgx-h100 plan."""
    found = errors(publish(world, [H100, {"kind": "node", "key": "dgx-h100", "value": 1e11}]))
    assert list(found) == ["entries[1].value"]
    message = found["entries[1].value"]
    assert message.startswith("must be from 0 to 800,000,000 usd for the node 'dgx-h100'"), message
    assert "8 accelerators" in message and "0 to 100,000,000 usd per accelerator" in message
    book = created(publish(world, [{"kind": "node", "key": "dgx-h100", "value": 8e8}]))
    assert [(e["kind"], e["key"], e["value"]) for e in book["entries"]] == [("node", "dgx-h100", 8e8)]


def test_a_cloud_key_with_an_empty_provider_is_400(world: World) -> None:
    found = errors(publish(world, [CLOUD, {"kind": "cloud", "key": ":h100-sxm", "value": 2.5}]))
    assert list(found) == ["entries[1].key"]
    assert found["entries[1].key"].startswith("the provider before ':' is empty")


def test_remove_through_the_api(world: World) -> None:
    created(publish(world, [H100, QUEBEC]))
    found = errors(publish(world, [{"kind": "electricity", "key": "texas", "remove": True}]))
    assert list(found) == ["entries[0].key"] and "not in v1" in found["entries[0].key"]
    removed = created(publish(world, [{"kind": "electricity", "key": "quebec", "remove": True}]))
    assert [(e["kind"], e["key"]) for e in removed["entries"]] == [("accelerator", "h100-sxm")]
    assert removed["changes"]["removed"] == [{"kind": "electricity", "key": "quebec", "value": 0.031}]
    found = errors(publish(world, [{"kind": "accelerator", "key": "h100-sxm", "remove": True, "value": 1}]))
    assert found == {"entries[0].value": "a removal takes only kind and key"}


def test_serializer_errors_use_the_services_entry_paths(world: World) -> None:
    found = errors(publish(world, [CLOUD, {"kind": "gpu", "key": "x", "value": 1}, dict(CLOUD)]))
    assert "entries[1].kind" in found
    found = errors(publish(world, [CLOUD, dict(CLOUD)]))
    assert list(found) == ["entries[1].key"] and "duplicate of entries[0]" in found["entries[1].key"]
