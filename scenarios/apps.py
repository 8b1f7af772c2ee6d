from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    verbose_name = "Scenarios, plans and results"

    def ready(self) -> None:
        """Register the executor of searches (``scenarios.runs.execute.EXECUTORS``), so the runs layer runs them
        without importing the jobs that define them (a sweep is started by its own task)."""
        from scenarios.jobs import search
        from scenarios.models import RUN_KIND_SEARCH
        from scenarios.runs import execute

        execute.register_executor(RUN_KIND_SEARCH, search.search_executor)
