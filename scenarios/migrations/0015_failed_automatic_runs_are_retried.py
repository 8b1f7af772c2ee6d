"""A failed automatic run no longer holds its (plan, price book, inputs) key: the nightly re-check queues the
inputs again, up to ``scenarios.fanout.AUTOMATIC_FAILURES_PER_INPUT`` failures."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scenarios', '0014_memberships_are_accepted'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='run',
            name='run_one_automatic_per_plan_price_book',
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('trigger__in', ['price_change', 'schedule']), models.Q(('status', 'failed'), _negated=True)), fields=('plan', 'price_book', 'input_hash'), name='run_one_automatic_per_plan_price_book', nulls_distinct=False),
        ),
    ]
