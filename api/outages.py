"""Outages of the database or the broker answer 503 with ``Retry-After``, never 500.

A request that cannot reach PostgreSQL (``OperationalError``/``InterfaceError`` on connect or query) or Redis
(the broker and the cache: kombu's ``OperationalError`` when a task is sent, redis-py's connection errors
when a throttle or the cache is read) failed because of the service, not the request, and will succeed when
the server is back: RFC 9110 §15.6.4 says 503 with ``Retry-After`` so that clients and proxies retry later
instead of reporting a bug. Three places see such an error, and all three answer the same way:

- the API's exception handler (``api.errors``), for DRF views (JSON, the API's error shape);
- ``OutageMiddleware.process_exception``, for every other view (the dashboard's HTML page, or JSON under
  ``/api/``);
- ``server_error`` (the project's ``handler500``), for an error raised by a middleware (e.g. the session
  store), which no view-level handler sees.

``/healthz`` has its own answers (200, or 503 naming the parts that are down) and is not changed here.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import redis.exceptions
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.db import InterfaceError
from django.db import OperationalError as DatabaseOperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults
from kombu.exceptions import OperationalError as BrokerOperationalError

logger = logging.getLogger(__name__)

DATABASE_ERRORS: tuple[type[BaseException], ...] = (DatabaseOperationalError, InterfaceError)
BROKER_ERRORS: tuple[type[BaseException], ...] = (
    BrokerOperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError,
    ConnectionError,  # a raw socket refusal that kombu's transport did not wrap
)


def outage_of(exc: BaseException | None) -> str | None:
    """``"database"`` or ``"broker"`` when ``exc`` (or an exception it was raised from) is an outage."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, DATABASE_ERRORS):
            return "database"
        if isinstance(exc, BROKER_ERRORS):
            return "broker"
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def retry_after_s() -> int:
    return int(getattr(settings, "OUTAGE_RETRY_AFTER_S", 5))


def detail_for(part: str) -> str:
    return f"Service temporarily unavailable: the {part} cannot be reached. Retry after {retry_after_s()} s."


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


def outage_response(request: HttpRequest, part: str) -> HttpResponse:
    """The 503 itself: JSON in the API's error shape under /api/, a plain HTML page elsewhere.

    The page is rendered without a request context: the context processors read the session and the user,
    which need the database that is down."""
    detail = detail_for(part)
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse(
            {"detail": detail, "errors": [{"path": "", "message": f"{part} unavailable"}]}, status=503
        )
    else:
        html = render_to_string("api/unavailable.html", {"detail": detail, "part": part})
        response = HttpResponse(html, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(retry_after_s())
    response["Cache-Control"] = "no-store"
    return response


class OutageMiddleware:
    """Turns an outage raised by any view into the 503 (DRF views are answered by ``api.errors`` first)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        part = outage_of(exception)
        if part is None:
            return None
        logger.warning("%s %s: %s unavailable: %s", request.method, request.path, part, exception)
        return outage_response(request, part)


def server_error(request: HttpRequest, template_name: str = "500.html") -> HttpResponse:
    """``handler500``: an outage raised outside a view (a middleware) is a 503 too; anything else is
    Django's own 500. Django calls this inside its ``except`` block, so the exception is in ``sys.exc_info``."""
    part = outage_of(sys.exc_info()[1])
    if part is not None:
        return outage_response(request, part)
    return defaults.server_error(request, template_name)


def bad_request(request: HttpRequest, exception: Exception, template_name: str = "400.html") -> HttpResponse:
    """``handler400``: a request Django refuses before any view (a ``Host`` header not in ``ALLOWED_HOSTS``,
    another ``SuspiciousOperation``) is the API's JSON 400 under /api/, Django's own page elsewhere; the
    message says which rule, not the value sent."""
    if wants_json(request):
        message = "Host header not allowed" if isinstance(exception, DisallowedHost) else "bad request"
        return JsonResponse(
            {"detail": "Bad request.", "errors": [{"path": "", "message": message}]}, status=400
        )
    return defaults.bad_request(request, exception, template_name)
