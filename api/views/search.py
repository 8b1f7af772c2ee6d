"""POST /plans/{id}/search/ and /plans/{id}/sweep/: queue a design-space search or a sweep of a plan (202).

Both answer with the run's URL; GET /runs/{id}/ shows ``points_done`` / ``points_total`` while it runs and
links the stored result when it is done. A request over the documented limits (layouts per search, points
per sweep) or with a broken rule is a 400 naming the field path, and nothing is queued.

``api.urls`` includes this module's ``urlpatterns`` under ``plans/<pk>/``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.urls import path, reverse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import LIMITS_MARKDOWN
from api.serializers.search import JobAcceptedSerializer, SearchRequestSerializer, SweepRequestSerializer
from api.views.base import TeamScopedViewSetMixin
from scenarios.models import Plan, Run


def _accepted(request: Request, run: Run) -> Response:
    url = request.build_absolute_uri(reverse("run-detail", kwargs={"pk": run.pk}))
    body = {
        "run": run.pk,
        "kind": run.kind,
        "status": run.status,
        "points_total": run.points_total,
        "url": url,
    }
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class PlanJobView(TeamScopedViewSetMixin, generics.GenericAPIView):
    """A job on one plan of the caller's teams (another team's plan is a 404); queuing needs the editor role."""

    throttle_scope = "run"

    def base_queryset(self) -> QuerySet[Plan]:
        return Plan.objects.all()


SEARCH_DESCRIPTION = (
    "Queue a design-space search of the plan: every valid layout (tp, cp, pp, ep, microbatch, schedule, "
    "ZeRO stage, recompute, ...) of its current inputs is evaluated by the engine, and the stored result "
    "holds the best layout's full report, the top alternatives, the Pareto front and the rejected layouts "
    "by reason; the plan's own layout is compared with the best as the baseline. Every layout carries "
    "support: how close it is to the published runs the step model was validated on, and why not when it "
    "lies outside; within_validated (default true) keeps only the layouts inside. Answers 202 with the run "
    "URL; the run counts layouts evaluated in points_done / points_total.\n" + LIMITS_MARKDOWN
)
SWEEP_DESCRIPTION = (
    "Queue a sweep of the plan: the best layout at every point of the axes (any scenario field over a list "
    "or a range: GPU count, accelerator, fabric bandwidth, region, batch, prices) and the Pareto front of the "
    "points. The points are solved in chunks by every worker on the queue; the run counts points in "
    "points_done / points_total, and the stored result has one row per point. Each point's fields are set on "
    "the plan's document before prices are applied, so a point that changes the node, the accelerator or the "
    "region gets that accelerator's and region's prices (listed in the row under prices); a field the plan "
    "states by value that the swept preset would re-derive is kept and listed under pinned. The request is "
    "validated whole before the 202: a value that breaks a rule at every point it is part of is refused "
    "with its path (axes[0].values[1]).\n" + LIMITS_MARKDOWN
)


class PlanSearchView(PlanJobView):
    """Queue a design-space search of the plan (202 with the run URL)."""

    serializer_class = SearchRequestSerializer

    @extend_schema(
        request=SearchRequestSerializer,
        responses={202: JobAcceptedSerializer},
        tags=["plans"],
        description=SEARCH_DESCRIPTION,
        examples=[
            OpenApiExample(
                "Cheapest layout per million tokens, tensor parallelism within a node",
                value={"objective": "usd_per_million_tokens", "top": 5, "space": {"tp": [1, 2, 4, 8]}},
                request_only=True,
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        from scenarios import search_jobs

        plan = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with transaction.atomic():
            run = search_jobs.search_request(
                plan=plan, user=request.user, trigger="api", **serializer.validated_data
            )
        return _accepted(request, run)


class PlanSweepView(PlanJobView):
    """Queue a sweep of the plan (202 with the run URL)."""

    serializer_class = SweepRequestSerializer

    @extend_schema(
        request=SweepRequestSerializer,
        responses={202: JobAcceptedSerializer},
        tags=["plans"],
        description=SWEEP_DESCRIPTION,
        examples=[
            OpenApiExample(
                "GPU count x region",
                value={
                    "axes": [
                        {"field": "cluster.gpus", "range": {"start": 4096, "stop": 16384, "factor": 2}},
                        {"field": "site.region", "values": ["quebec", "virginia", "iceland"]},
                    ],
                    "objective": "step_s",
                    "pareto": ["wall_clock_days", "total_usd", "total_kgco2e"],
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        from scenarios import search_jobs

        plan = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields: dict[str, Any] = dict(serializer.validated_data)
        with transaction.atomic():
            run = search_jobs.sweep_request(plan=plan, user=request.user, trigger="api", **fields)
        return _accepted(request, run)


urlpatterns = [
    path("search/", PlanSearchView.as_view(), name="plan-search"),
    path("sweep/", PlanSweepView.as_view(), name="plan-sweep"),
]
