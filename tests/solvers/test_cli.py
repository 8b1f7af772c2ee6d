"""The command line, run as a user runs it: ``python -m solvers ...`` in a subprocess."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from solvers.cli import EXIT_BAD_INPUT, load_yaml, main, parse_text

ROOT = Path(__file__).resolve().parents[2]
GOOD = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 16},
    "training": {"global_batch_seqs": 64, "layout": {"tp": 2, "pp": 1}},
}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "solvers", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def assert_no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_solve_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "model: {preset: llama3-8b}\ncluster: {node: dgx-h100, gpus: 16}\n"
        "training:\n  total_tokens: 1.0e12\n  global_batch_seqs: 64\n  layout: {tp: 2}\n"
    )
    proc = run("solve", str(path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["layout"]["tp"] == 2 and len(report["input_hash"]) == 64
    assert report["scenario"]["training"]["total_tokens"] == 1.0e12


def test_solve_json_from_stdin() -> None:
    proc = run("solve", "-", stdin=json.dumps(GOOD))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["layout"]["dp"] == 8


def test_bad_field_exits_2_and_names_the_path() -> None:
    bad = {**GOOD, "cluster": {"node": "dgx-h100", "gpus": 16, "gpuz": 3}}
    proc = run("solve", "-", stdin=json.dumps(bad))
    assert proc.returncode == 2
    assert "cluster.gpuz: unknown field (did you mean 'gpus'?)" in proc.stderr
    assert proc.stdout == ""
    assert_no_traceback(proc)


def test_engine_rule_exits_2_with_a_path() -> None:
    bad = {**GOOD, "training": {"global_batch_seqs": 63, "layout": {"tp": 2}}}
    proc = run("solve", "-", stdin=json.dumps(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: training.")
    assert_no_traceback(proc)


def test_invalid_yaml_exits_2() -> None:
    proc = run("solve", "-", stdin="model: [unclosed\n  - x: {")
    assert proc.returncode == 2
    assert "not valid JSON or YAML" in proc.stderr
    assert_no_traceback(proc)


def test_missing_file_exits_2(tmp_path: Path) -> None:
    proc = run("solve", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr
    assert_no_traceback(proc)


def test_batch_keeps_one_line_per_input_line_in_order() -> None:
    bad = {**GOOD, "model": {"preset": "llama-3-8b"}}
    lines = [json.dumps(GOOD), json.dumps(bad), "{not json", "", json.dumps({**GOOD, "name": "x"})]
    proc = run("solve", "--batch", "-", stdin="\n".join(lines) + "\n")
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert len(out) == len(lines)
    results = [json.loads(line) for line in out]
    assert "input_hash" in results[0]
    assert results[1]["error"]["path"] == "model.preset"
    assert "did you mean 'llama3-8b'" in results[1]["error"]["message"]
    assert "not valid JSON" in results[2]["error"]["message"]
    assert results[3]["error"]["message"] == "empty line"
    assert results[4]["input_hash"] == results[0]["input_hash"]  # labels do not change the hash
    assert_no_traceback(proc)


def test_batch_all_good_exits_0() -> None:
    proc = run("solve", "--batch", "-", stdin=json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    assert proc.returncode == 0, proc.stdout
    assert len(proc.stdout.splitlines()) == 2


def test_catalog_json_and_text() -> None:
    proc = run("catalog", "--json")
    assert proc.returncode == 0
    catalog = json.loads(proc.stdout)
    assert set(catalog) == {"accelerators", "nodes", "fabrics", "models", "regions"}
    assert "h100-sxm" in catalog["accelerators"]
    text = run("catalog")
    assert text.returncode == 0 and "llama3-405b" in text.stdout and "quebec" in text.stdout


# Three sources of the corpus (29 runs, one of them at 12,288 GPUs): the whole corpus takes minutes to refit once
# per source, and the command's path is the same.
SMALL_CORPUS = ("bigscience-2022-bloom.yaml", "jiang-2024-megascale.yaml", "zhang-2022-opt.yaml")


def test_validate_prints_the_table(tmp_path: Path) -> None:
    for name in SMALL_CORPUS:
        shutil.copy(ROOT / "corpus" / name, tmp_path / name)
    proc = run("validate", "--corpus", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("HELD OUT (leave one source out): MFU mean |error|")
    assert "12288" in proc.stdout and "in sample" in proc.stdout
    assert "(25 runs, 3 sources)" in proc.stdout
    assert "held-out mean with the sources drawn again (4,000 times): 90% interval" in proc.stdout
    # megascale's 23 runs leave 2 to fit a class on: only bloom's and OPT's runs are checked
    assert "holds" in proc.stdout and "of the 2 runs held out [" in proc.stdout
    data = json.loads(run("validate", "--json", "--corpus", str(tmp_path)).stdout)
    assert data["summary"]["runs"] == 25
    boot = data["summary"]["held_out_mean_abs_points_bootstrap"]
    assert boot["low"] <= data["summary"]["held_out_mean_abs_points"] <= boot["high"]
    assert data["summary"]["held_out_range_coverage"]["runs"] == 2
    assert {"in_sample", "held_out", "legacy", "legacy_held_out"} <= set(data["runs"][0])
    # no two of these sources publish one configuration: the section says so
    assert "sources at one configuration: none" in proc.stdout
    assert data["matched_configurations"]["groups"] == []
    assert data["matched_configurations"]["same_runs"] == []
    assert data["matched_configurations"]["summary"]["same_run_sets"] == 0


def test_validate_refuses_a_corpus_directory_it_cannot_read(tmp_path: Path) -> None:
    proc = run("validate", "--corpus", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "--corpus" in proc.stderr and "not a directory" in proc.stderr
    (tmp_path / "broken.yaml").write_text("source: {id: x}\nruns: 7\n", encoding="utf-8")
    proc = run("validate", "--corpus", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: --corpus: {tmp_path / 'broken.yaml'}")
    assert_no_traceback(proc)
    (tmp_path / "broken.yaml").write_text("source: {id: x\nruns: [\n", encoding="utf-8")
    proc = run("validate", "--corpus", str(tmp_path))
    assert proc.returncode == 2 and "not valid YAML" in proc.stderr and "broken.yaml" in proc.stderr
    (tmp_path / "broken.yaml").write_bytes(b"\xff\xfe\x00source")
    proc = run("validate", "--corpus", str(tmp_path))
    assert proc.returncode == 2 and "cannot be read as UTF-8 text" in proc.stderr
    assert_no_traceback(proc)


def test_unknown_subcommand_exits_2() -> None:
    proc = run("frobnicate")
    assert proc.returncode == 2
    assert_no_traceback(proc)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x: 1.0e12", 1.0e12),
        ("x: 15.6e12", 15.6e12),
        ("x: 1e9", 1e9),
        ("x: 2.5", 2.5),
        ("x: 7", 7),
        ("x: 1_024", 1024),
    ],
)
def test_yaml_numbers_read_as_numbers(text: str, expected: float) -> None:
    value = load_yaml(text)["x"]
    assert value == expected and not isinstance(value, str)


def test_json_is_tried_before_yaml() -> None:
    assert parse_text('{"a": 1}') == {"a": 1}
    assert parse_text("a: 1") == {"a": 1}


def test_oversized_document_is_refused() -> None:
    from solvers.cli import MAX_DOCUMENT_CHARS

    proc = run("solve", "-", stdin="#" * (MAX_DOCUMENT_CHARS + 1))
    assert proc.returncode == 2
    assert "document too large" in proc.stderr
    assert_no_traceback(proc)


def test_schema_command_prints_the_json_schema() -> None:
    proc = run("schema")
    assert proc.returncode == 0
    document = json.loads(proc.stdout)
    assert document["properties"]["cluster"]["anyOf"][0]["properties"]["gpus"]["maximum"] == 1_048_576


# --- Bad sweep documents: exit 2 naming the field, never an internal error -------------------------------


SWEEP_BASE: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 64},
    "training": {"total_tokens": 1e12, "layout": "auto"},
    "site": {"region": "us-average"},
}
SWEEP_AXIS = [{"field": "cluster.gpus", "values": [64]}]


def _sweep_cli(text: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["sweep", "-", "--compact"], stdin=io.StringIO(text), stdout=out, stderr=err)
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("sweep", "field"),
    [
        ({"axes": SWEEP_AXIS, "pareto": 5}, "sweep.pareto"),
        ({"axes": SWEEP_AXIS, "pareto": None}, "sweep.pareto"),
        # (stop - start) / step is infinite: a count with no floor
        (
            {"axes": [{"field": "cluster.gpus", "range": {"start": 0, "stop": 1e308, "step": 1e-10}}]},
            "sweep.axes[0].range",
        ),
    ],
)
def test_bad_sweep_options_exit_2_naming_the_field(sweep: dict[str, Any], field: str) -> None:
    code, err = _sweep_cli(json.dumps({**SWEEP_BASE, "sweep": sweep}))
    assert code == EXIT_BAD_INPUT, err
    assert field in err, err


def test_an_infinite_axis_value_is_refused_like_solve_refuses_it() -> None:
    # 1e400 reads as an infinite float: refused naming the value, as `solve` refuses it
    text = json.dumps(
        {**SWEEP_BASE, "sweep": {"axes": [{"field": "training.total_tokens", "values": [1e12]}]}}
    )
    text = text.replace("[1000000000000.0]", "[1e12, 1e400]")
    code, err = _sweep_cli(text)
    assert code == EXIT_BAD_INPUT and "sweep.axes[0].values[1]: must be a finite number" in err, err
