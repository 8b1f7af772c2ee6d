"""The validation corpus: published training runs as data (``corpus/<source-id>.yaml`` beside ``examples/``).

One file per independent source (a paper, one MLPerf round of one submitter, a vendor report); its runs are
held out together in leave-one-source-out cross-validation (``solvers.fit``). Sources of one publication series
(releases of one vendor table, one MLPerf round's submitters on one implementation) name their ``family``; the
validation also holds each family out as a whole (``solvers.validation``), a stricter check than source by source.
Format (every field checked here, errors name the file, the run id and the field)::

    source: {id: <file stem>, title, url, kind: paper|mlperf|vendor|repository, team, family}  # family: optional
    runs:
      - id: <unique across the corpus>
        where: "Table 5, row '175B'"          # table, figure, page or section
        quote: "verbatim words or cells"
        metric: mfu | mfu_bf16 | hfu | step_s | tokens_per_s
        published: 0.522                       # fraction for MFU-like metrics, seconds, or global tokens/s
        flop_convention: "how the figure counts FLOPs and the arithmetic that gives `published`"
        notes: "which scenario fields are stated, which assumed"
        series: <id>  series_kind: strong|weak  # optional, runs of one scaling series
        ablation: <id>                          # optional, one model on one cluster, layouts vary
        scenario: {...}  or  example: <file in examples/>

The loader is pure: it reads and checks text, it does not solve (``tests/solvers/test_corpus.py`` solves every
run). Example: ``load_corpus()`` on an empty directory is an empty ``Corpus``; ``Corpus.sources`` lists the
source ids in file order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from solvers.document_text import InputError, load_yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = ROOT / "corpus"
EXAMPLES_DIR = ROOT / "examples"

METRICS: tuple[str, ...] = ("mfu", "mfu_bf16", "hfu", "step_s", "tokens_per_s")
MFU_METRICS: tuple[str, ...] = ("mfu", "mfu_bf16", "hfu")
KINDS: tuple[str, ...] = ("paper", "mlperf", "vendor", "repository")
SERIES_KINDS: tuple[str, ...] = ("strong", "weak")
_SOURCE_TEXT = ("id", "title", "url", "kind")
_RUN_TEXT = ("id", "where", "quote", "flop_convention", "notes")


class CorpusError(ValueError):
    """A corpus file breaks the format; the message names the file, the run id and the field."""


@dataclass(frozen=True)
class Run:
    """One published figure and the scenario that translates its stated configuration."""

    id: str
    source: str
    where: str
    quote: str
    metric: str
    published: float
    flop_convention: str
    notes: str
    scenario: dict[str, Any]
    series: str | None = None
    series_kind: str | None = None
    ablation: str | None = None
    example: str | None = None

    @property
    def is_mfu(self) -> bool:
        return self.metric in MFU_METRICS


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str
    kind: str
    team: str = ""
    family: str = ""  # the publication series held out with it; "" is the source alone (``Corpus.families``)


@dataclass(frozen=True)
class Corpus:
    sources: tuple[Source, ...] = ()
    runs: tuple[Run, ...] = ()
    files: tuple[str, ...] = field(default=(), repr=False)

    def __len__(self) -> int:
        return len(self.runs)

    def source_ids(self) -> list[str]:
        return [s.id for s in self.sources]

    def families(self) -> dict[str, str]:
        """Each source id's family: its ``family`` or, where it names none, its own id.

        Example: sources ``a`` (family ``x``), ``b`` (family ``x``) and ``c`` give ``{"a": "x", "b": "x", "c": "c"}``.
        """
        return {s.id: s.family or s.id for s in self.sources}


def _fail(file: str, run: str | None, field_name: str, message: str) -> CorpusError:
    where = f"{file}" + (f", run '{run}'" if run else "") + f", field '{field_name}'"
    return CorpusError(f"{where}: {message}")


def _text(data: dict[str, Any], key: str, file: str, run: str | None, *, prefix: str = "") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(file, run, prefix + key, "must be a non-empty string")
    return value.strip()


def _parse_run(raw: Any, file: str, source_id: str, index: int, examples_dir: Path) -> Run:
    if not isinstance(raw, dict):
        raise _fail(file, f"#{index + 1}", "runs", "each run must be a mapping")
    run_id = raw.get("id") if isinstance(raw.get("id"), str) else f"#{index + 1}"
    texts = {key: _text(raw, key, file, run_id) for key in _RUN_TEXT}
    metric = raw.get("metric")
    if metric not in METRICS:
        raise _fail(file, run_id, "metric", f"must be one of {', '.join(METRICS)}, got {metric!r}")
    published = raw.get("published")
    if isinstance(published, bool) or not isinstance(published, int | float) or not published > 0:
        raise _fail(file, run_id, "published", f"must be a positive number, got {published!r}")
    if metric in MFU_METRICS and not published < 1:
        raise _fail(file, run_id, "published", f"{metric} is a fraction of peak (0..1), got {published!r}")
    series, series_kind = raw.get("series"), raw.get("series_kind")
    if (series is None) != (series_kind is None):
        raise _fail(file, run_id, "series_kind", "series and series_kind are given together or not at all")
    if series is not None and (not isinstance(series, str) or series_kind not in SERIES_KINDS):
        raise _fail(file, run_id, "series_kind", f"must be one of {', '.join(SERIES_KINDS)} with a series id")
    ablation = raw.get("ablation")
    if ablation is not None and not isinstance(ablation, str):
        raise _fail(file, run_id, "ablation", "must be a string id")
    scenario, example = raw.get("scenario"), raw.get("example")
    if (scenario is None) == (example is None):
        raise _fail(file, run_id, "scenario", "give exactly one of 'scenario' and 'example'")
    if example is not None:
        path = examples_dir / str(example)
        if not isinstance(example, str) or not path.is_file():
            raise _fail(file, run_id, "example", f"no file examples/{example}")
        scenario = load_yaml(path.read_text(encoding="utf-8"))
    if not isinstance(scenario, dict):
        raise _fail(file, run_id, "scenario", "must be a scenario document (a mapping)")
    return Run(
        id=texts["id"],
        source=source_id,
        where=texts["where"],
        quote=texts["quote"],
        metric=str(metric),
        published=float(published),
        flop_convention=texts["flop_convention"],
        notes=texts["notes"],
        scenario=scenario,
        series=series,
        series_kind=series_kind,
        ablation=ablation,
        example=example,
    )


def parse_source_file(
    text: str, file: str, *, stem: str, examples_dir: Path = EXAMPLES_DIR
) -> tuple[Source, list[Run]]:
    """One corpus file's source and runs; ``CorpusError`` names the file, run and field of the first fault."""
    try:
        data = load_yaml(text)
    except (InputError, yaml.YAMLError) as exc:
        raise _fail(file, None, "(document)", "not valid YAML: " + " ".join(str(exc).split())) from None
    if not isinstance(data, dict):
        raise _fail(file, None, "(document)", "must be a mapping with 'source' and 'runs'")
    unknown = sorted(set(data) - {"source", "runs"})
    if unknown:
        raise _fail(file, None, unknown[0], "unknown key (expected 'source' and 'runs')")
    raw_source = data.get("source")
    if not isinstance(raw_source, dict):
        raise _fail(file, None, "source", "must be a mapping")
    texts = {key: _text(raw_source, key, file, None, prefix="source.") for key in _SOURCE_TEXT}
    if texts["id"] != stem:
        raise _fail(file, None, "source.id", f"must equal the file stem '{stem}', got '{texts['id']}'")
    if texts["kind"] not in KINDS:
        raise _fail(file, None, "source.kind", f"must be one of {', '.join(KINDS)}")
    team = raw_source.get("team") or ""
    family = raw_source.get("family", "")
    if not isinstance(family, str) or ("family" in raw_source and not family.strip()):
        raise _fail(file, None, "source.family", "must be a non-empty string (a publication series' id)")
    source = Source(
        id=texts["id"],
        title=texts["title"],
        url=texts["url"],
        kind=texts["kind"],
        team=str(team),
        family=family.strip(),
    )
    raw_runs = data.get("runs")
    if not isinstance(raw_runs, list) or not raw_runs:
        raise _fail(file, None, "runs", "must be a non-empty list")
    runs = [_parse_run(raw, file, source.id, i, examples_dir) for i, raw in enumerate(raw_runs)]
    return source, runs


