"""OpenAPI generation: the error responses every operation can give, token auth, and the documented limits."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from api import limits


class ErrorItemSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="Dotted field path ('' for the request as a whole).")
    message = serializers.CharField(help_text="The rule that was broken.")


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = ErrorItemSerializer(many=True)  # type: ignore[assignment]  # the field, not Serializer.errors


ERROR_DESCRIPTIONS = {
    "400": "Bad input: every broken rule with its field path. Nothing was stored.",
    "401": "No credentials, or an invalid, expired or revoked token.",
    "403": "Your role on this team does not allow this (viewer reads, editor writes, admin manages).",
    "404": "No such object among your teams' objects (another team's object is also 404).",
    "409": "Results depend on this object: archive it instead.",
    "422": "The Idempotency-Key was already used for a different request (method, path, body or credential).",
    "429": "Too many requests for this token (its scope's rate), or too many wrong tokens from this address "
    "(every token request from it, a right one too, until the window has passed); retry after the number of "
    "seconds in Retry-After.",
    "503": "The database or the broker is unreachable: nothing was done; retry after Retry-After seconds.",
}
# A POST's 409 comes from its Idempotency-Key, a DELETE's from what depends on the object.
POST_409 = (
    "The Idempotency-Key's first request is still being answered (retry in a moment), or it was answered "
    "with a secret (a new token, a signing secret), which is shown once and not replayed."
)

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="Any unique string (a UUID): a retry with the same key and body from the same credential gets "
    "the first answer again (marked Idempotent-Replayed: true) instead of creating or running twice; the same "
    "key with another body or from another credential is a 422; an answer that held a secret is not replayed "
    "(409). Keys are kept for IDEMPOTENCY_KEY_TTL_HOURS (24 h).",
)


IF_NONE_MATCH_PARAMETER = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="The ETag of a body you hold: while nothing changed the answer is 304 with no body.",
)


# A list read as CSV holds one page: where the others are and how many rows there are go in headers
# (api.renderers).
CSV_PAGE_HEADERS = {
    "Link": {
        "schema": {"type": "string"},
        "description": 'CSV only: the next and previous pages, `<url>; rel="next"` and `<url>; rel="prev"`.',
    },
    "X-Total-Count": {
        "schema": {"type": "integer"},
        "description": "CSV only: how many rows the whole list holds.",
    },
}


class PlannerAutoSchema(AutoSchema):
    """Adds the shared error shape to every operation, for the status codes that operation can answer."""

    def _error_codes(self) -> list[str]:
        codes = ["400", "401", "403", "404"]
        if self.method == "DELETE":
            codes.append("409")
        if self.method == "POST":
            codes += ["409", "422"]
        codes.append("429")  # wrong tokens from one address are throttled on every operation
        codes.append("503")
        return codes

    def _renders_csv(self) -> bool:
        """The view answers ``text/csv`` too (``api.renderers.CSVRenderer``)."""
        return any(
            getattr(r, "media_type", "") == "text/csv" for r in getattr(self.view, "renderer_classes", ())
        )

    def _conditional(self) -> bool:
        """A GET of a view with an ETag (``api.conditional.with_etag``)."""
        return self.method == "GET" and bool(getattr(self.view, "etag_conditional", False))

    def get_override_parameters(self) -> list[Any]:
        parameters: list[Any] = list(super().get_override_parameters())
        if self.method == "POST":
            parameters.append(IDEMPOTENCY_PARAMETER)
        if self._conditional():
            parameters.append(IF_NONE_MATCH_PARAMETER)
        return parameters

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in self._error_codes():
            if code not in responses:
                body = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                body["description"] = (
                    POST_409 if (code, self.method) == ("409", "POST") else ERROR_DESCRIPTIONS[code]
                )
                responses[code] = body
        if self.method == "GET" and self._is_list_view() and self._renders_csv():
            for code, body in responses.items():
                if code.startswith("2") and isinstance(body, dict):
                    body.setdefault("headers", {}).update(CSV_PAGE_HEADERS)
        if self._conditional():
            for code, body in responses.items():
                if code.startswith("2") and isinstance(body, dict):
                    body.setdefault("headers", {})["ETag"] = {
                        "schema": {"type": "string"},
                        "description": "A validator of this body: send it back in If-None-Match.",
                    }
            responses["304"] = {
                "description": "Not modified: the If-None-Match named this body's ETag; no body is sent."
            }
        return responses


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (pln_...) created at POST /api/v1/tokens/ and shown once.",
        }


LIMITS_MARKDOWN = f"""
**Limits** (each enforced with a 400 naming the field and the limit):
request body at most {limits.MAX_BODY_BYTES} bytes, JSON nested at most {limits.MAX_JSON_DEPTH} levels, finite
numbers only (no NaN or Infinity), integers within ±2^53, strings at most {limits.MAX_STRING_CHARS} characters;
at most {limits.MAX_COMPARE_ITEMS} plans or results per comparison; at most {limits.MAX_PRICE_ENTRIES} entries per
price book. Scenario limits (GPUs, layers, batch, ...) are the solver's and are named in each 400. A page of a
list holds at most {limits.MAX_PAGE_SIZE} items (default {limits.DEFAULT_PAGE_SIZE}): a larger `page_size` is
capped, not refused; follow `next`.
"""


def openapi_schema(schema: Any) -> Any:
    """A JSON Schema (draft 2020-12) as an OpenAPI 3.0 schema object: a type list with ``"null"`` becomes the
    other type with ``nullable: true``, which is how OpenAPI 3.0 says it (it has no ``null`` type).

    The solver's schemas are plain JSON Schema, which a client validates reports with; the API's document is
    OpenAPI 3.0, so the translation lives here. Example: ``{"type": ["number", "null"]}`` ->
    ``{"type": "number", "nullable": True}``.
    """
    if isinstance(schema, list):
        return [openapi_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: openapi_schema(value) for key, value in schema.items()}
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        others = [k for k in kind if k != "null"]
        if len(others) == 1:
            out["type"] = others[0]
            out["nullable"] = True
    return out
