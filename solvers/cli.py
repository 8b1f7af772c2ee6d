"""Command line: ``python -m solvers solve FILE|- [--batch]``, ``catalog [--json]``, ``validate [--json]``,
``schema`` (the JSON Schema of the scenario document).

Exit status: 0 success; 1 when a ``--batch`` run had at least one failing line (each failure is still one
output line, ``{"error": {"path", "message"}}``); 2 for bad input (unreadable file, not JSON or YAML, a
scenario that breaks a rule: the message names the field path); 3 for an internal solver error. No traceback
is ever printed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO, cast

import yaml

from solvers.errors import ScenarioError, SolverInternalError

EXIT_OK = 0
EXIT_BATCH_FAILURES = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


class InputError(Exception):
    """The input could not be read or parsed (before any scenario rule applies)."""


class _Loader(yaml.SafeLoader):
    """YAML 1.1 safe loader that also reads ``15.6e12`` and ``1e9`` as floats (YAML 1.2 / JSON style).

    PyYAML's YAML 1.1 resolver needs a dot and a signed exponent (``1.0e+12``) and would otherwise hand the
    scenario a string, which is a frequent surprise with token counts.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with JSON-style exponents read as floats."""
    return yaml.load(text, Loader=_Loader)


# A scenario document is a few kilobytes; anything this large is a mistake (or an attack on the parser).
MAX_DOCUMENT_CHARS = 1_000_000


def parse_text(text: str) -> Any:
    """A scenario from JSON or YAML text (JSON is tried first; YAML 1.1 via ``yaml.safe_load``)."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InputError(f"document too large: {len(text):,} characters (limit {MAX_DOCUMENT_CHARS:,})")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"not valid JSON or YAML{where}: {problem}") from None


def _read(source: str, stdin: TextIO) -> str:
    if source == "-":
        return stdin.read()
    try:
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"cannot read {source}: not UTF-8 text") from None


def _dump(value: Any, *, pretty: bool) -> str:
    return json.dumps(value, allow_nan=False, indent=2 if pretty else None, ensure_ascii=False)


def _print_scenario_error(exc: ScenarioError, stderr: TextIO) -> None:
    for error in exc.errors:
        print(f"error: {error}", file=stderr)


def run_document_command(
    source: str,
    compute: Callable[[Any], dict[str, Any]],
    *,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    compact: bool,
    exit_status: Callable[[dict[str, Any]], int] = lambda _output: EXIT_OK,
) -> int:
    """Read one JSON or YAML document from ``source`` (a path, or - for stdin), print ``compute(document)``
    as JSON and return ``exit_status(output)``. Every failure is one line on stderr and an exit status
    (2 bad input naming the field path, 3 internal error), never a traceback. Used by search and sweep."""
    try:
        output = compute(parse_text(_read(source, stdin)))
    except InputError as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    except ScenarioError as exc:
        _print_scenario_error(exc, stderr)
        return EXIT_BAD_INPUT
    except SolverInternalError as exc:
        print(f"internal solver error: {exc}", file=stderr)
        return EXIT_INTERNAL
    except Exception as exc:  # a bug must still never print a traceback to the user
        print(f"internal solver error: {type(exc).__name__}: {exc}", file=stderr)
        return EXIT_INTERNAL
    print(_dump(output, pretty=not compact), file=stdout)
    return exit_status(output)


