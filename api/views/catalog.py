"""GET /catalog/: the solver's presets (accelerators, nodes, fabrics, models, grid regions) with sources."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api.views.base import AuthenticatedAPIView

CATALOG_KINDS = ("accelerators", "nodes", "fabrics", "models", "regions")


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Any]:
    # The catalog is constant for a given solver build, so it is computed once per process.
    from solvers import catalog_document

    return catalog_document()


class CatalogView(AuthenticatedAPIView):
    """Every preset the solver knows, by kind; each value carries its source."""

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        tags=["catalog"],
        operation_id="catalog_retrieve",
        examples=[
            OpenApiExample(
                "Catalog (abridged)",
                value={"accelerators": {"h100-sxm": {"hbm_gb": 80.0, "tdp_w": 700.0, "sources": {}}}},
                response_only=True,
            )
        ],
    )
    def get(self, request: Request) -> Response:
        return Response(_catalog())


KIND_PARAMETER = OpenApiParameter(
    "kind",
    {"type": "string", "enum": list(CATALOG_KINDS)},
    OpenApiParameter.PATH,
    description="Kind of preset.",
)


class CatalogKindView(AuthenticatedAPIView):
    """The presets of one kind, keyed by catalog key."""

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        parameters=[KIND_PARAMETER],
        tags=["catalog"],
        operation_id="catalog_kind_retrieve",
    )
    def get(self, request: Request, kind: str) -> Response:
        if kind not in CATALOG_KINDS:
            raise NotFound(f"kind: unknown; expected one of {', '.join(CATALOG_KINDS)}")
        return Response(_catalog().get(kind, {}))


class CatalogEntryView(AuthenticatedAPIView):
    """One preset by its catalog key (e.g. /catalog/accelerators/h100-sxm/)."""

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        parameters=[KIND_PARAMETER, OpenApiParameter("key", OpenApiTypes.STR, OpenApiParameter.PATH)],
        tags=["catalog"],
        operation_id="catalog_entry_retrieve",
    )
    def get(self, request: Request, kind: str, key: str) -> Response:
        if kind not in CATALOG_KINDS:
            raise NotFound(f"kind: unknown; expected one of {', '.join(CATALOG_KINDS)}")
        entry = _catalog().get(kind, {}).get(key)
        if entry is None:
            raise NotFound(f"key: no {kind} preset named {key!r}")
        return Response(entry)