def load_corpus(directory: Path = CORPUS_DIR, *, examples_dir: Path = EXAMPLES_DIR) -> Corpus:
    """Every ``*.yaml`` of ``directory`` in name order, checked; run ids unique across the corpus."""
    if not directory.is_dir():
        return Corpus()
    sources: list[Source] = []
    runs: list[Run] = []
    files: list[str] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        name = f"corpus/{path.name}" if directory == CORPUS_DIR else str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail(
                name, None, "(document)", f"cannot be read as UTF-8 text ({type(exc).__name__})"
            ) from None
        source, file_runs = parse_source_file(text, name, stem=path.stem, examples_dir=examples_dir)
        for run in file_runs:
            if run.id in seen:
                raise _fail(name, run.id, "id", f"duplicate run id (also in {seen[run.id]})")
            seen[run.id] = name
        sources.append(source)
        runs.extend(file_runs)
        files.append(name)
    return Corpus(sources=tuple(sources), runs=tuple(runs), files=tuple(files))


def corpus_hash(corpus: Corpus) -> str:
    """SHA-256 of the runs' content (id, source, metric, published figure and scenario, canonical JSON): the fit
    records which corpus it saw, whether read from ``corpus/`` or built in."""
    digest = hashlib.sha256()
    for run in corpus.runs:
        item = [run.id, run.source, run.metric, run.published, run.scenario]
        digest.update(json.dumps(item, sort_keys=True, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()
