"""Cluster, model and site scenarios: CRUD through the scenarios services, revisions, archive."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import ClusterFilter, ModelFilter, ScenarioFilter, SiteFilter
from api.serializers.scenarios import RevisionSerializer, ScenarioSerializer, ScenarioUpdateSerializer
from api.views.base import TeamScopedViewSetMixin, refuse_archived, resolve_team
from scenarios.models import ClusterScenario, ModelScenario, ScenarioBase, SiteScenario


class ScenarioViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Base of /clusters/, /models/ and /sites/. Each edit of ``document`` makes a new immutable revision.

    A PATCH that makes a new revision answers with ``following_plans``: how many live plans follow the
    scenario's latest revision, how many were checked, and each one a run would now refuse with the rules it
    breaks (the edit is kept: change those plans, or pin them to an earlier revision).

    DELETE removes a scenario nothing depends on; one that plans or results use answers 409: archive it.
    Lists show live scenarios unless ``?archived=true``.
    """

    model: type[ScenarioBase]
    kind: str
    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    ordering_fields = ("name", "created_at", "updated_at")
    ordering = ("name", "id")

    def base_queryset(self) -> QuerySet[Any]:
        return self.model.objects.select_related("latest_revision")  # type: ignore[attr-defined]

    def get_serializer_class(self) -> Any:
        if self.action in {"update", "partial_update"}:
            return ScenarioUpdateSerializer
        if self.action in {"revisions", "revision"}:
            return RevisionSerializer
        return ScenarioSerializer

    def perform_create(self, serializer: Any) -> None:
        from scenarios import services

        data = dict(serializer.validated_data)
        team = resolve_team(self.request, data)
        serializer.instance = services.scenario_create(
            kind=self.kind,
            team=team,
            name=data["name"],
            description=data.get("description", ""),
            document=data["document"],
            user=self.request.user,
        )

    # A change of ``document`` checks the plans that follow the scenario, a solve's check each (for
    # ``layout: auto`` a search), so every update shares the budget of ``/solve/``.
    _THROTTLE_SCOPES: ClassVar[dict[str, str]] = {"update": "solve", "partial_update": "solve"}

    @property
    def throttle_scope(self) -> str | None:
        return self._THROTTLE_SCOPES.get(getattr(self, "action", None) or "")

    def perform_update(self, serializer: Any) -> None:
        from scenarios import services

        refuse_archived(serializer.instance, "scenario")
        data = serializer.validated_data
        edit = services.scenario_edit(
            scenario=serializer.instance,
            user=self.request.user,
            name=data.get("name"),
            description=data.get("description"),
            document=data.get("document"),
        )
        serializer.instance = edit.scenario
        serializer.context["following_plans"] = edit.following_plans

    def perform_destroy(self, instance: Any) -> None:
        from scenarios import services

        services.scenario_delete(scenario=instance)

    @extend_schema(request=None, responses={200: ScenarioSerializer})
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, pk: str | None = None) -> Response:
        """Archive: the scenario leaves lists and new plans, and everything computed from it stays."""
        from scenarios import services

        scenario = services.scenario_archive(scenario=self.get_object(), user=request.user)
        return Response(ScenarioSerializer(scenario, context=self.get_serializer_context()).data)

    @extend_schema(responses={200: RevisionSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def revisions(self, request: Request, pk: str | None = None) -> Response:
        """Every revision of this scenario, newest first."""
        scenario = self.get_object()
        queryset = scenario.revisions.select_related("created_by").order_by("-number")
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(RevisionSerializer(page, many=True).data)

    @extend_schema(
        responses={200: RevisionSerializer},
        parameters=[OpenApiParameter("number", OpenApiTypes.INT, OpenApiParameter.PATH)],
    )
    @action(detail=True, methods=["get"], url_path=r"revisions/(?P<number>\d+)")
    def revision(self, request: Request, pk: str | None = None, number: str = "") -> Response:
        """One revision by its number (1 is the first)."""
        scenario = self.get_object()
        if len(number) > 9:
            get_object_or_404(scenario.revisions.none())
        revision = get_object_or_404(scenario.revisions.select_related("created_by"), number=int(number))
        return Response(RevisionSerializer(revision).data)


def _scenario_viewset(
    model: type[ScenarioBase], kind: str, doc: str, filterset: type[ScenarioFilter]
) -> type[ScenarioViewSet]:
    attrs = {
        "model": model,
        "kind": kind,
        "filterset_class": filterset,
        "__doc__": f"{doc}\n\n{ScenarioViewSet.__doc__}",
    }
    return type(f"{model.__name__}ViewSet", (ScenarioViewSet,), attrs)


ClusterViewSet = _scenario_viewset(
    ClusterScenario, "cluster", "Clusters: accelerator, GPUs, fabrics, reliability, power.", ClusterFilter
)
ModelViewSet = _scenario_viewset(
    ModelScenario, "model", "Models: architecture (or a catalog preset) to train.", ModelFilter
)
SiteViewSet = _scenario_viewset(
    SiteScenario, "site", "Sites: grid carbon intensity, PUE, water, electricity price.", SiteFilter
)
