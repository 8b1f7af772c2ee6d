"""The README's configuration tables list every environment variable the project reads, and only those.

Reads are found in the source: the env helpers (``env_str("NAME"...)`` and the like, also the scenarios'
``_int``/``_setting_int`` readers), ``os.environ.get``/``os.getenv``/``os.environ["NAME"]`` in Python, and
``${NAME:-...}``/``${NAME}`` in ``dev`` and the Procfile."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

PYTHON_READ = re.compile(
    r"""(?:\benv_(?:str|int|bool|list|float|rate|choice)|\b_int|\b_setting_int|os\.environ\.get|os\.getenv)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|os\.environ\[["']([A-Z][A-Z0-9_]+)["']\](?!\s*=[^=])"""
)
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]+)(?::-[^}]*)?\}")
# Read by the operating system, Python or Django themselves, not by the project's configuration.
NOT_CONFIGURATION = {"PATH", "HOME", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
SKIP_DIRS = {".venv", "var", "node_modules", ".git", "build", "dist"}


def variables_read() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if SKIP_DIRS & set(path.relative_to(ROOT).parts) or path == Path(__file__).resolve():
            continue
        for match in PYTHON_READ.finditer(path.read_text(errors="replace")):
            found.setdefault(match[1] or match[2], set()).add(str(path.relative_to(ROOT)))
    for name in ("dev", "Procfile"):
        for match in SHELL_READ.finditer((ROOT / name).read_text()):
            found.setdefault(match[1], set()).add(name)
    return {name: files for name, files in found.items() if name not in NOT_CONFIGURATION}


def documented() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def test_every_variable_read_is_documented() -> None:
    missing = {name: sorted(files) for name, files in variables_read().items() if name not in documented()}
    assert not missing, f"add these to the README's configuration tables: {missing}"


def test_every_documented_variable_is_read() -> None:
    stale = documented() - set(variables_read())
    assert not stale, f"the README documents variables nothing reads: {sorted(stale)}"


def test_the_scan_sees_the_known_readers() -> None:
    """The scan itself must not go blind (a renamed helper would make both tests above pass vacuously)."""
    read = variables_read()
    assert {"DATABASE_URL", "SECRET_KEY", "PLANNER_VAR_DIR", "PORT", "RUN_LEASE_S"} <= set(read)
    assert "planner/settings.py" in read["SECRET_KEY"]
    assert Path(ROOT / "planner" / "env.py").exists()
