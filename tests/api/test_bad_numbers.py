"""Bad numbers at every numeric field of the scenario endpoints: only 2xx or 400, nothing non-finite stored.

Each example takes a complete, valid document, replaces one numeric field (found by walking the document)
with NaN, ±Infinity, a literal that overflows a double, a negative, zero, a huge value or a value of the
wrong type, sends it as raw JSON text (so that NaN really reaches the server) and checks the answer and the
database.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api import factories as f
from tests.api.conftest import World, build_world

pytestmark = pytest.mark.django_db

CLUSTER: dict[str, Any] = {
    "accelerator": {"preset": "h100-sxm", "unit_price_usd": 25000.0, "embodied_kgco2e": 150.0},
    "gpus": 64,
    "gpus_per_node": 8,
    "scale_up": {"bandwidth_gb_s": 450.0, "latency_us": 1.0},
    "scale_out": {"bandwidth_gb_s": 50.0, "latency_us": 5.0, "oversubscription": 1.0},
    "storage": {"write_gb_s": 500.0, "per_writer_gb_s": 7.0},
    "reliability": {
        "gpu_mttf_h": 50000.0,
        "nic_mttf_h": 150000.0,
        "psu_mttf_h": 100000.0,
        "psus_per_node": 2,
        "nics_per_node": 8,
        "other_mttf_h": [200000.0],
        "restart_s": 300.0,
    },
    "power": {"host_w_per_node": 2000.0, "idle_fraction": 0.3},
}
MODEL: dict[str, Any] = {
    "layers": 32,
    "hidden": 4096,
    "ffn_hidden": 14336,
    "heads": 32,
    "kv_heads": 8,
    "vocab": 128256,
    "params": 8.0e9,
}
SITE: dict[str, Any] = {
    "grid_gco2_per_kwh": 20.0,
    "pue": 1.06,
    "wue_l_per_kwh": 0.5,
    "electricity_usd_per_kwh": 0.05,
}
TRAINING: dict[str, Any] = {
    "seq_len": 8192,
    "global_batch_tokens": 4194304,
    "total_tokens": 1.0e12,
    "precision": "bf16",
    "layout": {
        "tp": 2,
        "pp": 2,
        "cp": 1,
        "ep": 1,
        "microbatch_seqs": 1,
        "virtual_stages": 1,
        "zero_stage": 1,
    },
    "efficiency": {"compute": 0.5, "overlap": {"tp": 0.0, "cp": 0.0, "pp": 0.0, "dp": 0.5, "ep": 0.0}},
    "checkpoint": {"interval_h": 2.0, "writers": 8},
}
ECONOMICS: dict[str, Any] = {
    "amortization_years": 3.0,
    "infra_multiplier": 1.0,
    "maintenance_per_year": 0.05,
    "cloud_usd_per_gpu_hour": 2.5,
    "embodied_lifetime_years": 5.0,
    "job_days": 30.0,
}


def numeric_paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(document, dict):
        return [p for key, value in document.items() for p in numeric_paths(value, (*prefix, key))]
    if isinstance(document, list):
        return [p for i, value in enumerate(document) for p in numeric_paths(value, (*prefix, i))]
    if isinstance(document, int | float) and not isinstance(document, bool):
        return [prefix]
    return []


# (endpoint, the document sent, where it goes in the body)
TARGETS: list[tuple[str, dict[str, Any]]] = [
    ("clusters", {"document": CLUSTER}),
    ("models", {"document": MODEL}),
    ("sites", {"document": SITE}),
    ("plans", {"training": TRAINING, "economics": ECONOMICS}),
    (
        "solve",
        {
            "schema_version": 1,
            "cluster": CLUSTER,
            "model": MODEL,
            "site": SITE,
            "training": TRAINING,
            "economics": ECONOMICS,
        },
    ),
    ("price-books", {"name": "prices", "entries": [{"kind": "electricity", "key": "quebec", "value": 0.05}]}),
]
CASES = [(endpoint, body, path) for endpoint, body in TARGETS for path in numeric_paths(body)]

# Raw JSON texts: the parser must refuse the first four, the rules the rest.
BAD_LITERALS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e400",
    "-1",
    "-0.5",
    "0",
    "1e300",
    "-1e300",
    "123456789012345678901234567890",
    "9007199254740993",
    '"12"',
    '"NaN"',
    "true",
    "null",
    "[]",
    "{}",
    '""',
]

_names = itertools.count()
PLACEHOLDER = "__bad_value__"


def with_value(body: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = PLACEHOLDER
    return out


def all_floats_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(all_floats_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(all_floats_finite(v) for v in value)
    return True


def stored_documents_are_finite() -> bool:
    from scenarios import models as m

    docs: list[Any] = []
    for revision in (m.ClusterRevision, m.ModelRevision, m.SiteRevision):
        docs += list(revision.objects.values_list("document", flat=True))
    for training, economics in m.Plan.objects.values_list("training", "economics"):
        docs += [training, economics]
    docs += list(m.PriceEntry.objects.values_list("value", flat=True))
    return all_floats_finite(docs)


@pytest.fixture
def env(db: None) -> dict[str, Any]:
    world: World = build_world()
    trio = f.scenario_trio(team=world.alpha, user=world.alice.user)
    return {"world": world, "trio": trio}


def send(env: dict[str, Any], endpoint: str, body: dict[str, Any], literal: str, *, update: bool) -> Any:
    world: World = env["world"]
    cluster, model, site = env["trio"]
    body = dict(body)
    url = f"/api/v1/{endpoint}/"
    if endpoint in {"clusters", "models", "sites", "plans"} and not update:
        body["name"] = f"n-{next(_names)}"
    if endpoint == "plans" and not update:
        body.update(cluster=cluster.pk, model=model.pk, site=site.pk)
    if update:
        target = {"clusters": cluster, "models": model, "sites": site}.get(endpoint)
        if endpoint == "plans":
            if "plan" not in env:
                env["plan"] = f.plan_for(
                    team=world.alpha, user=world.alice.user, name="target", trio=env["trio"]
                )
            target = env["plan"]
        assert target is not None
        url = f"{url}{target.pk}/"
    raw = json.dumps(body).replace(json.dumps(PLACEHOLDER), literal)
    client = world.alice.client
    method = client.patch if update else client.post
    return method(url, data=raw, content_type="application/json")


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=st.sampled_from(CASES),
    literal=st.sampled_from(BAD_LITERALS) | st.floats(allow_nan=False, allow_infinity=False).map(repr),
    update=st.booleans(),
)
def test_bad_numbers_are_400_and_never_stored_non_finite(
    env: dict[str, Any], case: Any, literal: str, update: bool
) -> None:
    endpoint, body, path = case
    if endpoint in {"solve", "price-books"}:
        update = False
    response = send(env, endpoint, with_value(body, path), literal, update=update)
    assert response.status_code in {200, 201, 202, 400}, (endpoint, path, literal, response.content[:400])
    if response.status_code == 400:
        errors = response.json()["errors"]
        assert errors and all(isinstance(e["path"], str) and e["message"] for e in errors)
    assert stored_documents_are_finite()


def json_path(path: tuple[Any, ...]) -> str:
    """The error path the API gives for a field: ``("document", "other_mttf_h", 0)`` ->
    ``document.other_mttf_h[0]``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize(("endpoint", "body", "path"), CASES[:: max(1, len(CASES) // 12)])
def test_non_finite_literals_are_refused_with_the_field_path(
    env: dict[str, Any], endpoint: str, body: dict[str, Any], path: tuple[Any, ...], literal: str
) -> None:
    response = send(env, endpoint, with_value(body, path), literal, update=False)
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == [json_path(path)], response.json()
    assert stored_documents_are_finite()


def test_every_numeric_field_is_covered() -> None:
    paths = {(endpoint, path) for endpoint, _, path in CASES}
    assert ("clusters", ("document", "reliability", "gpu_mttf_h")) in paths
    assert ("plans", ("training", "layout", "tp")) in paths
    assert len(paths) > 60
