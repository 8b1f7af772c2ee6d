"""Teams (the caller's) and their members; admins manage members."""

from __future__ import annotations

from typing import Any, cast

from django.db import transaction
from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import InvitationFilter, MemberFilter, TeamFilter
from api.limits import is_id_text
from api.models import ApiToken
from api.permissions import has_role, team_roles
from api.serializers.teams import (
    InvitationSerializer,
    MemberSerializer,
    MemberUpdateSerializer,
    TeamSerializer,
)
from api.views.base import PlannerViewMixin, TeamScopedViewSetMixin
from scenarios.models import ROLE_ADMIN, Membership, Team


class TeamViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """The teams you belong to, with your role. Creating a team makes you its admin; admins rename it."""

    serializer_class = TeamSerializer
    team_field = "id"
    write_role = "admin"
    http_method_names = ("get", "post", "patch", "head", "options")
    ordering_fields = ("name", "created_at")
    filterset_class = TeamFilter

    def base_queryset(self) -> QuerySet[Team]:
        return Team.objects.all()

    def object_team_id(self, obj: Any) -> int | None:
        return int(obj.pk)

    def perform_create(self, serializer: Any) -> None:
        token = self.request.auth
        if isinstance(token, ApiToken) and token.team_id is not None:
            raise PermissionDenied("A token restricted to one team cannot create teams.")
        from scenarios import services

        team = services.team_create(
            name=serializer.validated_data["name"],
            slug=serializer.validated_data["slug"],
            owner=self.request.user,
        )
        serializer.instance = team
        # The new membership must be visible to the serializer's role field.
        team_roles(self.request)[team.pk] = ROLE_ADMIN

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def leave(self, request: Request, pk: str | None = None) -> Response:
        """Leave the team (any role; the last admin cannot). The tokens restricted to it stop working."""
        from scenarios import services

        # Any role may leave: the team is looked up among the caller's (else 404), not checked for admin.
        team = get_object_or_404(self.get_queryset(), pk=pk)
        membership = get_object_or_404(Membership, team=team, user_id=cast(int, request.user.pk))
        with transaction.atomic():
            revoke_team_tokens(membership, by=cast(Model, request.user))
            services.membership_leave(membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberViewSet(
    TeamScopedViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Members of one of your teams. Any member reads; admins add, change roles and remove."""

    write_role = "admin"
    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    ordering_fields = ("created_at", "role")
    filterset_class = MemberFilter
    team: Team

    def base_queryset(self) -> QuerySet[Membership]:
        team_id = int(self.kwargs.get("team_pk") or 0)
        return Membership.objects.filter(team_id=team_id).select_related("user").order_by("id")

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return MemberUpdateSerializer if self.action in {"update", "partial_update"} else MemberSerializer

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if getattr(self, "swagger_fake_view", False):
            return
        team_pk = str(kwargs.get("team_pk", ""))
        if not is_id_text(team_pk) or int(team_pk) not in team_roles(request):
            get_object_or_404(Team.objects.none())
        self.team = Team.objects.get(pk=int(team_pk))
        if request.method not in SAFE_METHODS and not has_role(request, self.team.pk, "admin"):
            raise PermissionDenied("Only a team admin manages members.")

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        context["team"] = getattr(self, "team", None)
        return context

    def _refuse_losing_last_admin(self, membership: Membership, new_role: str | None) -> None:
        from scenarios import services

        if membership.role != ROLE_ADMIN or membership.accepted_at is None or new_role == ROLE_ADMIN:
            return
        if not services.other_admins(membership):
            raise serializers.ValidationError({"role": ["a team keeps at least one admin"]})

    def perform_create(self, serializer: Any) -> None:
        from scenarios import services

        data = serializer.validated_data
        # An invitation: the user holds no access to the team until they accept it (``/invitations/``).
        serializer.instance = services.membership_invite(team=self.team, user=data["user"], role=data["role"])

    def perform_update(self, serializer: Any) -> None:
        from scenarios import services

        with transaction.atomic():
            Team.objects.select_for_update().get(
                pk=serializer.instance.team_id
            )  # one member change at a time
            membership = Membership.objects.select_for_update().get(pk=serializer.instance.pk)
            role = serializer.validated_data.get("role", membership.role)
            self._refuse_losing_last_admin(membership, role)
            serializer.instance = services.membership_set(team=self.team, user=membership.user, role=role)

    def perform_destroy(self, instance: Membership) -> None:
        from scenarios import services

        with transaction.atomic():
            # Tokens restricted to this team stop working for the removed member, revoked by the caller.
            revoke_team_tokens(instance, by=cast(Model, self.request.user))
            services.membership_leave(membership=instance)


class InvitationViewSet(
    PlannerViewMixin, mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Your invitations to teams: a team's admin added you, and you hold no access to the team until you
    accept (``POST /invitations/{id}/accept/``); DELETE declines. A token restricted to one team cannot
    answer invitations."""

    serializer_class = InvitationSerializer
    lookup_value_regex = r"\d+"
    ordering_fields = ("created_at",)
    ordering = ("-created_at", "-id")
    filterset_class = InvitationFilter

    def get_queryset(self) -> QuerySet[Membership]:
        if getattr(self, "swagger_fake_view", False):
            return Membership.objects.none()
        token = self.request.auth
        if isinstance(token, ApiToken) and token.team_id is not None:
            return Membership.objects.none()  # a token restricted to one team sees nothing of other teams
        return Membership.objects.filter(
            user_id=cast(int, self.request.user.pk), accepted_at__isnull=True
        ).select_related("team")

    def _refuse_team_token(self) -> None:
        token = self.request.auth
        if isinstance(token, ApiToken) and token.team_id is not None:
            raise PermissionDenied("A token restricted to one team cannot answer invitations.")

    @extend_schema(request=None, responses={200: MemberSerializer})
    @action(detail=True, methods=["post"])
    def accept(self, request: Request, pk: str | None = None) -> Response:
        from scenarios import services

        self._refuse_team_token()
        try:
            membership = services.membership_accept(membership=self.get_object())
        except Membership.DoesNotExist:
            raise NotFound("No such invitation: it was withdrawn or declined.") from None
        return Response(MemberSerializer(membership, context=self.get_serializer_context()).data)

    def perform_destroy(self, instance: Membership) -> None:
        self._refuse_team_token()
        instance.delete()


def revoke_team_tokens(membership: Membership, *, by: Model | None) -> None:
    """Revoke the member's tokens restricted to the membership's team, one by one (a few rows), so that each
    revocation is in the audit log with who revoked it."""
    for token in ApiToken.objects.active().filter(user_id=membership.user_id, team_id=membership.team_id):
        token.revoke(by=by)
