"""The solver's tests need neither Django nor any server: ``solvers`` is pure Python + numpy.

Run them alone with pytest-django switched off::

    python -m pytest tests/solvers -p no:django

pytest-django reads ``DJANGO_SETTINGS_MODULE`` from ``pyproject.toml`` and imports ``planner.settings`` as
soon as it loads, and those settings start the embedded PostgreSQL and Redis when ``DATABASE_URL`` or
``REDIS_URL`` is unset, so without ``-p no:django`` a solver-only run would still start servers. With it:

* the root conftest's session fixtures that configure Celery and Django (``_celery_test_queue``,
  ``_fast_password_hasher``) are overridden below, for the tests of this directory, by fixtures that do
  nothing: pytest resolves a fixture name to its closest definition, autouse ones included;
* ``DJANGO_SETTINGS_MODULE`` is declared as an ini key here, so pytest does not warn that it is unknown;
* at the end of the session, a run without pytest-django fails if anything imported Django, Celery or a
  project app (the proof that the solver's tests ran without them).

The default run over the whole ``tests/`` tree keeps pytest-django: the solver's tests then run beside the
others, still without using the database or a worker.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from solvers.corpus import Corpus
from solvers.published import validation_corpus

# Top-level packages a solver-only run must never import (solvers is framework-free; pyproject's
# import-linter contract "solvers is framework-free" checks the code, this checks the tests too).
FORBIDDEN_IN_SOLVER_RUNS: tuple[str, ...] = (
    "django",
    "rest_framework",
    "celery",
    "kombu",
    "planner",
    "scenarios",
    "integrations",
    "api",
    "web",
)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare pytest-django's ini key when that plugin is off (``-p no:django``), so that the key in
    ``pyproject.toml`` is not reported as unknown; with the plugin on, the plugin declares it."""
    if not pluginmanager.has_plugin("django"):
        parser.addini("DJANGO_SETTINGS_MODULE", "read by pytest-django; unused when it is off")


def _django_plugin_off(config: pytest.Config) -> bool:
    return not config.pluginmanager.has_plugin("django")


# What was imported before this directory's tests: pytest's plugins, among them ``planner.pytest_embedded``
# (from ``addopts``), which is part of the project's package and so loads its Celery app. They load before
# any test and start nothing for a solver-only run; the check below is about what the tests import.
LOADED_BEFORE_THE_TESTS = frozenset(sys.modules)


def forbidden_modules_loaded() -> list[str]:
    """The forbidden top-level packages that this directory's tests brought into ``sys.modules``."""
    new = {name.split(".")[0] for name in set(sys.modules) - LOADED_BEFORE_THE_TESTS}
    return sorted(new & set(FORBIDDEN_IN_SOLVER_RUNS))


@pytest.fixture(scope="session", autouse=True)
def _celery_test_queue() -> Iterator[None]:
    """The root conftest points Celery at a test queue (which loads Django settings); the solver sends no
    task, so nothing to do here."""
    yield


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher() -> Iterator[None]:
    """The root conftest overrides Django's password hasher; the solver has no users, so nothing to do."""
    yield


@pytest.fixture(scope="session", autouse=True)
def _no_framework_in_solver_runs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a solver-only run (pytest-django off) that imported Django, Celery or a project app."""
    yield
    if _django_plugin_off(request.config):
        loaded = forbidden_modules_loaded()
        if loaded:
            pytest.fail(f"the solver's tests imported {', '.join(loaded)}; they must run without them")


@pytest.fixture(scope="module")
def small() -> Corpus:
    """The validation corpus cut to its first three sources: a corpus the fit and validation run on in seconds,
    and one the shipped calibration was not fitted to."""
    corpus = validation_corpus()
    keep = corpus.source_ids()[:3]
    return Corpus(
        sources=tuple(s for s in corpus.sources if s.id in keep),
        runs=tuple(r for r in corpus.runs if r.source in keep),
    )
