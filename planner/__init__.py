"""Planner: the Django project (settings, URLs, the Celery app) and the service's operational pieces."""

from planner.celery import app as celery_app

__all__ = ("celery_app",)
