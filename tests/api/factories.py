"""Rows for API tests, made through the scenarios services (results are inserted as the worker would)."""

from __future__ import annotations

import hashlib
from typing import Any

CLUSTER_DOC: dict[str, Any] = {"accelerator": "h100-sxm", "gpus": 64, "gpus_per_node": 8}
MODEL_DOC: dict[str, Any] = {"preset": "llama3-8b"}
SITE_DOC: dict[str, Any] = {"region": "quebec"}
TRAINING: dict[str, Any] = {
    "seq_len": 8192,
    "global_batch_tokens": 4194304,
    "total_tokens": 1.0e12,
    "precision": "bf16",
    "layout": {"tp": 2, "pp": 1, "cp": 1, "microbatch_seqs": 1},
}
ECONOMICS: dict[str, Any] = {"amortization_years": 3}


def scenario_trio(*, team: Any, user: Any, suffix: str = "") -> tuple[Any, Any, Any]:
    from scenarios import services

    cluster = services.scenario_create(
        kind="cluster", team=team, name=f"c{suffix}", document=CLUSTER_DOC, user=user
    )
    model = services.scenario_create(
        kind="model", team=team, name=f"m{suffix}", document=MODEL_DOC, user=user
    )
    site = services.scenario_create(kind="site", team=team, name=f"s{suffix}", document=SITE_DOC, user=user)
    return cluster, model, site


def plan_for(*, team: Any, user: Any, name: str, trio: tuple[Any, Any, Any] | None = None) -> Any:
    from scenarios import services

    cluster, model, site = trio or scenario_trio(team=team, user=user, suffix=f"-{name}")
    return services.plan_create(
        team=team,
        user=user,
        name=name,
        cluster=cluster,
        model=model,
        site=site,
        training=TRAINING,
        economics=ECONOMICS,
    )


def fake_report(scale: float) -> dict[str, Any]:
    """A report document with the fields compare reads; numbers scale with ``scale``."""
    return {
        "schema_version": 1,
        "step": {
            "compute_s": 1.0 * scale,
            "exposed_comm_s": {"tp": 0.1 * scale, "cp": 0.0, "pp": 0.0, "dp": 0.05 * scale, "ep": 0.0},
            "bubble_s": 0.0,
            "bubble_fraction": 0.0,
            "step_s": 1.15 * scale,
            "tokens_per_s": 1e6 / scale,
            "mfu": 0.4 / scale,
        },
        "schedule": {"ideal_days": 10.0 * scale, "wall_clock_days": 11.0 * scale},
        "reliability": {"goodput": 0.9, "expected_failures": 3.0 * scale},
        "energy": {"it_kwh": 1e5 * scale, "facility_kwh": 1.1e5 * scale},
        "carbon": {
            "operational_kgco2e": 2e3 * scale,
            "embodied_kgco2e": 1e3,
            "total_kgco2e": 3e3 * scale,
            "water_l": 0.0,
        },
        "tco": {
            "capex_usd": 1e6 * scale,
            "maintenance_usd": 5e4 * scale,
            "electricity_usd": 1e4 * scale,
            "total_usd": 1.06e6 * scale,
            "usd_per_million_tokens": 1.06 * scale,
        },
    }


def insert_result(*, plan: Any, scale: float = 1.0, previous: Any = None, team_price_book: Any = None) -> Any:
    """A result row as a worker would store it (results are insert-only), and the plan pointed at it;
    ``team_price_book`` is the team book it was priced by (a re-run after that book's publication)."""
    from scenarios.adapters import plan_revisions
    from scenarios.models import Plan, Result

    revisions = plan_revisions(plan=plan)
    report = fake_report(scale)
    version = (previous.version + 1) if previous is not None else 1
    result = Result.objects.create(
        plan=plan,
        team_id=plan.team_id,
        version=version,
        input_snapshot={"training": TRAINING, "scale": scale},
        prices={},
        input_hash=hashlib.sha256(f"{plan.pk}-{version}-{scale}".encode()).hexdigest(),
        solver_version="test",
        cluster_revision=revisions.cluster,
        model_revision=revisions.model,
        site_revision=revisions.site,
        report=report,
        previous=previous,
        team_price_book=team_price_book,
        step_s=report["step"]["step_s"],
        mfu=report["step"]["mfu"],
        total_usd=report["tco"]["total_usd"],
        usd_per_million_tokens=report["tco"]["usd_per_million_tokens"],
        total_kgco2e=report["carbon"]["total_kgco2e"],
        wall_clock_days=report["schedule"]["wall_clock_days"],
    )
    Plan.objects.filter(pk=plan.pk).update(latest_result=result)
    plan.latest_result = result
    return result
