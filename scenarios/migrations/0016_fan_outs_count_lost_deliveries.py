"""A price fan-out records which task delivery holds it and counts the deliveries whose worker was lost and the
attempts that failed with a retried error; it is given up, with the reason, after
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
        migrations.AddField(
            model_name='pricefanout',
            name='holder',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='pricefanout',
            name='failed_attempts',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
