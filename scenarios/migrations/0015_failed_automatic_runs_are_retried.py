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
        # Going back, the old constraint holds failed runs too: of the automatic runs that share a (plan, price
        # book, inputs) key, the failed ones are deleted but the newest, or all of them when a run that did not
        # fail holds the key (a failed solve stored nothing; sweep chunks, which no automatic run has, go with it).
        migrations.RunSQL(
            migrations.RunSQL.noop,
            reverse_sql="""
            DELETE FROM scenarios_run AS r USING scenarios_run AS o
            WHERE r.trigger IN ('price_change', 'schedule') AND o.trigger IN ('price_change', 'schedule')
              AND r.status = 'failed' AND r.id <> o.id AND r.plan_id = o.plan_id
              AND r.price_book_id IS NOT DISTINCT FROM o.price_book_id AND r.input_hash = o.input_hash
              AND (o.status <> 'failed' OR o.id > r.id);
            -- the deletes' deferred foreign-key checks run now: an index is not built over pending ones
            SET CONSTRAINTS ALL IMMEDIATE;
            """,
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('trigger__in', ['price_change', 'schedule']), models.Q(('status', 'failed'), _negated=True)), fields=('plan', 'price_book', 'input_hash'), name='run_one_automatic_per_plan_price_book', nulls_distinct=False),
        ),
    ]
