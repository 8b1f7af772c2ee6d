"""Load what a fresh installation needs: the global price book from the catalog's sourced defaults and the
beat schedules. Idempotent: running it again changes nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Load the default global price book and beat schedules (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        from scenarios import defaults

        for line in defaults.load_defaults():
            self.stdout.write(line)
