"""ETag and conditional GET (RFC 9110 §13) for results and comparisons.

The ETag is a hash of the response body as sent (Django's ``ConditionalGetMiddleware``, applied to these
views only): a result's figures never change, but whether it is ``current`` does, and a comparison follows
its plans' latest results, so the body is the honest validator. A GET with ``If-None-Match`` naming the
current ETag answers 304 with no body. Responses vary by ``Accept`` (JSON or CSV) and by the caller
(``Authorization``, ``Cookie``: team scoping), so shared caches keep them apart.
"""

from __future__ import annotations

from typing import Any

from django.middleware.http import ConditionalGetMiddleware
from django.utils.cache import patch_vary_headers
from django.utils.decorators import decorator_from_middleware, method_decorator

conditional_get = decorator_from_middleware(ConditionalGetMiddleware)


def with_etag(view_class: type[Any]) -> type[Any]:
    """Class decorator: GETs of ``view_class`` carry an ETag and answer If-None-Match with 304."""
    decorated: type[Any] = method_decorator(conditional_get, name="dispatch")(view_class)
    original = decorated.finalize_response

    def finalize_response(self: Any, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = original(self, request, response, *args, **kwargs)
        patch_vary_headers(response, ("Accept", "Authorization", "Cookie"))
        return response

    decorated.finalize_response = finalize_response
    decorated.etag_conditional = True  # the OpenAPI document's ETag, If-None-Match and 304 (api.schema)
    return decorated
