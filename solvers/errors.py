"""Errors raised for bad scenario input.

A scenario is rejected with a ``ScenarioError`` that carries every ``FieldError`` found, each naming the
field path in the scenario document (``training.layout.tp``) and the rule it breaks. ``ScenarioError`` is a
``ValueError`` so that callers that only know the standard library still catch it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One broken rule: ``path`` is the dotted field path (list items as ``[i]``), ``message`` the rule."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}

    def prefixed(self, prefix: str) -> FieldError:
        """The same error under a parent path (``"model"`` + ``"layers"`` -> ``"model.layers"``)."""
        if not prefix:
            return self
        path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else prefix + self.path
        return FieldError(path=path, message=self.message)


class ScenarioError(ValueError):
    """A scenario document that cannot be solved; ``errors`` lists every broken rule found."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: list[FieldError] = list(errors)
        if not self.errors:
            self.errors = [FieldError(path="", message="invalid scenario")]
        super().__init__("; ".join(str(e) for e in self.errors))

    @classmethod
    def single(cls, path: str, message: str) -> ScenarioError:
        return cls([FieldError(path=path, message=message)])

    @property
    def first(self) -> FieldError:
        return self.errors[0]

    def as_dict(self) -> dict[str, Any]:
        """``{"path", "message"}`` of the first error plus the full list, for JSON output."""
        return {**self.first.as_dict(), "errors": [e.as_dict() for e in self.errors]}


class SolverInternalError(RuntimeError):
    """A result that the solver must never produce (NaN, infinity): a bug, not bad input."""


def reason_to_error(reason: str) -> FieldError:
    """An engine rule text ``"path: message"`` as a FieldError (the whole text when it has no path)."""
    path, sep, message = reason.partition(": ")
    if sep and path and " " not in path:
        return FieldError(path=path, message=message)
    return FieldError(path="training.layout", message=reason)
