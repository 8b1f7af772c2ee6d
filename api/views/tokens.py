"""API tokens: create (the secret is shown once), list, revoke."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Model, Q, QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import ApiTokenFilter
from api.limits import token_limit_error
from api.models import SCOPE_READ_WRITE, ApiToken, default_expiry
from api.permissions import has_role, team_roles
from api.serializers.tokens import ApiTokenCreatedSerializer, ApiTokenSerializer
from api.views.base import PlannerViewMixin


class ApiTokenViewSet(
    PlannerViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your API tokens, and those restricted to teams you administer. DELETE revokes a token (kept, inactive).

    Use a token as ``Authorization: Bearer <token>``. Only its SHA-256 is stored: the secret is in the
    response that creates it and nowhere else. A token expires (``expires_at``; by default
    API_TOKEN_DEFAULT_DAYS after its creation; a token made with a token expires no later than the token
    that made it) and has a ``scope``: ``read`` tokens may only read (any
    other method is a 403), ``read_write`` ones (the default) do what their user's roles allow.
    """

    serializer_class = ApiTokenSerializer
    permission_classes = (IsAuthenticated,)
    lookup_value_regex = r"\d+"
    ordering_fields = ("created_at", "last_used_at")
    filterset_class = ApiTokenFilter

    def get_queryset(self) -> QuerySet[ApiToken]:
        if getattr(self, "swagger_fake_view", False):
            return ApiToken.objects.none()
        admin_teams = [team_id for team_id, role in team_roles(self.request).items() if role == "admin"]
        queryset = ApiToken.objects.filter(Q(user_id=self.request.user.pk) | Q(team_id__in=admin_teams))
        token = self.request.auth
        if isinstance(token, ApiToken) and token.team_id is not None:
            queryset = queryset.filter(team_id=token.team_id)
        return queryset.select_related("user")

    @extend_schema(responses={201: ApiTokenCreatedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        team = serializer.validated_data.get("team")
        caller_token = request.auth
        restricted_to = caller_token.team_id if isinstance(caller_token, ApiToken) else None
        if restricted_to is not None and (team is None or team.pk != restricted_to):
            raise PermissionDenied("A token restricted to one team can only create tokens for that team.")
        user = cast(AbstractBaseUser, request.user)  # IsAuthenticated: never the anonymous user here
        limit_error = token_limit_error(user.pk)
        if limit_error is not None:
            raise serializers.ValidationError({"": [limit_error]})
        expires_at = serializer.validated_data.get("expires_at")
        caller_expiry = caller_token.expires_at if isinstance(caller_token, ApiToken) else None
        if caller_expiry is not None:
            # A token makes no token that outlives it: a leaked short-lived token cannot make itself lasting.
            if expires_at is not None and expires_at > caller_expiry:
                raise serializers.ValidationError(
                    {
                        "expires_at": [
                            "must not be later than the expiry of the token making it "
                            f"({caller_expiry.isoformat()})"
                        ]
                    }
                )
            expires_at = min(expires_at or default_expiry() or caller_expiry, caller_expiry)
        token, secret = ApiToken.issue(
            user=user,
            name=serializer.validated_data["name"],
            team=team,
            expires_at=expires_at,
            scope=serializer.validated_data.get("scope", SCOPE_READ_WRITE),
        )
        data = ApiTokenCreatedSerializer(token, context=self.get_serializer_context()).data
        data["token"] = secret
        # the Location is what a retry with the same Idempotency-Key names (its secret is not kept)
        url = request.build_absolute_uri(reverse("token-detail", kwargs={"pk": token.pk}))
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": url})

    def perform_destroy(self, instance: ApiToken) -> None:
        if instance.user_id != self.request.user.pk and not has_role(self.request, instance.team_id, "admin"):
            raise PermissionDenied("Only the token's owner or an admin of its team revokes it.")
        instance.revoke(by=cast(Model, self.request.user))
