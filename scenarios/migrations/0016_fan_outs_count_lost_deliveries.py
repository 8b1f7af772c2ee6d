"""A price fan-out counts the deliveries whose worker was lost and is given up, with the reason, after
``scenarios.runs.claims.FAN_OUT_MAX_LOST`` of them."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scenarios', '0015_failed_automatic_runs_are_retried'),
    ]

    operations = [
        migrations.AddField(
            model_name='pricefanout',
            name='error',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.AddField(
            model_name='pricefanout',
            name='lost_deliveries',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
