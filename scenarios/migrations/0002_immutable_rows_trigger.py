"""Database triggers that make written-once rows immutable, whatever code (or psql session) tries.

Results, published price books and their entries refuse UPDATE and DELETE; revisions refuse UPDATE (a
scenario nobody depends on may still be deleted with its history). TRUNCATE is not covered, so test
database flushes keep working.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION scenarios_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% on %.% is not allowed: rows of this table are immutable', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
"""

TABLES = {
    "scenarios_result": "UPDATE OR DELETE",
    "scenarios_pricebook": "UPDATE OR DELETE",
    "scenarios_priceentry": "UPDATE OR DELETE",
    "scenarios_clusterrevision": "UPDATE",
    "scenarios_modelrevision": "UPDATE",
    "scenarios_siterevision": "UPDATE",
}


def _create() -> str:
    statements = [FUNCTION]
    for table, events in TABLES.items():
        statements.append(
            f"CREATE TRIGGER {table}_immutable BEFORE {events} ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION scenarios_refuse_change();"
        )
    return "\n".join(statements)


def _drop() -> str:
    statements = [f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};" for table in TABLES]
    statements.append("DROP FUNCTION IF EXISTS scenarios_refuse_change();")
    return "\n".join(statements)


class Migration(migrations.Migration):
    dependencies = [("scenarios", "0001_initial")]

    operations = [migrations.RunSQL(sql=_create(), reverse_sql=_drop())]
