"""Command line: ``python -m solvers solve FILE|- [--batch]``, ``catalog [--json]``, ``validate [--json]
[--corpus DIR]``,
``fit [--dry-run]``, ``schema [--report]`` (the JSON Schema of the scenario document, or of the report),
``envelope [--write|--check]`` (the validated envelope), ``search FILE|-`` and ``sweep FILE|-``. Every
argparse ``main`` of the solver lives here: this module is the top of the package (``pyproject.toml``,
import-linter), so it imports what it runs and nothing imports it back.

Exit status: 0 success; 1 when a ``--batch`` run had at least one failing line (each failure is still one
output line, ``{"error": {"path", "message"}}``); 2 for bad input (unreadable file, not JSON or YAML, a
scenario that breaks a rule: the message names the field path); 3 for an internal solver error. No traceback
is ever printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from solvers.catalog import catalog_document
from solvers.catalog.fitted import FITTED_FILE
from solvers.corpus import CorpusError, load_corpus
from solvers.document_text import MAX_DOCUMENT_CHARS, InputError, load_yaml, parse_text
from solvers.entry import solve
from solvers.envelope import envelope_is_current, write_envelope
from solvers.errors import ScenarioError, SolverInternalError
from solvers.inputs import scenario_json_schema
from solvers.report_schema import report_json_schema
from solvers.search import DEFAULT_PARETO, DEFAULT_TOP, OBJECTIVES, PARETO_METRICS, load_envelope
from solvers.search.document import search_document
from solvers.sweep import sweep_document
from solvers.validation import fit_documents, format_validation, validation_document

EXIT_OK = 0
EXIT_BATCH_FAILURES = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

# Read by callers outside the package (the web forms, create_access, the tests) from here.
__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BATCH_FAILURES",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "MAX_DOCUMENT_CHARS",
    "InputError",
    "build_parser",
    "build_search_parser",
    "load_yaml",
    "main",
    "parse_text",
    "run_document_command",
    "search_main",
    "sweep_main",
]


def _parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str], *, stdout: TextIO, stderr: TextIO
) -> argparse.Namespace | int:
    """``parser.parse_args(argv)``, or the exit status of a usage error (2) or of ``--help`` (0), with
    argparse's messages written to the streams the caller gave (argparse writes to ``sys``'s and exits)."""
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            return parser.parse_args(list(argv))
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT


def _read(source: str, stdin: TextIO | None) -> str:
    """The text of ``source`` (a path, or - for standard input), without a byte order mark; no more than
    ``MAX_DOCUMENT_CHARS`` is read, so that an endless input (``/dev/zero``, a pipe that never ends) is
    refused as too large instead of filling the memory."""
    if source == "-":
        if stdin is None:  # started with standard input closed
            raise InputError("cannot read standard input: it is closed")
        try:
            return _bounded(stdin.read(MAX_DOCUMENT_CHARS + 1), "standard input")
        except UnicodeDecodeError:
            raise InputError("cannot read standard input: not UTF-8 text") from None
    try:
        with open(source, encoding="utf-8") as handle:
            return _bounded(handle.read(MAX_DOCUMENT_CHARS + 1), source)
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"cannot read {source}: not UTF-8 text") from None


def _bounded(text: str, name: str) -> str:
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InputError(f"{name}: document too large (limit {MAX_DOCUMENT_CHARS:,} characters)")
    return text.removeprefix("\ufeff")  # a byte order mark (Notepad, PowerShell) is not content


def _open_lines(source: str, stdin: TextIO | None) -> Iterator[str]:
    """The lines of ``source`` for ``--batch``, one at a time, each read no further than one character past
    ``MAX_DOCUMENT_CHARS`` (the caller refuses such a line and stops: the rest of an endless line cannot be
    skipped without reading it). A byte order mark before the first line is dropped."""
    if source == "-":
        if stdin is None:
            raise InputError("cannot read standard input: it is closed")
        yield from _lines_of(stdin)
        return
    try:
        handle = open(source, encoding="utf-8")  # noqa: SIM115 - closed below, after the last line
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror or exc}") from None
    with handle:
        yield from _lines_of(handle)


def _lines_of(handle: TextIO) -> Iterator[str]:
    first = True
    while True:
        line = handle.readline(MAX_DOCUMENT_CHARS + 2)
        if not line:
            return
        if first:
            line, first = line.removeprefix("\ufeff"), False
        yield line


def _dump(value: Any, *, pretty: bool) -> str:
    text = json.dumps(value, allow_nan=False, indent=2 if pretty else None, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in an echoed key or message: escaped, still the same JSON
        text = json.dumps(value, allow_nan=False, indent=2 if pretty else None, ensure_ascii=True)
    # The line breaks JSON leaves unescaped (U+0085, U+2028, U+2029: only ever inside strings) are escaped,
    # so that a reader splitting lines the Unicode way still sees one line per report.
    return text.translate(_LINE_BREAKS)


_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _print_scenario_error(exc: ScenarioError, stderr: TextIO) -> None:
    for error in exc.errors:
        print(f"error: {error}", file=stderr)


def run_document_command(
    source: str,
    compute: Callable[[Any], dict[str, Any]],
    *,
    stdin: TextIO | None,
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


def _cmd_solve(args: argparse.Namespace, stdin: TextIO | None, stdout: TextIO, stderr: TextIO) -> int:
    if args.batch:
        return _solve_batch(_open_lines(args.file, stdin), stdout, stderr)
    try:
        text = _read(args.file, stdin)
    except InputError as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
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


def _solve_batch(lines: Iterator[str], stdout: TextIO, stderr: TextIO) -> int:
    """One output line per input line, in order; JSON Lines in, JSON Lines out. Lines are read one at a time,
    each no longer than ``MAX_DOCUMENT_CHARS``: a longer line gets its error row and ends the batch (the
    rest of it cannot be skipped without reading it, and an endless one never ends)."""
    failures = 0
    number = 0
    try:
        for raw in lines:
            number += 1
            # JSON Lines end at "\n" only (str.splitlines would also split at U+2028 or U+0085 in a string)
            line = raw.removesuffix("\n").removesuffix("\r")
            too_long = len(line) > MAX_DOCUMENT_CHARS
            result = _batch_result(number, line, too_long=too_long)
            if "error" in result:
                failures += 1
            print(_dump(result, pretty=False), file=stdout)
            if too_long:
                print(f"error: line {number} is too large; the lines after it are not read", file=stderr)
                break
    except InputError as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    except UnicodeDecodeError:
        print(f"error: line {number + 1}: not UTF-8 text; the lines after it are not read", file=stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK if failures == 0 else EXIT_BATCH_FAILURES


def _batch_result(number: int, line: str, *, too_long: bool) -> dict[str, Any]:
    """The output row of one ``--batch`` line: its report, or ``{"error": ...}``."""
    try:
        if too_long:
            raise InputError(f"line {number}: document too large (limit {MAX_DOCUMENT_CHARS:,} characters)")
        if not line.strip():
            raise InputError("empty line")
        try:
            document = json.loads(line)
        except RecursionError:
            raise InputError(f"line {number}: the document is nested too deeply") from None
        except ValueError as exc:
            raise InputError(f"line {number}: not valid JSON: {exc}") from None
        return cast(dict[str, Any], solve(document))
    except InputError as exc:
        return {"error": {"path": "", "message": str(exc)}}
    except ScenarioError as exc:
        return {"error": exc.as_dict()}
    except SolverInternalError as exc:
        return {"error": {"path": "", "message": f"internal solver error: {exc}"}}
    except Exception as exc:  # a bug on one line must not cost the other lines their results
        return {"error": {"path": "", "message": f"internal solver error: {type(exc).__name__}: {exc}"}}


def _cmd_catalog(args: argparse.Namespace, stdout: TextIO) -> int:
    document = catalog_document()
    if args.json:
        print(_dump(document, pretty=True), file=stdout)
        return EXIT_OK
    for kind, entries in document.items():
        print(f"{kind}:", file=stdout)
        for key, entry in entries.items():
            print(f"  {key:<24} {entry.get('name', '')}", file=stdout)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    corpus = None
    if args.corpus is not None:
        directory = Path(args.corpus)
        if not directory.is_dir() or not any(directory.glob("*.yaml")):
            print(f"error: --corpus: {directory} is not a directory of corpus *.yaml files", file=stderr)
            return EXIT_BAD_INPUT
        try:
            corpus = load_corpus(directory)
        except CorpusError as exc:
            print(f"error: --corpus: {exc}", file=stderr)
            return EXIT_BAD_INPUT
    document = validation_document(corpus)
    if args.json:
        print(_dump(document, pretty=True), file=stdout)
    else:
        print(format_validation(document), file=stdout)
    return EXIT_OK


UNCERTAINTY_FILE = FITTED_FILE.parent / "step_uncertainty.json"


def _cmd_fit(args: argparse.Namespace, stdout: TextIO) -> int:
    """Fit the calibration to the corpus and write ``fitted_calibration.json`` and ``step_uncertainty.json``."""
    calibration, uncertainty = fit_documents()
    if args.dry_run:
        print(_dump({"calibration": calibration, "uncertainty": uncertainty}, pretty=True), file=stdout)
        return EXIT_OK
    for path, content in ((FITTED_FILE, calibration), (UNCERTAINTY_FILE, uncertainty)):
        path.write_text(_dump(content, pretty=True) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=stdout)
    print(_dump(calibration["constants"] | calibration["compute_efficiency"], pretty=False), file=stdout)
    return EXIT_OK


def _cmd_envelope(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.write:
        print(f"wrote {write_envelope()}", file=stdout)
        return EXIT_OK
    if args.check:
        if envelope_is_current():
            print("solvers/catalog/validated_envelope.json is current", file=stdout)
            return EXIT_OK
        print(
            "error: solvers/catalog/validated_envelope.json is not current; run "
            "`python -m solvers envelope --write`",
            file=stderr,
        )
        return EXIT_BATCH_FAILURES
    print(_dump(load_envelope().as_dict(), pretty=True), file=stdout)
    return EXIT_OK


def build_search_parser(prog: str = "python -m solvers search") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Search every layout of a scenario; print the best, the alternatives and the Pareto front.",
    )
    parser.add_argument("file", help="scenario file (JSON or YAML), or - for standard input")
    parser.add_argument(
        "--objective", choices=OBJECTIVES, default=None, help="ranking objective (default step_s)"
    )
    parser.add_argument("--top", type=int, default=None, help=f"alternatives to list (default {DEFAULT_TOP})")
    parser.add_argument(
        "--pareto",
        default=None,
        help=f"2 or 3 comma-separated metrics for the Pareto front (default {','.join(DEFAULT_PARETO)}); "
        f"one of {', '.join(PARETO_METRICS)}",
    )
    parser.add_argument(
        "--within-validated",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep only layouts inside the envelope of validated runs (default: the document's "
        "search.within_validated, true when absent); --no-within-validated ranks every layout",
    )
    parser.add_argument("--compact", action="store_true", help="print the result on one line")
    return parser


def search_main(
    argv: Sequence[str],
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``python -m solvers search FILE|- [--objective O] [--top K] [--pareto a,b[,c]] [--[no-]within-validated]
    [--compact]``.

    Exit status as ``solve``: 0 success, 2 bad input (the message names the field path), 3 internal error.
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    args = _parse_args(build_search_parser(), argv, stdout=stdout, stderr=stderr)
    if isinstance(args, int):
        return args
    pareto = [p.strip() for p in args.pareto.split(",") if p.strip()] if args.pareto else None
    return run_document_command(
        args.file,
        lambda document: search_document(
            document,
            objective=args.objective,
            top=args.top,
            pareto=pareto,
            within_validated=args.within_validated,
        ),
        stdin=stdin if stdin is not None else sys.stdin,
        stdout=stdout,
        stderr=stderr,
        compact=args.compact,
    )


def sweep_main(
    argv: Sequence[str],
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``python -m solvers sweep FILE|- [--objective O] [--pareto a,b[,c]] [--compact]``: one row per point.

    Exit status as ``solve``: 0 when every point solved, 1 when some point failed (its row carries the
    error), 2 bad input (the message names the field path), 3 internal error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m solvers sweep",
        description="Best layout at every point of a sweep, and the Pareto front.",
    )
    parser.add_argument("file", help="sweep document (JSON or YAML), or - for standard input")
    parser.add_argument(
        "--objective", choices=OBJECTIVES, default=None, help="how each point ranks its layouts"
    )
    parser.add_argument("--pareto", default=None, help="2 or 3 comma-separated metrics for the front")
    parser.add_argument("--compact", action="store_true", help="print the result on one line")
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    args = _parse_args(parser, argv, stdout=stdout, stderr=stderr)
    if isinstance(args, int):
        return args
    pareto = [p.strip() for p in args.pareto.split(",") if p.strip()] if args.pareto else None
    return run_document_command(
        args.file,
        lambda document: sweep_document(document, objective=args.objective, pareto=pareto),
        stdin=stdin if stdin is not None else sys.stdin,
        stdout=stdout,
        stderr=stderr,
        compact=args.compact,
        exit_status=lambda output: EXIT_OK if output["failed"] == 0 else EXIT_BATCH_FAILURES,
    )


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
    val.add_argument(
        "--corpus",
        metavar="DIR",
        help="validate the published runs of another directory of corpus *.yaml files (default: corpus/)",
    )
    fit = sub.add_parser(
        "fit", help="fit the calibration to the validation corpus (writes solvers/catalog/*.json)"
    )
    fit.add_argument("--dry-run", action="store_true", help="print the fitted documents, write nothing")
    schema = sub.add_parser("schema", help="print the JSON Schema of the scenario document")
    schema.add_argument("--report", action="store_true", help="the report document's schema instead")
    env = sub.add_parser(
        "envelope", help="the validated envelope's data file, derived from the corpus and the published cases"
    )
    what = env.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help="rewrite solvers/catalog/validated_envelope.json")
    what.add_argument("--check", action="store_true", help="exit 1 when the data file is not current")
    # search and sweep parse their own arguments (search_main, sweep_main); they are listed here so --help
    # shows them.
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
    stdin = stdin if stdin is not None else sys.stdin  # None when the process started with it closed
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    if not (argv and argv[0] in ("search", "sweep")):
        parsed = _parse_args(build_parser(), argv, stdout=stdout, stderr=stderr)
        if isinstance(parsed, int):
            return parsed
        args = parsed
    try:
        if argv and argv[0] == "search":
            return search_main(argv[1:], stdin=stdin, stdout=stdout, stderr=stderr)
        if argv and argv[0] == "sweep":
            return sweep_main(argv[1:], stdin=stdin, stdout=stdout, stderr=stderr)
        if args.command == "solve":
            return _cmd_solve(args, stdin, stdout, stderr)
        if args.command == "catalog":
            return _cmd_catalog(args, stdout)
        if args.command == "envelope":
            return _cmd_envelope(args, stdout, stderr)
        if args.command == "schema":
            schema = report_json_schema() if args.report else scenario_json_schema()
            print(_dump(schema, pretty=True), file=stdout)
            return EXIT_OK
        if args.command == "fit":
            return _cmd_fit(args, stdout)
        return _cmd_validate(args, stdout, stderr)
    except SolverInternalError as exc:
        print(f"internal solver error: {exc}", file=stderr)
        return EXIT_INTERNAL
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug must still never print a traceback to the user
        print(f"internal solver error: {type(exc).__name__}: {exc}", file=stderr)
        return EXIT_INTERNAL
