"""The validated envelope's data file, derived from the validated runs (``python -m solvers envelope``).

The runs are those of the validation corpus (``corpus/<source-id>.yaml``, each run's ``scenario`` or
``example``) and the published cases of ``solvers.published`` (``examples/*.yaml``). Each is resolved by the
parser a solve uses and its layout's features are taken by ``solvers.search.envelope.layout_features``; a
scenario that does not resolve, or whose layout is ``auto``, is left out and listed as skipped. Runs whose
resolved documents are identical (a corpus run that names an example, and the published case of that
example) count once, under the first id met (corpus runs first, in file order). A corpus run that the model
misses by more than the validation target when its source is held out (``outside_target`` of
``solvers/catalog/step_uncertainty.json``, written by ``python -m solvers fit``) is left out too: it is a
published run, but evidence against the model where it lies, not for it, and so is every run whose resolved
document is the same (the published case of the example it names). So ``python -m solvers fit`` comes
before ``python -m solvers envelope --write``.

``python -m solvers envelope --write`` rewrites ``solvers/catalog/validated_envelope.json``;
``python -m solvers envelope --check`` exits 1 when the file differs from what the runs give
(``tests/solvers/test_envelope.py`` runs the same check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from solvers.document_text import InputError, load_yaml
from solvers.errors import ScenarioError
from solvers.inputs import resolve
from solvers.published import CASES, EXAMPLES_DIR
from solvers.search.envelope import ENVELOPE_FILE, features_of_runs
from solvers.step_uncertainty import read_outside_target

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus"


def corpus_scenarios(directory: Path = CORPUS_DIR) -> list[tuple[str, str, Any]]:
    """(run id, source id, scenario document) of every run of ``directory``'s corpus files, in name order.

    Reads only what the envelope needs (``source.id``, each run's ``id`` and ``scenario`` or ``example``);
    a file or run without them is skipped here: checking the corpus format is the corpus loader's job.
    """
    out: list[tuple[str, str, Any]] = []
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.yaml")):
        try:
            data = load_yaml(path.read_text(encoding="utf-8"))
        except InputError:
            continue
        if not isinstance(data, dict):
            continue
        source = data.get("source")
        source_id = str(source.get("id", path.stem)) if isinstance(source, dict) else path.stem
        for run in data.get("runs") or []:
            if not isinstance(run, dict) or not isinstance(run.get("id"), str):
                continue
            scenario = run.get("scenario")
            example = run.get("example")
            if scenario is None and isinstance(example, str) and (EXAMPLES_DIR / example).is_file():
                scenario = load_yaml((EXAMPLES_DIR / example).read_text(encoding="utf-8"))
            if isinstance(scenario, dict):
                out.append((run["id"], source_id, scenario))
    return out


def published_scenarios() -> list[tuple[str, str, Any]]:
    """(example stem, "published", scenario document) of each example of ``solvers.published.CASES``, once."""
    seen: dict[str, None] = {}
    for case in CASES:
        seen.setdefault(case.example, None)
    return [
        (Path(name).stem, "published", load_yaml((EXAMPLES_DIR / name).read_text(encoding="utf-8")))
        for name in seen
    ]


def envelope_document(corpus_dir: Path = CORPUS_DIR) -> dict[str, Any]:
    """The data file's content: the envelope of every validated run, and the runs left out with why."""
    rows = []
    skipped: list[dict[str, str]] = []
    hashes: set[str] = set()
    target_points, missed = read_outside_target()
    for run_id, source, scenario in [*corpus_scenarios(corpus_dir), *published_scenarios()]:
        try:
            resolved = resolve(scenario)
        except ScenarioError as exc:
            skipped.append({"id": run_id, "reason": str(exc.errors[0])})
            continue
        if run_id in missed:
            skipped.append(
                {
                    "id": run_id,
                    "reason": f"held out, the model misses it by {missed[run_id]:+.2f} MFU points "
                    f"(more than the validation target of {target_points:g})",
                }
            )
            # the same document under another id (the published case of its example) is this run: out too
            hashes.add(resolved.document_hash)
            continue
        if resolved.layout_auto:
            skipped.append({"id": run_id, "reason": "training.layout: auto (no layout was published)"})
            continue
        if resolved.document_hash in hashes:
            continue
        hashes.add(resolved.document_hash)
        rows.append((run_id, source, resolved.model, resolved.cluster, resolved.training, resolved.layouts))
    document = features_of_runs(rows).as_dict()
    document["skipped"] = skipped
    return document


def envelope_text(corpus_dir: Path = CORPUS_DIR) -> str:
    return json.dumps(envelope_document(corpus_dir), indent=1, allow_nan=False, ensure_ascii=False) + "\n"


def write_envelope(path: Path = ENVELOPE_FILE) -> Path:
    path.write_text(envelope_text(), encoding="utf-8")
    return path


def envelope_is_current(path: Path = ENVELOPE_FILE) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == envelope_text()
