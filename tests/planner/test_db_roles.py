"""The application's database role cannot bypass the immutability of results.

The role under test is the one migrations granted (``DATABASE_APP_ROLE``: ``planner_app`` with the embedded
servers). When the tests connect as a superuser (CI's PostgreSQL) there is only one role, so a throw-away
role gets the very grants ``migrate`` gives (``planner.db_roles.grant_app_role``) and is dropped after."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from planner import db_roles, embedded

pytestmark = pytest.mark.django_db(transaction=True)


def _dsn(user: str, password: str) -> str:
    s = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        host=s.get("HOST") or "127.0.0.1",
        port=s.get("PORT") or 5432,
        dbname=s["NAME"],
        user=user,
        password=password,
        connect_timeout=5,
    )


@pytest.fixture
def app_dsn() -> Iterator[str]:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user")
        is_super, can_create_role = cursor.fetchone()
    servers = embedded.default_servers()
    role = settings.DATABASE_APP_ROLE
    if role == embedded.APP_ROLE and int(connection.settings_dict.get("PORT") or 0) == servers.pg_port:
        yield _dsn(role, servers.secret(role))
        return
    if not (is_super or can_create_role):
        pytest.skip(
            "needs a second database role: DATABASE_APP_ROLE with the embedded servers, or a superuser"
        )
    role = f"planner_app_test_{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(24)
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER PASSWORD %s', [password])
        db_roles.grant_app_role(cursor.cursor, role)
    try:
        yield _dsn(role, password)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP OWNED BY "{role}"')
            cursor.execute(f'DROP ROLE "{role}"')


REFUSED = [
    "UPDATE scenarios_result SET id = id",
    "DELETE FROM scenarios_result",
    "TRUNCATE scenarios_result",
    "ALTER TABLE scenarios_result DISABLE TRIGGER scenarios_result_immutable",
    "ALTER TABLE scenarios_result DISABLE TRIGGER ALL",
    "DROP TRIGGER scenarios_result_immutable ON scenarios_result",
    "SET session_replication_role = replica",
    "CREATE OR REPLACE FUNCTION scenarios_refuse_change() RETURNS trigger AS $$ BEGIN RETURN NEW; END $$"
    " LANGUAGE plpgsql",
]


@pytest.mark.parametrize("statement", REFUSED)
def test_app_role_cannot_bypass_result_immutability(app_dsn: str, statement: str) -> None:
    with psycopg.connect(app_dsn) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


def test_app_role_reads_and_writes_rows_but_owns_nothing(app_dsn: str) -> None:
    with psycopg.connect(app_dsn) as conn:
        me = conn.execute(
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert me is not None
        user, is_super = me
        assert is_super is False
        owned = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
        assert owned == (0,)
        assert conn.execute("SELECT count(*) FROM scenarios_result").fetchone() is not None
        # Ordinary rows stay writable (the service's work), including the identity behind new ids.
        row = conn.execute(
            "INSERT INTO planner_taskprobe (token, worker, created_at) VALUES ('grant-check', 'test', now())"
            " RETURNING id"
        ).fetchone()
        assert row is not None
        conn.execute("UPDATE planner_taskprobe SET worker = 'test2' WHERE id = %s", row)
        conn.execute("DELETE FROM planner_taskprobe WHERE id = %s", row)
        privileges = conn.execute(
            "SELECT has_table_privilege(current_user, 'scenarios_plan', 'INSERT, UPDATE, DELETE'),"
            " has_table_privilege(current_user, 'scenarios_result', 'INSERT'),"
            " has_table_privilege(current_user, 'scenarios_result', 'SELECT'),"
            " has_table_privilege(current_user, 'scenarios_result', 'UPDATE'),"
            " has_table_privilege(current_user, 'scenarios_result', 'DELETE'),"
            " has_table_privilege(current_user, 'scenarios_result', 'TRUNCATE')"
        ).fetchone()
        assert privileges == (True, True, True, False, False, False)
        assert user != connection.settings_dict["USER"]
