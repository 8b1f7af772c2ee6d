from __future__ import annotations

from django.db import models


class TaskProbe(models.Model):
    """A row written by the ``planner.probe`` task: proof that a real worker consumed a real broker message
    and reached the database (used by the quick-start smoke check and the foundation tests)."""

    token = models.CharField(max_length=64, unique=True)
    worker = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.token} by {self.worker}"
