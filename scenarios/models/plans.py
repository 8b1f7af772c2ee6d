"""Teams and memberships, scenarios with immutable revisions, and plans (a cluster, a model and a site)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scenarios.errors import ImmutableRowError

ROLE_VIEWER = "viewer"
ROLE_EDITOR = "editor"
ROLE_ADMIN = "admin"
ROLE_CHOICES = [(ROLE_VIEWER, "viewer"), (ROLE_EDITOR, "editor"), (ROLE_ADMIN, "admin")]
# Higher rank includes the permissions of lower ranks.
ROLE_RANK = {ROLE_VIEWER: 0, ROLE_EDITOR: 1, ROLE_ADMIN: 2}


class Team(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # {headline figure: fraction}: a stored result whose figure moved by at least that fraction of the
    # previous result of the same kind raises a ``figure.moved`` event (scenarios.events.THRESHOLD_FIGURES).
    alert_thresholds = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]  # noqa: RUF012

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    """A user's role on a team. A member added by a team's admin through the API is invited
    (``accepted_at`` null) and holds no access until they accept: anyone may make a team, so a team must not
    reach into someone's lists, defaults and tokens unasked. The team's creator, the operator's commands and
    the admin site make accepted memberships."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=ROLE_CHOICES, default=ROLE_VIEWER)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    accepted_at = models.DateTimeField(default=timezone.now, null=True, blank=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user"),
            models.CheckConstraint(
                condition=Q(role__in=[ROLE_VIEWER, ROLE_EDITOR, ROLE_ADMIN]), name="membership_role_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.user_id}@{self.team_id}:{self.role}"

    def allows(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


# --- Scenarios and their revisions --------------------------------------------------------------------


class ImmutableModel(models.Model):
    """A row that is written once. ``save()`` on an existing row and ``delete()`` raise."""

    immutable_delete: ClassVar[bool] = True

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ImmutableRowError(f"{type(self).__name__} {self.pk} is immutable")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self.immutable_delete:
            raise ImmutableRowError(f"{type(self).__name__} {self.pk} cannot be deleted")
        return super().delete(*args, **kwargs)


class RevisionBase(ImmutableModel):
    """One immutable version of a scenario part's document; ``number`` counts 1..n per scenario."""

    # A scenario nobody depends on may be deleted with its history (services.scenario_delete).
    immutable_delete = False

    number = models.PositiveIntegerField()
    document = models.JSONField()
    # PROTECT, not SET_NULL: the row is immutable (the database refuses the UPDATE that SET_NULL is), so its
    # author is deactivated rather than deleted, and the row keeps saying who wrote it.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        abstract = True
        ordering = ["scenario_id", "-number"]  # noqa: RUF012

    def __str__(self) -> str:
        return f"{self.scenario_id} r{self.number}"  # type: ignore[attr-defined]


class ScenarioBase(models.Model):
    """A named, team-owned part of a scenario document; the current content is ``latest_revision``."""

    kind: ClassVar[str] = ""
    part: ClassVar[str] = ""  # the key of the scenario document this scenario fills

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["name"]  # noqa: RUF012

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def document(self) -> dict[str, Any]:
        rev = self.latest_revision  # type: ignore[attr-defined]
        return dict(rev.document) if rev is not None else {}


class ClusterScenario(ScenarioBase):
    kind = "cluster"
    part = "cluster"
    latest_revision = models.ForeignKey(
        "ClusterRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=Q(archived_at__isnull=True),
                name="cluster_unique_live_name",
            ),
        )


class ClusterRevision(RevisionBase):
    scenario = models.ForeignKey(ClusterScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="cluster_revision_unique_number"),
        )


class ModelScenario(ScenarioBase):
    kind = "model"
    part = "model"
    latest_revision = models.ForeignKey(
        "ModelRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="model_unique_live_name"
            ),
        )


class ModelRevision(RevisionBase):
    scenario = models.ForeignKey(ModelScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="model_revision_unique_number"),
        )


class SiteScenario(ScenarioBase):
    kind = "site"
    part = "site"
    latest_revision = models.ForeignKey(
        "SiteRevision", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(ScenarioBase.Meta):
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="site_unique_live_name"
            ),
        )


class SiteRevision(RevisionBase):
    scenario = models.ForeignKey(SiteScenario, on_delete=models.CASCADE, related_name="revisions")

    class Meta(RevisionBase.Meta):
        constraints = (
            models.UniqueConstraint(fields=["scenario", "number"], name="site_revision_unique_number"),
        )


SCENARIO_MODELS: dict[str, type[ScenarioBase]] = {
    "cluster": ClusterScenario,
    "model": ModelScenario,
    "site": SiteScenario,
}


# --- Plans --------------------------------------------------------------------------------------------


class Plan(models.Model):
    """Cluster + model + site (each pinned to a revision, or following the latest) + training choices."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="plans")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    cluster = models.ForeignKey(ClusterScenario, on_delete=models.PROTECT, related_name="plans")
    model = models.ForeignKey(ModelScenario, on_delete=models.PROTECT, related_name="plans")
    site = models.ForeignKey(SiteScenario, on_delete=models.PROTECT, related_name="plans")
    # Null: follow the scenario's latest revision.
    cluster_revision = models.ForeignKey(
        ClusterRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    model_revision = models.ForeignKey(
        ModelRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    site_revision = models.ForeignKey(
        SiteRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    training = models.JSONField(default=dict, blank=True)
    economics = models.JSONField(default=dict, blank=True)
    auto_rerun = models.BooleanField(default=False)
    # Selects "<provider>:<accelerator>" cloud prices in the price book (empty: the accelerator's price).
    cloud_provider = models.CharField(max_length=64, blank=True, default="")
    # The newest stored result, kept here so lists and the price fan-out need no per-plan subquery.
    latest_result = models.ForeignKey(
        "Result", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]  # noqa: RUF012
        constraints = (
            models.UniqueConstraint(
                fields=["team", "name"], condition=Q(archived_at__isnull=True), name="plan_unique_live_name"
            ),
        )
        indexes = (
            models.Index(
                fields=["auto_rerun"], condition=Q(archived_at__isnull=True), name="plan_auto_rerun"
            ),
        )

    def __str__(self) -> str:
        return self.name
