from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        # Registers the OpenAPI extension for the token authentication class.
        from api import schema  # noqa: F401
        from api.audit import register_models

        register_models()

        from api.membership_tokens import connect

        connect()
