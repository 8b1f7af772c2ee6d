"""Two database roles: one owns the schema, the other is what the service connects as.

The owner (``MIGRATE_DATABASE_URL``) creates and alters every table; the application role
(``DATABASE_URL``) is not a superuser and owns nothing, so it can read and write rows but cannot change a
table, disable its trigger, truncate it or set ``session_replication_role`` (superuser-only): the triggers
that keep results immutable hold against anything the service does, whatever bug or injection it has.

After ``migrate`` (run as the owner) the application role is granted, in the public schema:

- SELECT, INSERT, UPDATE, DELETE on every table, and USAGE/SELECT/UPDATE on every sequence, now and, through
  default privileges, on tables the owner creates later;
- on the tables of results (``IMMUTABLE_TABLES``) only SELECT and INSERT: a result is written once.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

IMMUTABLE_TABLES = ("scenarios_result",)


def grant_app_role(cursor: Any, role: str) -> None:
    """Give ``role`` the rights the service needs on the current database's public schema (idempotent).

    ``cursor`` is a DB-API cursor connected as the owner of the tables."""
    r = sql.Identifier(role)
    statements = [
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(r),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(r),
        sql.SQL("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {}").format(r),
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}"
        ).format(r),
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {}"
        ).format(r),
    ]
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    existing = {row[0] for row in cursor.fetchall()}
    for table in IMMUTABLE_TABLES:
        if table in existing:
            statements.append(
                sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE, TRIGGER, REFERENCES ON {} FROM {}").format(
                    sql.Identifier(table), r
                )
            )
    for statement in statements:
        cursor.execute(statement)


def grant_after_migrate(using: str = "default", **_: Any) -> None:
    """``post_migrate`` receiver: grant ``settings.DATABASE_APP_ROLE`` when one is configured."""
    from django.conf import settings
    from django.db import connections

    role = settings.DATABASE_APP_ROLE
    connection = connections[using]
    if not role or connection.vendor != "postgresql" or role == connection.settings_dict.get("USER"):
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone() is None:
            return
        grant_app_role(cursor.cursor, role)
