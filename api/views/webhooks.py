"""Webhook endpoints of your teams: subscribe, change, rotate the secret, enable again, read deliveries and
redeliver one. Team admins write; every member reads; another team's endpoint is a 404."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import error_response
from api.filters import WebhookFilter
from api.schema import ErrorSerializer
from api.serializers.webhooks import (
    DeliverySerializer,
    RotatedSecretSerializer,
    RotateSecretSerializer,
    WebhookCreatedSerializer,
    WebhookSerializer,
    WebhookUpdateSerializer,
)
from api.views.base import TeamScopedViewSetMixin, resolve_team
from integrations import services
from integrations.models import Delivery, DeliveryEvent, Endpoint

MAX_ID = 2**63 - 1


class WebhookViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Endpoints that receive your teams' events, signed as the Standard Webhooks specification says
    (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``). The secret is in the response that
    creates the endpoint (and in the one that rotates it) and nowhere else.

    A receiver deduplicates by ``webhook-id``: a retried delivery carries the same one (the event's public
    id, or the batch's id). Failed attempts (non-2xx, time-out, connection error, a refused address) are
    retried with exponential backoff and jitter for 24 hours after the event; after ``failure_limit``
    consecutive failed attempts the endpoint is disabled (``POST .../enable/`` to resume)."""

    write_role = "admin"
    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    ordering_fields = ("created_at", "id")
    filterset_class = WebhookFilter
    ordering = ("-id",)

    def base_queryset(self) -> QuerySet[Endpoint]:
        return Endpoint.objects.all()

    def get_serializer_class(self) -> Any:
        if self.action in {"update", "partial_update"}:
            return WebhookUpdateSerializer
        if self.action == "rotate_secret":
            return RotateSecretSerializer
        if self.action in {"deliveries", "redeliver"}:
            return DeliverySerializer
        return WebhookSerializer

    @extend_schema(request=WebhookSerializer, responses={201: WebhookCreatedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = WebhookSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        team = resolve_team(request, data, role="admin")
        created = services.endpoint_create(
            team=team,
            user=request.user,
            url=data["url"],
            description=data.get("description", ""),
            event_kinds=data.get("event_kinds", []),
            thresholds=data.get("thresholds", {}),
            plan_id=data.get("plan_id"),
            batch_size=data.get("batch_size", 1),
            failure_limit=data["failure_limit"],
        )
        body = WebhookCreatedSerializer(created.endpoint, context=self.get_serializer_context()).data
        body["secret"] = created.secret
        # the Location is what a retry with the same Idempotency-Key names (its secret is not kept)
        url = request.build_absolute_uri(reverse("webhook-detail", kwargs={"pk": created.endpoint.pk}))
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": url})

    def perform_update(self, serializer: Any) -> None:
        fields = dict(serializer.validated_data)
        fields.pop("team", None)  # a PATCH validates only the fields it names (no defaults)
        serializer.instance = services.endpoint_update(endpoint=serializer.instance, fields=fields)

    @extend_schema(request=RotateSecretSerializer, responses={200: RotatedSecretSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, pk: str | None = None) -> Response:
        """A new secret, shown once. The old one keeps signing beside it for ``overlap_hours`` (default 24),
        so receivers can switch without missing a delivery."""
        endpoint = self.get_object()
        serializer = RotateSecretSerializer(data=request.data or {})
        serializer.is_valid(raise_exception=True)
        hours = float(serializer.validated_data["overlap_hours"])
        rotated = services.secret_rotate(endpoint=endpoint, overlap=timedelta(hours=hours))
        return Response(
            RotatedSecretSerializer(
                {
                    "id": rotated.endpoint.pk,
                    "secret": rotated.secret,
                    "previous_secret_expires_at": rotated.endpoint.previous_secret_expires_at,
                }
            ).data
        )

    @extend_schema(request=None, responses={200: WebhookSerializer})
    @action(detail=True, methods=["post"])
    def enable(self, request: Request, pk: str | None = None) -> Response:
        """Enable the endpoint again and reset its consecutive-failure count."""
        endpoint = services.endpoint_enable(endpoint=self.get_object())
        return Response(WebhookSerializer(endpoint, context=self.get_serializer_context()).data)

    @extend_schema(responses={200: DeliverySerializer(many=True)})
    @action(detail=True, methods=["get"], filter_backends=[])
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        """The endpoint's deliveries, newest first, each with its events and its attempt log."""
        endpoint = self.get_object()
        queryset = (
            Delivery.objects.filter(endpoint=endpoint)
            .prefetch_related(
                "attempt_log",
                Prefetch(
                    "links", queryset=DeliveryEvent.objects.select_related("event").order_by("position")
                ),
            )
            .order_by("-id")
        )
        page = self.paginate_queryset(queryset)
        rows = page if page is not None else list(queryset)
        data = DeliverySerializer(rows, many=True, context=self.get_serializer_context()).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("delivery_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={202: DeliverySerializer, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["post"], url_path=r"deliveries/(?P<delivery_id>\d+)/redeliver")
    def redeliver(self, request: Request, pk: str | None = None, delivery_id: str | None = None) -> Response:
        """A new attempt of the delivery, with the same ``webhook-id`` (receivers deduplicate by it). 409
        when an attempt is in flight or the endpoint is disabled."""
        endpoint = self.get_object()
        number = int(delivery_id or 0)
        delivery = Delivery.objects.filter(pk=number, endpoint=endpoint).first() if number <= MAX_ID else None
        if delivery is None:
            raise NotFound()
        try:
            delivery = services.delivery_redeliver(delivery=delivery)
        except services.DeliveryConflict as exc:
            return error_response([{"path": "", "message": str(exc)}], status_code=409, detail="Conflict.")
        delivery = (
            Delivery.objects.prefetch_related(
                "attempt_log",
                Prefetch(
                    "links", queryset=DeliveryEvent.objects.select_related("event").order_by("position")
                ),
            )
        ).get(pk=delivery.pk)
        return Response(
            DeliverySerializer(delivery, context=self.get_serializer_context()).data,
            status=status.HTTP_202_ACCEPTED,
        )
