"""Load what a fresh installation needs: the global price book from the catalog's sourced defaults (the beat
schedules come from migrations). Idempotent: running it again changes nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Load the default global price book (idempotent; the beat schedules come from migrations)."

    def handle(self, *args: Any, **options: Any) -> None:
        from scenarios.defaults import load_defaults

        for line in load_defaults():
            self.stdout.write(line)
