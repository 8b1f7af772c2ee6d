"""Compress the large JSON columns of results with lz4 where the server supports it (PostgreSQL 14+ built
with lz4): storing 10,000 reports of ~25 KB after a price change spends less server time compressing.
Servers without lz4 keep the default (pglz); nothing else changes."""

from django.db import migrations

COLUMNS = ("report", "input_snapshot")

FORWARD = "\n".join(
    f"""
DO $$
BEGIN
    ALTER TABLE scenarios_result ALTER COLUMN {column} SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    NULL;
END $$;"""
    for column in COLUMNS
)
BACKWARD = "\n".join(
    f"""
DO $$
BEGIN
    ALTER TABLE scenarios_result ALTER COLUMN {column} SET COMPRESSION DEFAULT;
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END $$;"""
    for column in COLUMNS
)


class Migration(migrations.Migration):
    dependencies = [("scenarios", "0004_run_claim_and_price_provenance")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
