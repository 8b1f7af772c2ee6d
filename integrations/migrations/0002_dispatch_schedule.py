"""The dispatcher's beat schedule is data (a django-celery-beat row, editable in the admin): every 5 s it
picks up events whose nudge was lost and sends the deliveries whose next attempt is due."""

from typing import Any

from django.db import migrations

DISPATCHER = "integrations: deliver webhooks"


def create_schedule(apps: Any, schema_editor: Any) -> None:
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    every_5s, _ = interval_model.objects.get_or_create(every=5, period="seconds")
    task_model.objects.update_or_create(
        name=DISPATCHER,
        defaults={
            "task": "integrations.dispatch",
            "interval": every_5s,
            "crontab": None,
            "enabled": True,
            "description": "Fan new events out to webhook endpoints and send the deliveries that are due "
            "(retries with backoff for 24 h).",
        },
    )


def delete_schedule(apps: Any, schema_editor: Any) -> None:
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    task_model.objects.filter(name=DISPATCHER).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("integrations", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
