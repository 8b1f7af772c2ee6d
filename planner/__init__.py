"""Planner: the Django project (settings, URLs, the Celery app) and the service's operational pieces.

The Celery app (``planner.celery``) is loaded by ``PlannerConfig.ready`` in every Django process and found by
``celery -A planner`` in workers; importing this package alone loads neither Django nor Celery, so the test
session's plugin (``planner.pytest_embedded``) costs a solver-only run nothing.
"""
