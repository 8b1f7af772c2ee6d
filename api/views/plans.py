"""Plans: CRUD through the scenarios services; POST /plans/{id}/run/ queues a run and answers 202."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import error_response
from api.filters import PlanFilter
from api.serializers.plans import PlanSerializer, PlanUpdateSerializer, RunAcceptedSerializer
from api.views.base import TeamScopedViewSetMixin, refuse_archived, resolve_team
from scenarios.models import Plan


class PlanViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Plans: a cluster, a model and a site (each following its latest revision or pinned to one) plus the
    training and economics choices. ``auto_rerun`` adds a nightly re-check of the plan's inputs.

    DELETE removes a plan without results; a plan with results answers 409: archive it instead.
    """

    filterset_class = PlanFilter
    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    ordering_fields = ("name", "created_at", "updated_at")
    ordering = ("name", "id")

    def base_queryset(self) -> QuerySet[Plan]:
        return Plan.objects.all()

    # Creating or changing a plan solves it as far as a solve would refuse it (``solvers.validate_scenario``:
    # for ``layout: auto`` a search, up to seconds), so it shares the budget of ``/solve/``.
    _THROTTLE_SCOPES: ClassVar[dict[str, str]] = {
        "run": "run",
        "create": "solve",
        "update": "solve",
        "partial_update": "solve",
    }

    @property
    def throttle_scope(self) -> str | None:
        return self._THROTTLE_SCOPES.get(getattr(self, "action", None) or "")

    def get_serializer_class(self) -> Any:
        if self.action in {"update", "partial_update"}:
            return PlanUpdateSerializer
        return PlanSerializer

    def perform_create(self, serializer: Any) -> None:
        from scenarios import services

        fields = dict(serializer.validated_data)
        team = resolve_team(self.request, fields)
        serializer.instance = services.plan_create(team=team, user=self.request.user, **fields)

    def perform_update(self, serializer: Any) -> None:
        from scenarios import services

        refuse_archived(serializer.instance, "plan")
        serializer.instance = services.plan_update(
            plan=serializer.instance, user=self.request.user, **serializer.validated_data
        )

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        plan = self.get_object()
        with transaction.atomic():
            locked = Plan.objects.select_for_update().get(pk=plan.pk)
            if locked.results.exists():
                return error_response(
                    [{"path": "", "message": "results depend on this plan; archive it instead"}],
                    status_code=status.HTTP_409_CONFLICT,
                    detail="Conflict.",
                )
            locked.runs.all().delete()
            locked.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: PlanSerializer})
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, pk: str | None = None) -> Response:
        """Archive: the plan leaves lists and can no longer run; its results stay."""
        from scenarios import services

        plan = services.plan_archive(plan=self.get_object(), user=request.user)
        return Response(PlanSerializer(plan, context=self.get_serializer_context()).data)

    @extend_schema(request=None, responses={202: RunAcceptedSerializer})
    @action(detail=True, methods=["post"])
    def run(self, request: Request, pk: str | None = None) -> Response:
        """Queue a solve of the plan's current inputs. Poll the returned URL; the run links to its result.

        Always 202 once the run is stored: ``queue`` is ``queued`` when its message reached the broker, or
        ``deferred`` when the broker was unreachable; a deferred run is sent by the sweeper (every 30 s) once
        the broker is back, so the request need not be repeated."""
        from scenarios import services

        plan = self.get_object()
        if plan.archived_at is not None:
            return error_response([{"path": "", "message": "the plan is archived"}])
        with transaction.atomic():
            requested = services.run_submit(plan=plan, user=request.user, trigger="api", kind="solve")
        run = requested.run
        # The run row is committed either way; "deferred": the broker was down, the sweeper queues the run
        # once it is back (scenarios.queue).
        queue = "deferred" if requested.sending.state == "deferred" else "queued"
        url = request.build_absolute_uri(reverse("run-detail", kwargs={"pk": run.pk}))
        return Response(
            {"run": run.pk, "status": run.status, "queue": queue, "url": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )
