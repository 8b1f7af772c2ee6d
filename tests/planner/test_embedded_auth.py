"""The embedded servers trust nobody: a local connection without the generated password is refused.

A private pair of servers (own folder, own ports) is started for this module and stopped after it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from planner import embedded
from tests.conftest import ROOT
from tests.processes import free_port


@pytest.fixture(scope="module")
def servers() -> Iterator[embedded.EmbeddedServers]:
    # Outside pytest's owner-only temporary root: PostgreSQL may run as another system user (as root).
    (ROOT / "var").mkdir(exist_ok=True)
    var_dir = Path(tempfile.mkdtemp(prefix="auth-", dir=ROOT / "var"))
    pair = embedded.EmbeddedServers(var_dir=var_dir, pg_port=free_port(), redis_port=free_port())
    try:
        embedded.ensure_running(pair)
        yield pair
    finally:
        embedded.stop(pair)
        shutil.rmtree(var_dir, ignore_errors=True)


def _dsn(pair: embedded.EmbeddedServers, user: str, password: str | None = None) -> str:
    secret = f":{password}" if password is not None else ""
    return f"postgresql://{user}{secret}@127.0.0.1:{pair.pg_port}/{embedded.DATABASE_NAME}"


@pytest.mark.parametrize("user", [embedded.SUPERUSER, embedded.OWNER_ROLE, embedded.APP_ROLE])
def test_postgres_refuses_a_connection_without_the_password(
    servers: embedded.EmbeddedServers, user: str
) -> None:
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(_dsn(servers, user), connect_timeout=5)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(_dsn(servers, user, "wrong"), connect_timeout=5)
    with psycopg.connect(_dsn(servers, user, servers.secret(user)), connect_timeout=5) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (user,)


def test_postgres_unix_socket_needs_the_password_too(servers: embedded.EmbeddedServers) -> None:
    socket_dir = servers.pg_data
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(
            host=str(socket_dir),
            port=servers.pg_port,
            user=embedded.SUPERUSER,
            dbname="postgres",
            connect_timeout=5,
        )


def test_redis_refuses_commands_without_the_password(servers: embedded.EmbeddedServers) -> None:
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=servers.redis_port).ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=servers.redis_port, password="wrong").ping()
    assert redis.Redis.from_url(servers.redis_url).ping()


def test_secrets_are_owner_only(servers: embedded.EmbeddedServers) -> None:
    assert stat.S_IMODE(servers.secrets_dir.stat().st_mode) == 0o700
    files = sorted(servers.secrets_dir.iterdir())
    assert [f.name for f in files] == sorted(f"{name}.password" for name in embedded.SECRETS)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert len(path.read_text().strip()) >= 40
    conf = servers.redis_dir / "redis.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    assert len({servers.secret(name) for name in embedded.SECRETS}) == len(embedded.SECRETS)


def test_roles_owner_owns_the_database_and_app_is_unprivileged(servers: embedded.EmbeddedServers) -> None:
    dsn = _dsn(servers, embedded.SUPERUSER, servers.secret(embedded.SUPERUSER))
    with psycopg.connect(dsn) as conn:
        roles = dict(
            (row[0], row[1:])
            for row in conn.execute(
                "SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles"
                " WHERE rolname IN (%s, %s)",
                (embedded.OWNER_ROLE, embedded.APP_ROLE),
            )
        )
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (embedded.DATABASE_NAME,)
        ).fetchone()
    assert roles == {
        embedded.OWNER_ROLE: (False, True, False, False),
        embedded.APP_ROLE: (False, False, False, False),
    }
    assert owner == (embedded.OWNER_ROLE,)


def test_a_trust_era_folder_is_given_passwords(servers: embedded.EmbeddedServers) -> None:
    """A folder made by an older checkout (trust auth, no password) is converted on the next start."""
    hba = servers.pg_data / "pg_hba.conf"
    original = hba.read_text()
    trusting = original.replace("scram-sha-256", "trust")
    hba.write_text(trusting)
    embedded.stop_postgres(servers)
    try:
        embedded.ensure_running(servers)
        assert "trust" not in [
            line.split()[-1] for line in hba.read_text().splitlines() if line and line[0] != "#"
        ]
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(_dsn(servers, embedded.SUPERUSER), connect_timeout=5)
    finally:
        embedded.ensure_running(servers)


def test_migrate_runs_as_owner_and_grants_the_app_role(
    servers: embedded.EmbeddedServers, tmp_path: Path
) -> None:
    """`manage.py migrate` with the URLs ./dev passes: tables owned by planner_owner, planner_app granted."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "MIGRATE_DATABASE_URL", "DATABASE_APP_ROLE"}
    }
    env.update(embedded.environment(servers), STATIC_ROOT=str(tmp_path / "static"))
    res = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    with psycopg.connect(_dsn(servers, embedded.APP_ROLE, servers.secret(embedded.APP_ROLE))) as conn:
        owners = {
            row[0] for row in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'public'")
        }
        assert owners == {embedded.OWNER_ROLE}
        assert conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0] > 10  # type: ignore[index]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE scenarios_result DISABLE TRIGGER ALL")


def test_the_test_session_takes_its_own_redis_database(servers: embedded.EmbeddedServers) -> None:
    """``./dev test`` beside ``./dev up`` on the same embedded Redis: the service keeps database 0, the test
    session (``embedded env --owner``) and every one of its pytest-xdist workers another."""
    from tests.conftest import redis_url_for_worker

    service = embedded.environment(servers)["REDIS_URL"]
    tests = embedded.environment(servers, owner=True)["REDIS_URL"]
    assert service.endswith("/0")
    assert tests.endswith(f"/{embedded.TEST_REDIS_DATABASE}") and embedded.TEST_REDIS_DATABASE != 0
    workers = {redis_url_for_worker(tests, f"gw{n}").rsplit("/", 1)[1] for n in range(40)}
    assert "0" not in workers and workers == {str(i) for i in range(1, 16)}
    assert redis.Redis.from_url(tests).ping()


def test_worker_databases_wrap_within_the_configured_one() -> None:
    from tests.conftest import redis_url_for_worker

    assert redis_url_for_worker("redis://h:1/0", "gw0") == "redis://h:1/0"
    assert redis_url_for_worker("redis://h:1/0", "gw17") == "redis://h:1/1"
    assert redis_url_for_worker("redis://h:1/14", "gw1") == "redis://h:1/15"
    assert redis_url_for_worker("redis://h:1/14", "gw2") == "redis://h:1/14"
    assert redis_url_for_worker("redis://:pw@h:1", "gw3") == "redis://:pw@h:1/3"
