"""One error shape for every 4xx: {"errors": [{"path": "a.b.c", "message": "..."}], "detail": "..."}.

Besides DRF's own exceptions this maps the errors the layers below raise for bad input, so that a rejected
request is a 400 naming the field path and the rule, never a 500: ``solvers.ScenarioError`` (a scenario that
cannot be solved), Django's ``ValidationError`` (raised by the scenarios services), an oversized body, and the
``ScenarioInUse`` refusal (409). A database or broker outage is a 503 with ``Retry-After`` (``api.outages``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from api.limits import MAX_BODY_BYTES


def flatten_errors(data: Any, prefix: str = "") -> list[dict[str, str]]:
    if isinstance(data, dict):
        out: list[dict[str, str]] = []
        for key, value in data.items():
            path = key if not prefix else (prefix if key == "non_field_errors" else f"{prefix}.{key}")
            if key == "non_field_errors" and not prefix:
                path = ""
            out.extend(flatten_errors(value, str(path)))
        return out
    if isinstance(data, list):
        if all(not isinstance(item, dict | list) for item in data):
            return [{"path": prefix, "message": str(item)} for item in data]
        out = []
        for index, item in enumerate(data):
            out.extend(flatten_errors(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    return [{"path": prefix, "message": str(data)}]


def error_response(
    errors: list[dict[str, str]], *, status_code: int = 400, detail: str = "Invalid input."
) -> Response:
    return Response({"detail": detail, "errors": errors}, status=status_code)


def _django_validation_errors(exc: DjangoValidationError) -> list[dict[str, str]]:
    if hasattr(exc, "error_dict"):
        return [
            {"path": "" if field == "__all__" else str(field), "message": str(message)}
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
    return [{"path": "", "message": str(message)} for message in exc.messages]


def _lower_layer_response(exc: Exception) -> Response | None:
    """Map the exceptions of the scenarios and solvers layers (imported lazily: both may still be loading)."""
    if isinstance(exc, DjangoValidationError):
        return error_response(_django_validation_errors(exc))
    if isinstance(exc, RequestDataTooBig):
        return error_response(
            [{"path": "body", "message": f"larger than the limit of {MAX_BODY_BYTES} bytes"}]
        )
    if isinstance(exc, SuspiciousOperation):
        return error_response([{"path": "", "message": str(exc)}])
    try:
        from solvers import ScenarioError
    except ImportError:  # the solver package is optional at import time of this module only
        ScenarioError = None  # type: ignore[assignment,misc]
    if ScenarioError is not None and isinstance(exc, ScenarioError):
        return error_response([{"path": e.path, "message": e.message} for e in exc.errors])
    try:
        from scenarios.errors import ScenarioInUse
    except ImportError:
        ScenarioInUse = None  # type: ignore[assignment,misc]
    if ScenarioInUse is not None and isinstance(exc, ScenarioInUse):
        return error_response(
            [{"path": "", "message": str(exc) or "results depend on this object; archive it instead"}],
            status_code=status.HTTP_409_CONFLICT,
            detail="Conflict.",
        )
    return None


def _outage_response(exc: Exception) -> Response | None:
    """A database or broker outage: 503 with Retry-After (see ``api.outages``), never a 500."""
    from api.outages import detail_for, outage_of, retry_after_s

    part = outage_of(exc)
    if part is None:
        return None
    return Response(
        {"detail": detail_for(part), "errors": [{"path": "", "message": f"{part} unavailable"}]},
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(retry_after_s()), "Cache-Control": "no-store"},
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    outage = _outage_response(exc)
    if outage is not None:
        return outage
    response = drf_exception_handler(exc, context)
    if response is None:
        return _lower_layer_response(exc)
    data = response.data
    if isinstance(data, dict) and set(data) == {"detail"}:
        response.data = {"detail": str(data["detail"]), "errors": []}
    elif isinstance(data, dict) and "errors" in data and "detail" in data:
        pass
    else:
        response.data = {"detail": "Invalid input.", "errors": flatten_errors(data)}
    return response
