"""API tokens: the secret appears once, in the response that creates the token."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import serializers

from api.models import ApiToken
from api.serializers.fields import TeamField
from scenarios.models import Team


class ApiTokenSerializer(serializers.ModelSerializer):
    team = TeamField(
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text="Restrict the token to this team (it then sees and changes nothing else).",
    )
    username = serializers.CharField(source="user.username", read_only=True)
    name = serializers.CharField(max_length=100)

    class Meta:
        model = ApiToken
        fields: tuple[str, ...] = (
            "id",
            "name",
            "team",
            "username",
            "prefix",
            "created_at",
            "scope",
            "expires_at",
            "last_used_at",
            "revoked_at",
        )
        extra_kwargs: dict[str, dict[str, Any]] = {  # noqa: RUF012
            "expires_at": {
                "help_text": "When the token stops working; omitted or null: API_TOKEN_DEFAULT_DAYS from now "
                "(90 days unless the operator changed it)."
            },
        }
        read_only_fields: tuple[str, ...] = (
            "id",
            "username",
            "prefix",
            "created_at",
            "last_used_at",
            "revoked_at",
        )

    def validate_expires_at(self, value: Any) -> Any:
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("must be in the future")
        return value


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The secret. Shown only in this response: store it now."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields: tuple[str, ...] = (*ApiTokenSerializer.Meta.fields, "token")
