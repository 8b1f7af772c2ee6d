"""Webhook endpoints, deliveries (with their events) and the attempt log."""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('scenarios', '0008_events'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Delivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('webhook_id', models.CharField(max_length=64)),
                ('status', models.CharField(choices=[('pending', 'waiting for its next attempt (or being sent)'), ('delivered', 'the endpoint answered 2xx'), ('failed', 'failed for good: its retry window closed')], default='pending', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('expires_at', models.DateTimeField()),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('claim_token', models.UUIDField(blank=True, null=True)),
                ('last_error', models.CharField(blank=True, default='', max_length=1000)),
                ('redeliver_requested', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.CreateModel(
            name='DeliveryAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('started_at', models.DateTimeField()),
                ('status_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error', models.CharField(blank=True, default='', max_length=1000)),
                ('latency_ms', models.FloatField(blank=True, null=True)),
                ('response_excerpt', models.CharField(blank=True, default='', max_length=4096)),
                ('manual', models.BooleanField(default=False)),
                ('succeeded', models.BooleanField(default=False)),
                ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempt_log', to='integrations.delivery')),
            ],
            options={
                'ordering': ['delivery', 'number'],
            },
        ),
        migrations.CreateModel(
            name='DeliveryEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='links', to='integrations.delivery')),
                ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='scenarios.event')),
            ],
            options={
                'ordering': ['delivery', 'position'],
            },
        ),
        migrations.AddField(
            model_name='delivery',
            name='events',
            field=models.ManyToManyField(related_name='+', through='integrations.DeliveryEvent', to='scenarios.event'),
        ),
        migrations.CreateModel(
            name='Endpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('url', models.URLField(max_length=2000)),
                ('description', models.CharField(blank=True, default='', max_length=500)),
                ('event_kinds', models.JSONField(blank=True, default=list)),
                ('thresholds', models.JSONField(blank=True, default=dict)),
                ('plan_id', models.BigIntegerField(blank=True, null=True)),
                ('batch_size', models.PositiveSmallIntegerField(default=1)),
                ('enabled', models.BooleanField(default=True)),
                ('disabled_at', models.DateTimeField(blank=True, null=True)),
                ('disabled_reason', models.CharField(blank=True, default='', max_length=1000)),
                ('consecutive_failures', models.PositiveIntegerField(default=0)),
                ('failure_limit', models.PositiveIntegerField(default=10)),
                ('secret', models.CharField(max_length=200)),
                ('previous_secret', models.CharField(blank=True, default='', max_length=200)),
                ('previous_secret_expires_at', models.DateTimeField(blank=True, null=True)),
                ('secret_rotated_at', models.DateTimeField(blank=True, null=True)),
                ('last_event_id', models.BigIntegerField(default=0)),
                ('horizon_xid', models.BigIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhook_endpoints', to='scenarios.team')),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.AddField(
            model_name='deliveryevent',
            name='endpoint',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='integrations.endpoint'),
        ),
        migrations.AddField(
            model_name='delivery',
            name='endpoint',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='integrations.endpoint'),
        ),
        migrations.AddIndex(
            model_name='endpoint',
            index=models.Index(fields=['team', '-id'], name='endpoint_team_recent'),
        ),
        migrations.AddConstraint(
            model_name='endpoint',
            constraint=models.CheckConstraint(condition=models.Q(('batch_size__gte', 1), ('batch_size__lte', 100)), name='endpoint_batch_size'),
        ),
        migrations.AddConstraint(
            model_name='endpoint',
            constraint=models.CheckConstraint(condition=models.Q(('failure_limit__gte', 1), ('failure_limit__lte', 1000)), name='endpoint_failure_limit'),
        ),
        migrations.AddConstraint(
            model_name='deliveryevent',
            constraint=models.UniqueConstraint(fields=('endpoint', 'event'), name='delivery_event_once_per_endpoint'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='delivery_pending_due'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(fields=['endpoint', '-id'], name='delivery_endpoint_recent'),
        ),
        migrations.AddConstraint(
            model_name='delivery',
            constraint=models.UniqueConstraint(fields=('endpoint', 'webhook_id'), name='delivery_endpoint_webhook_id'),
        ),
    ]
