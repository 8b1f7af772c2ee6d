"""The command line and the scenario schema at the edges of their input: bad input is exit 2 naming the field
(never an internal error), ``--batch`` gives one output line per input line, and the solver refuses what the
scenario JSON Schema refuses."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import jsonschema
import pytest

from solvers.cli import EXIT_BAD_INPUT, EXIT_BATCH_FAILURES, main
from solvers.entry import solve
from solvers.errors import ScenarioError
from solvers.inputs import scenario_json_schema

GOOD: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "cluster": {"node": "dgx-h100", "gpus": 16},
    "training": {"global_batch_seqs": 64, "layout": {"tp": 2, "pp": 1}},
}


def _run(argv: list[str], stdin: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if isinstance(stdin, str):
        stdin = io.StringIO(stdin)
    code = main(argv, stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


class _StrictStdout(io.StringIO):
    """A UTF-8 standard output with the 'strict' error handler (what sys.stdout is in a UTF-8 locale):
    a string it cannot encode raises, as print() to the real stream would."""

    def write(self, s: str) -> int:
        s.encode("utf-8")
        return super().write(s)


# --- A lone surrogate escape in a text field: refused naming the field, the other batch lines kept -------


def _doc_with_lone_surrogate() -> str:
    # "\ud800" is a valid JSON string escape; json.loads gives a lone surrogate that UTF-8 cannot encode.
    return json.dumps(GOOD | {"name": "plan"}).replace('"plan"', '"a\\ud800b"')


def test_lone_surrogate_in_name_is_bad_input_not_internal_error() -> None:
    out, err = _StrictStdout(), io.StringIO()
    code = main(["solve", "-"], stdin=io.StringIO(_doc_with_lone_surrogate()), stdout=out, stderr=err)
    assert code == EXIT_BAD_INPUT, err.getvalue()
    assert "internal solver error" not in err.getvalue()


def test_batch_line_with_lone_surrogate_does_not_cost_the_other_lines() -> None:
    text = _doc_with_lone_surrogate() + "\n" + json.dumps(GOOD) + "\n"
    out, err = _StrictStdout(), io.StringIO()
    code = main(["solve", "--batch", "-"], stdin=io.StringIO(text), stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    assert code == EXIT_BATCH_FAILURES, err.getvalue()
    assert len(lines) == 2
    assert "error" in json.loads(lines[0]) and "error" not in json.loads(lines[1])


# --- --batch splits at "\n" only, and its output escapes U+0085 and U+2028 inside strings -------------


@pytest.mark.parametrize("separator", ["\u2028", "\u0085"])
def test_batch_is_one_output_line_per_input_line(separator: str) -> None:
    line = json.dumps(GOOD | {"name": f"a{separator}b"}, ensure_ascii=False)  # valid JSON, one line
    assert json.loads(line)["name"] == f"a{separator}b"
    code, out, _err = _run(["solve", "--batch", "-"], line + "\n")
    rows = out.splitlines()
    assert len(out.split("\n")) - 1 == 1, out[:300]
    assert code == 0, rows
    assert "error" not in json.loads(rows[0])


# --- Standard input that is not UTF-8: exit 2 ----------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["solve", "-"], ["solve", "--batch", "-"], ["search", "-"], ["sweep", "-"]]
)
def test_stdin_not_utf8_is_bad_input(command: list[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff{}\n"), encoding="utf-8", errors="strict")
    code, _out, err = _run(command, stdin)
    assert code == EXIT_BAD_INPUT, err
    assert "internal solver error" not in err


# --- A section given as [], "", 0 or false is refused, as the schema refuses it ------------------------

VALIDATOR = jsonschema.Draft202012Validator(scenario_json_schema())


@pytest.mark.parametrize("value", [[], "", 0, False])
@pytest.mark.parametrize(
    "where",
    [("training", "efficiency"), ("training", "checkpoint"), ("training", "efficiency", "overlap")],
)
def test_non_object_section_is_refused_like_the_schema_does(where: tuple[str, ...], value: Any) -> None:
    doc = copy.deepcopy(GOOD)
    node = doc
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = value
    assert not VALIDATOR.is_valid(doc)
    with pytest.raises(ScenarioError) as info:
        solve(doc)
    assert any(e.path == ".".join(where) for e in info.value.errors)


@pytest.mark.parametrize("training", ["x", [1, 2], 5, True])
def test_search_refuses_a_training_section_that_solve_refuses(training: Any) -> None:
    doc = copy.deepcopy(GOOD) | {"training": training}
    assert _run(["solve", "-"], json.dumps(doc))[0] == EXIT_BAD_INPUT
    code, _out, err = _run(["search", "-", "--compact"], json.dumps(doc))
    assert code == EXIT_BAD_INPUT, "search silently replaced training with {}"
    assert "training" in err


@pytest.mark.parametrize("search", [[], "", 0, False])
def test_search_section_that_is_not_a_mapping_is_refused(search: Any) -> None:
    code, _out, err = _run(["search", "-", "--compact"], json.dumps(GOOD | {"search": search}))
    assert code == EXIT_BAD_INPUT
    assert "search" in err


# --- The solver and the scenario JSON Schema agree ------------------------------------------------------


@pytest.mark.parametrize(("path", "value"), [(("schema_version",), True), (("model", "name"), None)])
def test_solver_and_schema_agree(path: tuple[str, ...], value: Any) -> None:
    doc = copy.deepcopy(GOOD)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    schema_ok = VALIDATOR.is_valid(doc)
    try:
        solve(doc)
        solver_ok = True
    except ScenarioError:
        solver_ok = False
    assert schema_ok == solver_ok, f"schema {schema_ok}, solver {solver_ok}"
