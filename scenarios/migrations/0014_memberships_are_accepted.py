"""Memberships record when they were accepted: a member an admin adds through the API is invited (null) and
holds no access until they accept. Every existing membership was in force, so it is accepted when it was made."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scenarios", "0013_price_keys_hold_a_site_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="membership",
            name="accepted_at",
            field=models.DateTimeField(blank=True, default=django.utils.timezone.now, null=True),
        ),
        migrations.RunSQL(
            "UPDATE scenarios_membership SET accepted_at = created_at",
            # Going back, an invitation nobody answered is withdrawn: without the column it would be a
            # membership in force.
            reverse_sql="DELETE FROM scenarios_membership WHERE accepted_at IS NULL",
        ),
    ]
