"""docs/CONTRACT.md names the report fields a client may rely on: each one is in a report, and the ranges it
lists are exactly the report's, so the document cannot drift from what the solver writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import yaml

from solvers import solve

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = (ROOT / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
EXAMPLE = ROOT / "examples" / "llama3-405b-16384.yaml"


def _report_block() -> str:
    section = CONTRACT.split("## Report document", 1)[1]
    return section.split("```yaml", 1)[1].split("```", 1)[0]


def _named_fields() -> dict[str, list[str]]:
    """Each section of the report block and the fields it names (``section: {a, b, ...}``)."""
    block = re.sub(r"\s+", " ", _report_block())
    return {
        section: [name.strip() for name in names.split(",")]
        for section, names in re.findall(r"(\w+): \{([^}]*)\}", block)
        if section != "scenario"
    }


def test_every_report_field_the_contract_names_is_in_a_report() -> None:
    report = cast(dict[str, Any], solve(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))))
    named = _named_fields()
    assert set(named) >= {"layout", "step", "traffic", "memory", "reliability", "schedule", "energy", "tco"}
    missing = [
        f"{section}.{field}"
        for section, fields in named.items()
        for field in fields
        if field not in report.get(section, {})
    ]
    assert not missing, f"docs/CONTRACT.md names report fields a report lacks: {missing}"
    for top in ("schema_version", "solver_version", "input_hash", "assumptions", "warnings", "scenario"):
        assert f"{top}:" in _report_block() and top in report, top


def test_the_ranges_the_contract_lists_are_the_reports() -> None:
    report = cast(dict[str, Any], solve(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))))
    ranges = CONTRACT.split("- **Ranges.**", 1)[1].split("- **Support.**", 1)[0]
    listed = set(re.findall(r"`(\w+\.\w+)`", ranges))
    assert listed == set(report["ranges"]), sorted(listed ^ set(report["ranges"]))
    assert set(re.findall(r"`(\w+)`", ranges)) >= set(report["ranges_method"])
