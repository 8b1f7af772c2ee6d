from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    verbose_name = "Scenarios, plans and results"

    def ready(self) -> None:
        """Register the executor of searches and the starter of sweeps (``scenarios.runs.execute``), so the
        runs layer runs them without importing the jobs that define them."""
        from scenarios.jobs import search, sweep
        from scenarios.models import RUN_KIND_SEARCH, RUN_KIND_SWEEP
        from scenarios.runs import execute

        execute.register_executor(RUN_KIND_SEARCH, search.search_executor)
        execute.register_starter(RUN_KIND_SWEEP, sweep.sweep_begin)
