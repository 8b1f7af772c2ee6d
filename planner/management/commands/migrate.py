"""``migrate`` as the role that owns the tables (``MIGRATE_DATABASE_URL``) when the service connects as
another one: the same command, run on the default connection with the owner's credentials, after which
``planner.db_roles`` grants the application role its rights (post_migrate)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.commands import migrate
from django.db import connections

CREDENTIALS = ("USER", "PASSWORD", "HOST", "PORT")


class Command(migrate.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        owner = settings.MIGRATE_DATABASE
        connection = connections[options["database"]]
        if owner is None or options["database"] != "default":
            super().handle(*args, **options)
            return
        # Only the credentials change: the database is DATABASE_URL's (a test run's test_ database too).
        saved = {key: connection.settings_dict.get(key) for key in CREDENTIALS}
        connection.close()
        connection.settings_dict.update({key: owner.get(key) for key in CREDENTIALS})
        try:
            super().handle(*args, **options)
        finally:
            connection.close()
            connection.settings_dict.update(saved)
