#!/bin/sh
# The two database roles of a Planner deployment, created once by the postgres image's entrypoint when the
# data volume is new (mounted in /docker-entrypoint-initdb.d):
#   planner_owner  owns the schema and every table; migrations run as it (MIGRATE_DATABASE_URL)
#   planner_app    what web, worker and beat connect as (DATABASE_URL): reads and writes rows, owns nothing,
#                  is no superuser, so it cannot ALTER, TRUNCATE or DROP a table, disable a trigger (results
#                  are immutable by one) or set session_replication_role.
# Neither can create databases or roles. Passwords come from .env (PLANNER_OWNER_PASSWORD,
# PLANNER_APP_PASSWORD); psql quotes them (:'var'), so any character is safe here.
set -eu
: "${PLANNER_OWNER_PASSWORD:?set PLANNER_OWNER_PASSWORD}"
: "${PLANNER_APP_PASSWORD:?set PLANNER_APP_PASSWORD}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-planner}" \
  -v db="${POSTGRES_DB:-planner}" -v owner_password="$PLANNER_OWNER_PASSWORD" \
  -v app_password="$PLANNER_APP_PASSWORD" <<'SQL'
CREATE ROLE planner_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_password';
CREATE ROLE planner_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'app_password';
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO planner_owner, planner_app;
ALTER SCHEMA public OWNER TO planner_owner;
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO planner_app;
-- Whatever planner_owner creates later (every migration) is usable by planner_app, row by row only.
ALTER DEFAULT PRIVILEGES FOR ROLE planner_owner IN SCHEMA public
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO planner_app;
ALTER DEFAULT PRIVILEGES FOR ROLE planner_owner IN SCHEMA public
  GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO planner_app;
SQL
