"""Beat schedules are data (django-celery-beat rows, editable in the admin): the sweeper every 30 s and the
nightly re-check of plans marked for automatic re-runs at 02:30 UTC."""

from typing import Any

from django.db import migrations

SWEEPER = "scenarios: sweep lost and expired runs"
NIGHTLY = "scenarios: nightly re-check of auto-rerun plans"


def create_schedules(apps: Any, schema_editor: Any) -> None:
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    crontab_model = apps.get_model("django_celery_beat", "CrontabSchedule")
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    every_30s, _ = interval_model.objects.get_or_create(every=30, period="seconds")
    nightly, _ = crontab_model.objects.get_or_create(
        minute="30", hour="2", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    task_model.objects.update_or_create(
        name=SWEEPER,
        defaults={
            "task": "scenarios.sweep_runs",
            "interval": every_30s,
            "crontab": None,
            "enabled": True,
            "description": "Re-enqueue queued runs the broker may have lost and running runs whose lease expired.",
        },
    )
    task_model.objects.update_or_create(
        name=NIGHTLY,
        defaults={
            "task": "scenarios.nightly_recheck",
            "interval": None,
            "crontab": nightly,
            "enabled": True,
            "description": "Re-solve auto-rerun plans whose resolved inputs changed; unchanged inputs add nothing.",
        },
    )


def delete_schedules(apps: Any, schema_editor: Any) -> None:
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    task_model.objects.filter(name__in=[SWEEPER, NIGHTLY]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("scenarios", "0002_immutable_rows_trigger"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedules, delete_schedules)]
