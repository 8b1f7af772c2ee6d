"""The dashboard's costly forms share the API's request budgets.

Creating a plan checks it as a solve would (for ``layout: auto``, a layout search of up to seconds), and
running a plan or starting a search or a sweep queues work for the workers: the API throttles these per
token and per signed-in user (``THROTTLE_SOLVE``, ``THROTTLE_RUN``), and a dashboard form that does the same
work draws on the signed-in user's budget of the same scope. A form sent over the budget answers 429 with
``Retry-After`` and does nothing.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from api.throttling import session_budget_wait


def over_budget_page(request: HttpRequest, wait_s: float) -> HttpResponse:
    retry = max(1, math.ceil(wait_s))
    context = {
        "status": 429,
        "title": "Too many requests",
        "detail": f"You have used this minute's budget for this kind of request. Nothing was done: try again "
        f"in {retry} s.",
    }
    response = render(request, "web/error.html", context, status=429)
    response["Retry-After"] = str(retry)
    return response


class SpendsBudgetMixin:
    """A view whose POST costs what an API request of ``budget_scope`` costs ("solve" or "run")."""

    budget_scope: ClassVar[str]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.method == "POST" and request.user.is_authenticated:
            wait = session_budget_wait(request, self.budget_scope)
            if wait is not None:
                return over_budget_page(request, wait)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
