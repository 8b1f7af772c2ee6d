"""Errors raised by the scenarios services; the API maps each to a status code."""

from __future__ import annotations


class ScenarioInUse(Exception):
    """A scenario that plans or results depend on cannot be deleted; archive it instead."""

    def __init__(self, message: str, *, plans: int = 0, results: int = 0) -> None:
        super().__init__(message)
        self.plans = plans
        self.results = results


class ImmutableRowError(Exception):
    """An attempt to change or delete a row that is written once (revision, price book, result)."""


class RunNotFound(LookupError):
    """A task received the id of a run that does not exist (deleted with its plan)."""
