"""The shape of the ``solvers`` package: files small enough to read in one sitting, no state kept between
calls, no hidden import circles, no framework.

Reuse is the caller's choice (hold the resolved scenario), so the package keeps no module-level cache and
writes no memo into objects (``__dict__``, ``functools.cached_property``); a function-local import of a
solver module says why it is local, since one is the usual way to hide an import circle (the package's
layers are import-linter contracts in ``pyproject.toml``). Every check reads the source with ``ast``: nothing
here imports the modules it judges, except the last test, which imports them all in a fresh interpreter to
see what they pull in.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "solvers"
MAX_LINES = 700

FORBIDDEN_PACKAGES: tuple[str, ...] = (
    "django",
    "rest_framework",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "planner",
    "scenarios",
    "integrations",
    "api",
    "web",
)

_CACHE_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})
_MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "add",
        "discard",
        "remove",
    }
)
_CONTAINER_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"})
_STORE_CALLS = frozenset({"WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "local", "RLock", "Lock"})


def solver_files() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _call_name(node: ast.expr) -> str | None:
    """``f`` of ``f(...)``, ``mod.f(...)`` or a decorator ``@f`` / ``@mod.f`` / ``@f(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    return isinstance(value, ast.Call) and _call_name(value) in _CONTAINER_CALLS


def _module_assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr | None]]:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.value


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def kept_state(tree: ast.Module) -> set[str]:
    """The kinds of state a module keeps between calls (empty for a module that keeps none).

    * ``functools.cache`` / ``lru_cache`` / ``cached_property`` decorators (cached_property writes a memo
      into the instance's ``__dict__``);
    * ``__dict__``: any read or write of an object's ``__dict__`` (the memo-in-a-frozen-object pattern);
    * a module-level dict, list or set that the module mutates later (item assignment or deletion, an
      augmented assignment, a mutating method) or rebinds through ``global``;
    * a module-level weak or thread-local store, or a lock (which only a shared store needs).
    """
    found: set[str] = set()
    containers = {name for name, value in _module_assignments(tree) if _is_container(value)}
    module_names = {name for name, _ in _module_assignments(tree)}
    for _assigned, value in _module_assignments(tree):
        if isinstance(value, ast.Call) and _call_name(value) in _STORE_CALLS:
            found.add("module-level weak or thread-local store")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                if _call_name(decorator) in _CACHE_DECORATORS:
                    found.add("functools.cache")
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            found.add("__dict__")
        if isinstance(node, ast.Global) and set(node.names) & module_names:
            found.add("mutated module-level container")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            if isinstance(target, ast.Subscript | ast.Attribute) and _root_name(target) in containers:
                found.add("mutated module-level container")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING_METHODS
            and _root_name(node.func.value) in containers
        ):
            found.add("mutated module-level container")
    return found


def local_solver_imports(tree: ast.Module, lines: list[str]) -> list[int]:
    """Line numbers of function-local imports of a solver module with no comment on that line or the one
    above it."""
    out: list[int] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if not any(name == "solvers" or name.startswith("solvers.") for name in names):
                continue
            here, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
            if "#" not in here and not above.strip().startswith("#"):
                out.append(node.lineno)
    return out


def test_no_file_is_over_the_line_limit() -> None:
    over = {
        _name(path): n
        for path in solver_files()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not over, f"files over {MAX_LINES} lines: {over}"


def test_no_module_keeps_state_between_calls() -> None:
    unexpected = {}
    for path in solver_files():
        extra = kept_state(_tree(path))
        if extra:
            unexpected[_name(path)] = sorted(extra)
    assert not unexpected, f"state kept between calls: {unexpected}"


def test_function_local_solver_imports_say_why() -> None:
    unexplained = {}
    for path in solver_files():
        text = path.read_text(encoding="utf-8")
        lines = local_solver_imports(ast.parse(text), text.splitlines())
        if lines:
            unexplained[_name(path)] = lines
    assert not unexplained, f"function-local imports without a comment saying why: {unexplained}"


@pytest.mark.parametrize(
    ("source", "kinds"),
    [
        ("import functools\n@functools.cache\ndef f(x):\n    return x\n", {"functools.cache"}),
        (
            "from functools import lru_cache\n@lru_cache(maxsize=8)\ndef f(x):\n    return x\n",
            {"functools.cache"},
        ),
        ("_SEEN = {}\ndef f(k, v):\n    _SEEN[k] = v\n", {"mutated module-level container"}),
        ("_SEEN: dict = {}\ndef f(k, v):\n    _SEEN.setdefault(k, v)\n", {"mutated module-level container"}),
        ("_LAST = None\ndef f(v):\n    global _LAST\n    _LAST = v\n", {"mutated module-level container"}),
        ("def f(o):\n    o.__dict__['_memo'] = 1\n", {"__dict__"}),
        ("def f(o):\n    return o.__dict__.get('_memo')\n", {"__dict__"}),
        ("import threading\n_LOCAL = threading.local()\n", {"module-level weak or thread-local store"}),
        ("TABLE = {'a': 1}\ndef f(k):\n    return TABLE[k]\n", set()),
        ("def f():\n    seen = {}\n    seen['a'] = 1\n    return seen\n", set()),
    ],
)
def test_the_state_check_sees_each_pattern(source: str, kinds: set[str]) -> None:
    assert kept_state(ast.parse(source)) == kinds


def test_the_local_import_check_wants_a_reason() -> None:
    bare = "def f():\n    from solvers import engine\n    return engine\n"
    said = "def f():\n    # solvers.engine imports this module back\n    from solvers import engine\n    return engine\n"
    other = "def f():\n    import json\n    return json\n"
    assert local_solver_imports(ast.parse(bare), bare.splitlines()) == [2]
    assert local_solver_imports(ast.parse(said), said.splitlines()) == []
    assert local_solver_imports(ast.parse(other), other.splitlines()) == []


def test_solvers_imports_no_framework() -> None:
    """Every module of the package, imported in a fresh interpreter, pulls in no framework or project app."""
    modules = sorted(
        ".".join(("solvers", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for path in solver_files()
        if path.name != "__main__.py"
    )
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "solvers" in loaded and "numpy" in loaded
    assert not loaded & set(FORBIDDEN_PACKAGES), sorted(loaded & set(FORBIDDEN_PACKAGES))


def test_the_solver_tests_import_no_framework() -> None:
    """The tests of this directory import no framework or project app either (any import, at any depth),
    so that ``python -m pytest tests/solvers -p no:django`` needs neither (``conftest.py``)."""
    offenders: dict[str, list[str]] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        names: list[str] = []
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
        bad = sorted({name for name in names if name.split(".")[0] in FORBIDDEN_PACKAGES})
        if bad:
            offenders[path.name] = bad
    assert not offenders, offenders
