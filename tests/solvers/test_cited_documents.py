"""Documents that a report's assumptions cite as their source are part of the repository.

Every figure "comes with the assumptions it rests on" (README): each assumption of a report names its source,
shown to users in the API's ``report.assumptions`` and the dashboard's assumptions table. A source that names a
project document (``CONTRACT.md v1: ...``) sends the reader to a file they must be able to open.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from solvers import solve

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llama3-405b-16384.yaml"
DOCUMENT_NAME = re.compile(r"\b([A-Z][A-Z0-9_]*\.md)\b")


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [text for value in node.values() for text in _strings(value)]
    if isinstance(node, list):
        return [text for value in node for text in _strings(value)]
    return [node] if isinstance(node, str) else []


def _repository_documents() -> set[str]:
    skip = {".venv", ".git", "node_modules", "var"}
    return {
        path.name
        for path in ROOT.rglob("*.md")
        if not any(part in skip for part in path.relative_to(ROOT).parts)
    }


def test_every_document_a_report_cites_as_a_source_is_in_the_repository() -> None:
    report = solve(yaml.safe_load(EXAMPLE.read_text()), ranges=False)
    cited = {name for text in _strings(report.get("assumptions")) for name in DOCUMENT_NAME.findall(text)}
    assert cited, "the report cites no project document (the test needs a citation to check)"
    missing = sorted(cited - _repository_documents())
    assert not missing, f"a report's assumptions cite {missing} as their source, which the repository lacks"


def test_every_document_the_conventions_cite_is_in_the_repository() -> None:
    text = (ROOT / "docs" / "CONVENTIONS.md").read_text()
    missing = sorted(set(DOCUMENT_NAME.findall(text)) - _repository_documents())
    assert not missing, f"docs/CONVENTIONS.md cites {missing}, which the repository lacks"