def _cmd_solve(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from solvers.entry import solve

    try:
        text = _read(args.file, stdin)
    except InputError as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    if args.batch:
        return _solve_batch(text, stdout)
    try:
        document = parse_text(text)
        report = solve(document)
    except InputError as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    except ScenarioError as exc:
        _print_scenario_error(exc, stderr)
        return EXIT_BAD_INPUT
    print(_dump(report, pretty=not args.compact), file=stdout)
    return EXIT_OK


def _solve_batch(text: str, stdout: TextIO) -> int:
    """One output line per input line, in order; JSON Lines in, JSON Lines out."""
    from solvers.entry import solve

    failures = 0
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        result: dict[str, Any]
        try:
            if not line.strip():
                raise InputError("empty line")
            if len(line) > MAX_DOCUMENT_CHARS:
                raise InputError(
                    f"line {number}: document too large (limit {MAX_DOCUMENT_CHARS:,} characters)"
                )
            try:
                document = json.loads(line)
            except ValueError as exc:
                raise InputError(f"line {number}: not valid JSON: {exc}") from None
            result = cast(dict[str, Any], solve(document))
        except InputError as exc:
            result = {"error": {"path": "", "message": str(exc)}}
        except ScenarioError as exc:
            result = {"error": exc.as_dict()}
        except SolverInternalError as exc:
            result = {"error": {"path": "", "message": f"internal solver error: {exc}"}}
        except Exception as exc:  # a bug on one line must not cost the other lines their results
            result = {"error": {"path": "", "message": f"internal solver error: {type(exc).__name__}: {exc}"}}
        if "error" in result:
            failures += 1
        print(_dump(result, pretty=False), file=stdout)
    return EXIT_OK if failures == 0 else EXIT_BATCH_FAILURES


def _cmd_catalog(args: argparse.Namespace, stdout: TextIO) -> int:
    from solvers.catalog import catalog_document

    document = catalog_document()
    if args.json:
        print(_dump(document, pretty=True), file=stdout)
        return EXIT_OK
    for kind, entries in document.items():
        print(f"{kind}:", file=stdout)
        for key, entry in entries.items():
            print(f"  {key:<24} {entry.get('name', '')}", file=stdout)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, stdout: TextIO) -> int:
    from solvers.validation import format_table, validation_document

    document = validation_document()
    if args.json:
        print(_dump(document, pretty=True), file=stdout)
    else:
        print(format_table(document), file=stdout)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m solvers",
        description="Step-time, reliability, energy, carbon and TCO of a training plan.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="solve a scenario (JSON or YAML) and print its report as JSON")
    solve.add_argument("file", help="scenario file, or - for standard input")
    solve.add_argument(
        "--batch", action="store_true", help="JSON Lines in, one report (or error) per line out"
    )
    solve.add_argument("--compact", action="store_true", help="print the report on one line")
    cat = sub.add_parser("catalog", help="list the catalog presets")
    cat.add_argument("--json", action="store_true", help="print the whole catalog, with sources, as JSON")
    val = sub.add_parser("validate", help="predicted vs published figures for published training runs")
    val.add_argument("--json", action="store_true", help="print the rows as JSON")
    sub.add_parser("schema", help="print the JSON Schema of the scenario document")
    # search and sweep parse their own arguments (solvers.search.search_main, solvers.sweep.sweep_main);
    # they are listed here so --help shows them.
    sub.add_parser("search", help="best layouts and the Pareto front (`search --help`)", add_help=False)
    sub.add_parser("sweep", help="one best layout per point of a sweep (`sweep --help`)", add_help=False)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    if not (argv and argv[0] in ("search", "sweep")):
        args = build_parser().parse_args(argv)
    try:
        if argv and argv[0] == "search":
            from solvers.search import search_main

            return search_main(argv[1:], stdin=stdin, stdout=stdout, stderr=stderr)
        if argv and argv[0] == "sweep":
            from solvers.sweep import sweep_main

            return sweep_main(argv[1:], stdin=stdin, stdout=stdout, stderr=stderr)
        if args.command == "solve":
            return _cmd_solve(args, stdin, stdout, stderr)
        if args.command == "catalog":
            return _cmd_catalog(args, stdout)
        if args.command == "schema":
            from solvers.schema import scenario_json_schema

            print(_dump(scenario_json_schema(), pretty=True), file=stdout)
            return EXIT_OK
        return _cmd_validate(args, stdout)
    except SolverInternalError as exc:
        print(f"internal solver error: {exc}", file=stderr)
        return EXIT_INTERNAL
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug must still never print a traceback to the user
        print(f"internal solver error: {type(exc).__name__}: {exc}", file=stderr)
        return EXIT_INTERNAL
