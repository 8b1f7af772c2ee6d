from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "web"
    verbose_name = "Planner dashboard"
