"""History rows stay while what they belong to lives: a revision while its scenario exists, an event while its
team exists. Checked when the transaction commits (a deferred constraint trigger), so deleting the scenario
with its whole history (``scenario_delete``, which Django does children first) or a team with its events still
works, while a DELETE of one revision or one event, by any code or psql session, is refused. TRUNCATE is not
covered (test database flushes), as for the other immutable tables (0002)."""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION scenarios_history_stays() RETURNS trigger AS $$
DECLARE
    owner_id bigint := (to_jsonb(OLD) ->> TG_ARGV[1])::bigint;
    still_there boolean;
BEGIN
    IF owner_id IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE id = $1)', TG_ARGV[0]) INTO still_there USING owner_id;
    IF still_there THEN
        RAISE EXCEPTION 'DELETE on %.% is not allowed while its % (id %) exists: delete that instead',
            TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_ARGV[0], owner_id
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""

# table -> (the owner's table, the column naming it)
TABLES = {
    "scenarios_clusterrevision": ("scenarios_clusterscenario", "scenario_id"),
    "scenarios_modelrevision": ("scenarios_modelscenario", "scenario_id"),
    "scenarios_siterevision": ("scenarios_sitescenario", "scenario_id"),
    "scenarios_event": ("scenarios_team", "team_id"),
}


def _create() -> str:
    statements = [FUNCTION]
    for table, (owner, column) in TABLES.items():
        statements.append(
            f"CREATE CONSTRAINT TRIGGER {table}_history_stays AFTER DELETE ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION scenarios_history_stays('{owner}', '{column}');"
        )
    return "\n".join(statements)


def _drop() -> str:
    statements = [f"DROP TRIGGER IF EXISTS {table}_history_stays ON {table};" for table in TABLES]
    statements.append("DROP FUNCTION IF EXISTS scenarios_history_stays();")
    return "\n".join(statements)


class Migration(migrations.Migration):
    dependencies = [("scenarios", "0016_fan_outs_count_lost_deliveries")]

    operations = [migrations.RunSQL(sql=_create(), reverse_sql=_drop())]
