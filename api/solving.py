"""Calling the solver from a request: its refusals become 400s naming the field path."""

from __future__ import annotations

import logging
from typing import Any, cast

from rest_framework import serializers

logger = logging.getLogger(__name__)


def require_object(data: Any, *, path: str = "") -> dict[str, Any]:
    if not isinstance(data, dict):
        raise serializers.ValidationError({path or "body": ["expected a JSON object"]})
    return data


def solve_document(document: dict[str, Any]) -> dict[str, Any]:
    """``solvers.solve`` with bad input mapped to a 400 (``ScenarioError`` is mapped by ``api.errors``).

    Values that are finite but so large that the arithmetic leaves the range of a double are bad input too;
    they are logged, since the solver's own range checks should have named them first.
    """
    from solvers import solve
    from solvers.errors import SolverInternalError

    try:
        return cast(dict[str, Any], solve(document))  # the report as the JSON document it is
    except (ArithmeticError, SolverInternalError) as exc:
        logger.warning("solve refused a scenario whose arithmetic left the finite range: %s", exc)
        raise serializers.ValidationError(
            {"": ["the scenario's values are so large that the results are not finite numbers"]}
        ) from None
