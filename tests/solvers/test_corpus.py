"""The validation corpus (``corpus/*.yaml``): the format is checked, every run parses and solves."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from solvers import solve
from solvers.corpus import CORPUS_DIR, METRICS, MFU_METRICS, CorpusError, Run, load_corpus, parse_source_file
from solvers.published import validation_corpus

CORPUS = load_corpus()
RUNS = validation_corpus().runs
MIN_SOURCES_WHEN_PRESENT = 8

GOOD = """
source: {id: demo-2024, title: "Demo", url: "https://example.org", kind: paper, team: demo}
runs:
  - id: demo-2024-a
    where: "Table 1"
    quote: "52% MFU"
    metric: mfu
    published: 0.52
    flop_convention: "model FLOPs / BF16 peak"
    notes: "all stated"
    example: megatron-sc21-1.7b.yaml
"""


def test_a_good_file_parses() -> None:
    source, runs = parse_source_file(GOOD, "corpus/demo-2024.yaml", stem="demo-2024")
    assert source.id == "demo-2024" and [r.id for r in runs] == ["demo-2024-a"]
    assert runs[0].scenario["model"]


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("metric: mfu", "metric: flops", "field 'metric'"),
        ("published: 0.52", "published: 52", "field 'published'"),
        ('quote: "52% MFU"', 'quote: ""', "field 'quote'"),
        ("id: demo-2024,", "id: other,", "field 'source.id'"),
        ("example: megatron-sc21-1.7b.yaml", "example: nope.yaml", "field 'example'"),
        ('notes: "all stated"', 'notes: "x"\n    series: s1', "field 'series_kind'"),
        ("team: demo}", "team: demo, family: 7}", "field 'source.family'"),
        ("team: demo}", 'team: demo, family: " "}', "field 'source.family'"),
    ],
)
def test_faults_name_file_run_and_field(old: str, new: str, field: str) -> None:
    with pytest.raises(CorpusError) as info:
        parse_source_file(GOOD.replace(old, new), "corpus/demo-2024.yaml", stem="demo-2024")
    message = str(info.value)
    assert "corpus/demo-2024.yaml" in message and field in message
    if "source" not in field:
        assert "demo-2024-a" in message


def test_a_source_is_its_own_family_unless_it_names_one(tmp_path: Path) -> None:
    (tmp_path / "demo-2024.yaml").write_text(
        GOOD.replace("team: demo}", "team: demo, family: demo}"), encoding="utf-8"
    )
    (tmp_path / "demo-2025.yaml").write_text(
        GOOD.replace("demo-2024", "demo-2025").replace("team: demo}", "team: demo, family: demo}"),
        encoding="utf-8",
    )
    (tmp_path / "other-2024.yaml").write_text(GOOD.replace("demo-2024", "other-2024"), encoding="utf-8")
    assert load_corpus(tmp_path).families() == {
        "demo-2024": "demo",
        "demo-2025": "demo",
        "other-2024": "other-2024",
    }


def test_the_corpus_families_group_sources_of_one_series() -> None:
    """Every family of several sources is one publication series: its sources' ids share the family's id as a
    prefix (releases of one table, one MLPerf round's submitters)."""
    families = CORPUS.families()
    for source, family in families.items():
        assert source == family or source.startswith(family + "-"), (source, family)
    assert sum(1 for s, f in families.items() if s != f) >= 2


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    (tmp_path / "demo-2024.yaml").write_text(GOOD, encoding="utf-8")
    other = GOOD.replace("demo-2024,", "demo-2025,")
    (tmp_path / "demo-2025.yaml").write_text(other, encoding="utf-8")
    with pytest.raises(CorpusError, match="duplicate run id"):
        load_corpus(tmp_path)


def test_ids_unique_and_metrics_consistent() -> None:
    ids = [r.id for r in RUNS]
    assert len(ids) == len(set(ids))
    for run in RUNS:
        assert run.metric in METRICS
        if run.metric in MFU_METRICS:
            assert 0 < run.published < 1, run.id
        else:
            assert run.published > 0, run.id


def test_enough_sources_once_the_corpus_is_in() -> None:
    if not CORPUS.runs:
        pytest.skip(f"no corpus files in {CORPUS_DIR}; the built-in cases of solvers.published are used")
    assert len(CORPUS.sources) >= MIN_SOURCES_WHEN_PRESENT


@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
def test_every_run_solves(run: Run) -> None:
    report = cast(dict[str, Any], solve(run.scenario))
    assert float(report["step"][run.metric]) > 0
