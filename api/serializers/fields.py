"""Fields shared by the serializers: finite numbers, JSON objects, team-scoped foreign keys."""

from __future__ import annotations

import math
from typing import Any, ClassVar, cast

from django.db.models import QuerySet
from rest_framework import serializers

from api.limits import is_id_text
from api.permissions import team_roles


class FiniteFloatField(serializers.FloatField):
    """A float that is a real number: NaN, ±Infinity and values beyond a double's range are refused."""

    default_error_messages: ClassVar[dict[str, Any]] = {
        "non_finite": "must be a finite number (not NaN or Infinity)"
    }

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool):
            self.fail("invalid")
        try:
            value = float(data)
        except (TypeError, ValueError, OverflowError):
            self.fail("invalid")
        if not math.isfinite(value):
            self.fail("non_finite")
        return super().to_internal_value(value)


class JSONObjectField(serializers.JSONField):
    """A JSON object (dict); arrays, strings and numbers are refused with the path of the field."""

    default_error_messages: ClassVar[dict[str, Any]] = {"not_object": "expected a JSON object"}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_object")
        return super().to_internal_value(data)


class TeamScopedPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """A foreign key restricted to the caller's teams: another team's id reads as 'does not exist'."""

    team_field = "team_id"

    def get_queryset(self) -> QuerySet[Any]:
        queryset = cast("QuerySet[Any]", super().get_queryset())
        request = self.context.get("request")
        if request is None:
            return queryset.none()
        return queryset.filter(**{f"{self.team_field}__in": list(team_roles(request))})

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("incorrect_type", data_type=type(data).__name__)
        if isinstance(data, str) and not is_id_text(data):
            self.fail("incorrect_type", data_type="str")
        if int(data) > 2**63 - 1:
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)


class TeamField(TeamScopedPrimaryKeyField):
    """The owning team of a new object: one of the caller's teams (defaults to it when there is only one)."""

    team_field = "id"
