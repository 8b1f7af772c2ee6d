"""pytest plugin (``-p planner.pytest_embedded``): the test session starts the embedded servers.

Settings never start a server, so a test run without ``DATABASE_URL``/``REDIS_URL`` gets the embedded
PostgreSQL and Redis from here. Their URLs (with the generated passwords) are exported before pytest-django
imports the settings (this hook runs first); the servers themselves start once the tests are collected, and
only if a collected test may need them: a run of the solver's own tests (``tests/solvers``, pure numpy)
starts nothing. Tests connect as the owner role, because Django creates and migrates a ``test_`` database;
migrations grant the application role there (``DATABASE_APP_ROLE``), so tests of its rights run against
the real grants.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SERVERS = pytest.StashKey[object]()
# Test folders that never touch PostgreSQL or Redis.
NO_SERVERS = ("tests/solvers",)
# The URLs this plugin exported, so that pytest-xdist's workers (which inherit them, and collect the tests the
# controller never collects) still start the servers; a nested session given other URLs does not match.
EXPORTED = "PLANNER_TEST_EMBEDDED_URLS"


def _urls() -> str:
    return f"{os.environ.get('DATABASE_URL', '')} {os.environ.get('REDIS_URL', '')}"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    from planner import embedded

    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        if os.environ.get("PLANNER_TEST_EMBEDDED_URLS") == _urls():
            early_config.stash[SERVERS] = embedded.default_servers()
        return
    servers = embedded.default_servers()
    env = embedded.environment(servers, owner=True)  # generates the passwords; starts nothing
    if os.environ.get("DATABASE_URL"):
        env.pop("DATABASE_URL")
        env.pop("DATABASE_APP_ROLE")
    for name, value in env.items():
        os.environ.setdefault(name, value)
    os.environ[EXPORTED] = _urls()
    early_config.stash[SERVERS] = servers


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    servers = config.stash.get(SERVERS, None)
    if servers is None:
        return
    root = Path(str(config.rootpath))
    quiet = [root / folder for folder in NO_SERVERS]
    if all(any(Path(str(item.path)).is_relative_to(folder) for folder in quiet) for item in items):
        return
    from planner import embedded

    embedded.ensure_running(servers)  # type: ignore[arg-type]
