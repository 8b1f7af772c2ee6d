from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "scenarios"
    verbose_name = "Scenarios, plans and results"
