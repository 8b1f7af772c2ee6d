from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Planner operations"

    def ready(self) -> None:
        # The Celery app must exist before any task is sent, so that @shared_task binds to it.
        import planner.celery  # noqa: F401
        from planner.db_roles import grant_after_migrate

        # Sent once per app after all migrations ran; the grant is idempotent, one app is enough.
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="planner.grant_app_role")
