"""Teams and their members."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework import serializers

from api.permissions import team_roles
from scenarios.events import THRESHOLD_FIGURES, validate_thresholds
from scenarios.models import ROLE_CHOICES, Membership, Team


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(help_text="Your role on this team.")
    slug = serializers.SlugField(
        max_length=100, help_text="Fixed once the team is made: it names the team's price-feed directory."
    )
    alert_thresholds = serializers.JSONField(
        required=False,
        help_text='{figure: fraction}, e.g. {"total_usd": 0.02, "step_s": 0.01}: a stored result whose '
        "figure moved by at least that fraction against the previous result of the same kind raises a "
        "figure.moved event. Figures: " + ", ".join(THRESHOLD_FIGURES) + ".",
    )

    class Meta:
        model = Team
        fields: tuple[str, ...] = ("id", "name", "slug", "role", "alert_thresholds", "created_at")
        read_only_fields: tuple[str, ...] = ("id", "role", "created_at")

    def validate_alert_thresholds(self, value: Any) -> dict[str, float]:
        try:
            return validate_thresholds(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def get_role(self, team: Team) -> str | None:
        return team_roles(self.context["request"]).get(team.pk)

    def validate_slug(self, slug: str) -> str:
        if self.instance is not None and slug != self.instance.slug:
            # The slug names the team's price-feed directory (<dir>/<slug>/ under PRICE_FEED_DIRS): changed,
            # it would free that directory for a new team of the old name.
            raise serializers.ValidationError("a team's slug is fixed once the team is made")
        existing = Team.objects.filter(slug=slug)
        if self.instance is not None:
            existing = existing.exclude(pk=self.instance.pk)
        if existing.exists():
            raise serializers.ValidationError("a team with this slug already exists")
        return slug


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    user = serializers.CharField(
        write_only=True, help_text="Username of the person to add (on create only).", max_length=150
    )
    role = serializers.ChoiceField(choices=ROLE_CHOICES)

    accepted_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When the member accepted; null while invited (an invitation gives no access until accepted).",
    )

    class Meta:
        model = Membership
        fields: tuple[str, ...] = ("id", "user", "username", "role", "created_at", "accepted_at")
        read_only_fields: tuple[str, ...] = ("id", "username", "created_at", "accepted_at")

    def validate_user(self, username: str) -> Any:
        if self.instance is not None:
            raise serializers.ValidationError("a membership's user cannot be changed; remove and add instead")
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise serializers.ValidationError("no active user with this username")
        team = self.context["team"]
        if Membership.objects.filter(team=team, user=user).exists():
            raise serializers.ValidationError("already a member of this team, or invited to it")
        return user


class MemberUpdateSerializer(MemberSerializer):
    class Meta(MemberSerializer.Meta):
        read_only_fields: tuple[str, ...] = ("id", "user", "username", "created_at", "accepted_at")


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation to a team, as its invitee sees it."""

    team = serializers.IntegerField(source="team_id", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    team_slug = serializers.CharField(source="team.slug", read_only=True)

    class Meta:
        model = Membership
        fields: tuple[str, ...] = ("id", "team", "team_name", "team_slug", "role", "created_at")
        read_only_fields = fields
