"""pytest plugin (``-p planner.pytest_embedded``): the test session starts the embedded servers.

Settings never start a server, so a test run without ``DATABASE_URL``/``REDIS_URL`` gets the embedded
PostgreSQL and Redis from here, before pytest-django imports the settings (this hook runs first). Tests
connect as the owner role, because Django creates and migrates a ``test_`` database; migrations grant the
application role there (``DATABASE_APP_ROLE``), so tests of its rights run against the real grants.
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    from planner import embedded

    servers = embedded.ensure_running()
    env = embedded.environment(servers, owner=True)
    if os.environ.get("DATABASE_URL"):
        env.pop("DATABASE_URL")
        env.pop("DATABASE_APP_ROLE")
    for name, value in env.items():
        os.environ.setdefault(name, value)
