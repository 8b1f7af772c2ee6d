"""The command line (``python -m solvers``) at its edges: a closed or endless standard input, a byte order
mark, over-long numbers, values JSON cannot hold, a Pareto front that lists a metric twice, usage errors.

The rules they hold the CLI to are its own (``solvers.cli``'s docstring): bad input is exit 2 with a message
naming the field or the argument, 3 is only for an internal solver error, no traceback, valid JSON on stdout.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from solvers.cli import EXIT_BAD_INPUT, EXIT_OK, main

ROOT = Path(__file__).resolve().parents[2]
GOOD: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 16},
    "training": {"global_batch_seqs": 64, "total_tokens": 1e12, "layout": {"tp": 2, "pp": 1}},
}
YAML_BASE = (
    "model: {preset: llama3-8b}\ncluster: {node: dgx-h100, gpus: 16}\n"
    "training: {global_batch_seqs: 64, total_tokens: 1.0e12, layout: {tp: 2, pp: 1}}\n"
)


def _run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "solvers", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        **kwargs,
    )


# 1. Standard input closed (`python -m solvers solve - <&-`, sys.stdin is None) is bad input (it was exit 3).


def test_closed_stdin_is_bad_input_not_an_internal_error() -> None:
    proc = _cli("solve", "-", stdin=None, preexec_fn=lambda: os.close(0))
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert "standard input" in proc.stderr and "internal solver error" not in proc.stderr


# 2. --batch: a deeply nested JSON line is bad input (as `solve -` says: "nested too deeply"), not a solver bug.


def test_batch_deeply_nested_line_is_reported_as_bad_input() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    code, _single_out, single_err = _run(["solve", "-"], deep)
    assert code == EXIT_BAD_INPUT and "nested too deeply" in single_err  # the single-document path
    _code, out, _err = _run(["solve", "--batch", "-"], deep + "\n")
    message = json.loads(out.splitlines()[0])["error"]["message"]
    assert "internal solver error" not in message, message
    assert "nested too deeply" in message, message


# 3. An integer literal longer than Python's int-string limit (4,300 digits) is bad input, exit 2 (the YAML
#    fallback of parse_text let a bare ValueError escape as an internal error).


@pytest.mark.parametrize("command", [["solve", "-"], ["search", "-", "--compact"]])
@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_integer_beyond_the_int_string_limit_is_bad_input(command: list[str], syntax: str) -> None:
    digits = "1" * 5000
    if syntax == "json":
        text = json.dumps(GOOD).replace('"gpus": 16', f'"gpus": {digits}')
    else:
        text = YAML_BASE.replace("gpus: 16", f"gpus: {digits}")
    code, out, err = _run(command, text)
    assert code == EXIT_BAD_INPUT, err[:300]
    assert "internal solver error" not in err and out == ""


# 4. An endless input (/dev/zero, a pipe that never ends) is refused as too large after MAX_DOCUMENT_CHARS: it
#    used to be read whole, until MemoryError.


def test_endless_input_is_refused_as_too_large_without_reading_it_all() -> None:
    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    proc = _cli(
        "solve",
        "/dev/zero",
        preexec_fn=limit_memory,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-300:]
    assert "too large" in proc.stderr


# 5. sweep: an axis value that is not a JSON value (a YAML date, an infinite float inside a list) is refused
#    naming it, exit 2 (echoed into the output it broke the JSON: exit 3 with no output).


@pytest.mark.parametrize(
    "text",
    [
        YAML_BASE + "sweep: {axes: [{field: cluster.gpus, values: [16, 2024-01-01]}]}\n",
        json.dumps(GOOD | {"sweep": {"axes": [{"field": "cluster.gpus", "values": [16, [0]]}]}}).replace(
            "[16, [0]]", "[16, [1e400]]"
        ),
    ],
    ids=["yaml-date", "nested-infinity"],
)
def test_sweep_axis_value_that_is_not_json_is_bad_input(text: str) -> None:
    code, _out, err = _run(["sweep", "-", "--compact"], text)
    assert code == EXIT_BAD_INPUT, err
    assert "sweep.axes[0].values[1]" in err, err


# 6. search: a given layout that breaks a rule is echoed as baseline.layout, a value JSON cannot hold (NaN,
#    which json.loads accepts, or a YAML date) as its repr: the output stays JSON (it was exit 3).


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(GOOD).replace('"pp": 1', '"pp": NaN'),
        YAML_BASE.replace("pp: 1", "pp: 2024-01-01"),
    ],
    ids=["json-nan", "yaml-date"],
)
def test_search_with_an_unencodable_layout_value_is_bad_input_like_solve(text: str) -> None:
    solve_code, _out, solve_err = _run(["solve", "-"], text)
    assert solve_code == EXIT_BAD_INPUT and "training.layout.pp" in solve_err
    code, out, err = _run(["search", "-", "--compact"], text)
    assert "internal solver error" not in err, err
    if code == EXIT_OK:
        json.loads(out)  # a search that goes on despite the bad baseline still prints valid JSON
    else:
        assert code == EXIT_BAD_INPUT and "training.layout.pp" in err, err


# 7. sweep refuses a Pareto front that lists a metric twice (--pareto step_s,step_s or sweep.pareto), as search
#    does ("lists a metric twice"); it used to print a one-metric "front" with exit 0.


def test_sweep_refuses_a_pareto_metric_listed_twice_as_search_does() -> None:
    search_code, _out, search_err = _run(
        ["search", "-", "--compact", "--pareto", "step_s,step_s"], json.dumps(GOOD)
    )
    assert search_code == EXIT_BAD_INPUT and "twice" in search_err
    doc = GOOD | {"sweep": {"axes": [{"field": "cluster.gpus", "values": [16, 32]}]}}
    code, _out, err = _run(["sweep", "-", "--compact", "--pareto", "step_s,step_s"], json.dumps(doc))
    assert code == EXIT_BAD_INPUT, "sweep printed a front over step_s twice"
    assert "pareto" in err


# 8. main(argv, stderr=...) reports a usage error on the stream it was given and returns 2 (it wrote to the
#    process's stderr and, for solve/catalog/..., raised SystemExit).


@pytest.mark.parametrize("argv", [["solve"], ["search"], ["solve", "a.yaml", "b.yaml"]])
def test_usage_error_returns_2_on_the_given_stderr(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = io.StringIO(), io.StringIO()
    try:
        code: Any = main(argv, stdin=io.StringIO(""), stdout=out, stderr=err)
    except SystemExit as exc:
        code = f"raised SystemExit({exc.code})"
    leaked = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "usage:" in err.getvalue() and leaked == "", leaked


# 9. --batch reads a JSON Lines file saved with a UTF-8 byte order mark (Notepad, PowerShell) from its first
#    line, as `solve FILE` does (the first line used to be lost).


def test_batch_reads_a_first_line_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "plans.jsonl"
    path.write_text("\ufeff" + json.dumps(GOOD) + "\n", encoding="utf-8")
    single = _run(["solve", str(path), "--compact"])
    assert single[0] == EXIT_OK
    code, out, _err = _run(["solve", "--batch", str(path)])
    row = json.loads(out.splitlines()[0])
    assert code == EXIT_OK and "error" not in row, row
    assert row["input_hash"] == json.loads(single[1])["input_hash"]
