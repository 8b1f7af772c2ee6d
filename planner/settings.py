"""Planner settings: one module, every deployment difference read from the environment (12-factor).

Importing this module reads the environment and nothing else: no server is started, no file written.
Every variable is listed in the README's configuration table (a test keeps it complete).

Variables (the main ones):
  DATABASE_URL   postgres://user:pass@host:port/name   (required; ./dev passes the embedded PostgreSQL's)
  MIGRATE_DATABASE_URL  the role that owns the tables, for `migrate` (default: DATABASE_URL's)
  REDIS_URL      redis://host:port/db                   (required; ./dev passes the embedded Redis's)
  SECRET_KEY     required when DEBUG is off
  DEBUG          "1"/"true" to enable; default on for a development checkout, off when PLANNER_ENV=production
  ALLOWED_HOSTS  comma-separated host names
  PLANNER_ENV    "development" (default) or "production": production fails fast on missing secrets
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from planner.env import env_bool, env_choice, env_float, env_int, env_list, env_rate, env_str

BASE_DIR = Path(__file__).resolve().parent.parent


PLANNER_ENV = env_str("PLANNER_ENV", "development")
if PLANNER_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"PLANNER_ENV={PLANNER_ENV!r}: expected 'development' or 'production'")
PRODUCTION = PLANNER_ENV == "production"

DEBUG = env_bool("DEBUG", default=not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured(
        "DEBUG is on with PLANNER_ENV=production: debug pages show settings and tracebacks to anyone; unset DEBUG"
    )

_secret = env_str("SECRET_KEY")
if _secret is None:
    if PRODUCTION or not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Production (PLANNER_ENV=production or DEBUG off) needs a long random "
            'secret: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    _secret = "development-only-insecure-key-do-not-use-in-production-0123456789abcdef"
SECRET_KEY: str = _secret

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

# --- Database and broker ------------------------------------------------------------------------------
# Settings only read the environment: they never start a server. `./dev` (up, test, manage, ...) and the
# test session start the embedded PostgreSQL and Redis (planner.embedded) and pass their URLs here.
_database_url = env_str("DATABASE_URL")
_redis_url = env_str("REDIS_URL")
_missing = [name for name, value in (("DATABASE_URL", _database_url), ("REDIS_URL", _redis_url)) if not value]
if _missing:
    raise ImproperlyConfigured(
        f"{' and '.join(_missing)} not set. Run the project through ./dev (./dev up, ./dev manage ..., ./dev test), "
        "which starts the embedded PostgreSQL and Redis and passes their URLs, or export them yourself "
        "(python -m planner.embedded start, then "
        "eval \"$(python -m planner.embedded env | sed 's/^/export /')\")."
    )
assert _database_url is not None and _redis_url is not None


def _parse_database_url(name: str, url: str, **options: Any) -> dict[str, Any]:
    try:
        parsed = dict(dj_database_url.parse(url, **options))
    except (ValueError, dj_database_url.ParseError) as exc:  # UnknownSchemeError is a ValueError
        raise ImproperlyConfigured(
            f"{name}={url!r}: not a database URL ({exc}); expected postgres://..."
        ) from None
    if not str(parsed.get("ENGINE", "")).endswith("postgresql"):
        raise ImproperlyConfigured(f"{name}={url!r}: must point at PostgreSQL (postgres://...)")
    return parsed


DATABASES = {
    "default": _parse_database_url(
        "DATABASE_URL", _database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
if not _redis_url.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        f"REDIS_URL={_redis_url!r}: expected redis://host:port/db (or rediss://, unix://)"
    )
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", env_int("DB_CONNECT_TIMEOUT_S", 5))
REDIS_URL: str = _redis_url

# --- Database roles -----------------------------------------------------------------------------------
# Migrations run as the role that owns the tables (MIGRATE_DATABASE_URL, same database; unset: DATABASE_URL's
# role); `migrate` then grants the role the service connects as its row rights (planner.db_roles):
# DATABASE_APP_ROLE, by default DATABASE_URL's user when the two URLs name different users.
_migrate_url = env_str("MIGRATE_DATABASE_URL")
MIGRATE_DATABASE = _parse_database_url("MIGRATE_DATABASE_URL", _migrate_url) if _migrate_url else None
_app_user = DATABASES["default"].get("USER") or ""
DATABASE_APP_ROLE: str = env_str("DATABASE_APP_ROLE") or (
    _app_user if MIGRATE_DATABASE is not None and MIGRATE_DATABASE.get("USER") != _app_user else ""
)

# --- Applications -------------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "planner",
    "scenarios",
    "integrations",
    "api",
    "web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "planner.urls"
WSGI_APPLICATION = "planner.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "web.access.access_context",
            ]
        },
    }
]

# --- Dashboard: session log-in and the Content-Security-Policy every page is sent with ------------------

LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "web:plans"
LOGOUT_REDIRECT_URL = "web:login"

# No inline script or style anywhere: pages pass data to their scripts in <script type="application/json">
# blocks (json_script), which are not executed. Chart images are drawn on canvas and read back as data: URLs.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "var" / "static")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Request bodies above this are refused with 400 before parsing (scenario documents are a few KB).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_BODY_BYTES", 1_048_576)

# --- Reverse proxy (deployment: a TLS-terminating proxy in front, deploy/Caddyfile) ---------------------
# Origins a browser may post from when they differ from the Host the proxy forwards, e.g.
# "https://planner.example.com" (scheme included). SECURE_PROXY_SSL_HEADER names the request header (as Django
# sees it) and value by which the proxy says the client used HTTPS: "HTTP_X_FORWARDED_PROTO,https" by default in
# production. Only trust it behind a proxy that sets that header itself (Caddy does), never when clients reach
# the application directly; "none" turns it off.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
_proxy_ssl_header = env_list(
    "SECURE_PROXY_SSL_HEADER", ["HTTP_X_FORWARDED_PROTO", "https"] if PRODUCTION else ["none"]
)
if _proxy_ssl_header != ["none"]:
    if len(_proxy_ssl_header) != 2 or not _proxy_ssl_header[0].startswith("HTTP_"):
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={','.join(_proxy_ssl_header)!r}: expected HEADER,VALUE with the header as "
            "Django names it (e.g. HTTP_X_FORWARDED_PROTO,https), or none"
        )
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1])
# --- end reverse proxy -----------------------------------------------------------------------------------

# --- Security (production) ----------------------------------------------------------------------------
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- REST framework -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.DefaultPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {
        "solve": env_rate("THROTTLE_SOLVE", "600/min"),
        "run": env_rate("THROTTLE_RUN", "600/min"),
        "compare": env_rate("THROTTLE_COMPARE", "6000/min"),
    },
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

# --- Outages, brute force, tokens, audit, idempotency (api/) ----------------------------------------------
# Seconds a client is told to wait (Retry-After) when the database or the broker is unreachable (503).
OUTAGE_RETRY_AFTER_S = env_int("OUTAGE_RETRY_AFTER_S", 5)
# Reverse proxies in front of the service that append to X-Forwarded-For (0: the peer address is the client).
# The client address keys the login lockout and the failed-token throttle; trusting a header no proxy of
# ours wrote would let a guesser pick a new address per attempt.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
REST_FRAMEWORK["NUM_PROXIES"] = TRUSTED_PROXY_COUNT
# Failed API-token authentications per client address (DRF rate); beyond it, token requests get 429.
_throttle_rates = REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
assert isinstance(_throttle_rates, dict)
_throttle_rates["token_failure"] = env_rate("THROTTLE_TOKEN_FAILURES", "10/min")
INSTALLED_APPS += ["axes", "auditlog"]
MIDDLEWARE += [
    # A database or broker outage raised by a view answers 503 + Retry-After (api.outages).
    "api.outages.OutageMiddleware",
    # The audit log's actor: the session user (API views set the token's user themselves; api.audit).
    "api.audit.AuditContextMiddleware",
    # django-axes last: it answers a locked-out log-in (admin and dashboard) with 429.
    "axes.middleware.AxesMiddleware",
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Log-in lockout (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one user name from one address,
# that pair is refused (429) for LOGIN_COOLOFF_MINUTES, even with the right password; a success resets it.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_int("LOGIN_COOLOFF_MINUTES", 15) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "api.throttling.client_ip"
AXES_LOCKOUT_TEMPLATE = "api/locked_out.html"
# The audit log (django-auditlog) stores changed values as JSON (null stays null, numbers stay numbers).
AUDITLOG_STORE_JSON_CHANGES = True
# Idempotency-Key (api.idempotency): how long a POST's first answer is kept for retries, and after how many
# seconds a first request that never answered (a killed process) no longer holds its key.
IDEMPOTENCY_KEY_TTL_HOURS = env_int("IDEMPOTENCY_KEY_TTL_HOURS", 24)
IDEMPOTENCY_PENDING_S = env_int("IDEMPOTENCY_PENDING_S", 60)
# Lifetime of a new API token when its creator names none (days; 0: such tokens never expire).
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90)

SPECTACULAR_SETTINGS = {
    "TITLE": "Planner API",
    "DESCRIPTION": "Plans for large-scale ML training: step-time budget, time to train, TCO, carbon and water.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page's assets are served by the project (drf-spectacular-sidecar), never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- Cache (throttling, health caching) ---------------------------------------------------------------
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "planner",
        "TIMEOUT": 300,
    }
}

# --- Celery -------------------------------------------------------------------------------------------
SOLVE_TIME_LIMIT_S = env_int("SOLVE_TIME_LIMIT_S", 300)
CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport with a fix for the crash when Redis dies under a consumer (planner.broker)
CELERY_BROKER_TRANSPORT = "planner.broker:Transport"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis redelivers an unacknowledged message after the visibility timeout; it must exceed the longest task
# or a slow task would run twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": SOLVE_TIME_LIMIT_S * 4}
# One queue name per deployment; the test suite uses its own so a running service never takes test work.
CELERY_TASK_DEFAULT_QUEUE = env_str("PLANNER_QUEUE", "planner")
CELERY_TASK_IGNORE_RESULT = True  # job state lives in Postgres (scenarios.Run), not in a result backend
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# --- Scenarios: run execution (leases, time limits, sweeper, chunks) --------------------------------------
# Time limits are the worker's own: messages carry none (scenarios.queue sends them without), so the process
# that executes a run applies its SOLVE_TIME_LIMIT_S whoever enqueued it. The soft limit (which fails the run
# or chunk with the reason) is 90% of the hard one (which kills the child).
CELERY_TASK_TIME_LIMIT = SOLVE_TIME_LIMIT_S
CELERY_TASK_SOFT_TIME_LIMIT = max(1, int(SOLVE_TIME_LIMIT_S * 0.9))
# A claimed run is held for RUN_LEASE_S and the worker renews the lease every third of it while the run
# executes, so a dead worker's run is taken back by the sweeper (every 30 s) within lease + 30 s.
RUN_LEASE_S = env_int("RUN_LEASE_S", 20)
# A queued run (or price fan-out) whose message went out this long ago without being claimed is sent again.
SWEEP_QUEUED_AFTER_S = env_int("SWEEP_QUEUED_AFTER_S", 60)
RUN_CHUNK_SIZE = env_int("RUN_CHUNK_SIZE", 50)  # runs per message when many are enqueued at once
SWEEP_BATCH_LIMIT = env_int("SWEEP_BATCH_LIMIT", 5000)  # rows the sweeper takes per kind and tick
SWEEP_CHUNK_POINTS = env_int("SWEEP_CHUNK_POINTS", 20)  # sweep points per chunk task (at most)
SWEEP_CHUNK_LAYOUTS = env_int("SWEEP_CHUNK_LAYOUTS", 2_000_000)  # layouts a chunk evaluates (at most)
SWEEP_MIN_CHUNKS = env_int("SWEEP_MIN_CHUNKS", 16)  # chunks a sweep is cut into when it has enough points
# A new revision of a scenario is checked against the live plans that follow it, at most this many (name order)
# and none begun after this many seconds of checking, each a solve's own check (a layout search for layout:
# auto); the API's answer names the ones that no longer solve and how many were checked. 0 turns it off.
SCENARIO_EDIT_PLAN_CHECKS = env_int("SCENARIO_EDIT_PLAN_CHECKS", 100)
SCENARIO_EDIT_PLAN_CHECK_S = env_float("SCENARIO_EDIT_PLAN_CHECK_S", 10.0)
# --- end scenarios --------------------------------------------------------------------------------------
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULER = "planner.beat:HeartbeatDatabaseScheduler"

# Outbound requests to user-given URLs (webhooks, price feeds) never reach private, loopback, link-local or
# metadata addresses (scenarios.outbound) unless the host or address is listed here (a local receiver).
OUTBOUND_ALLOWED_HOSTS = env_list("OUTBOUND_ALLOWED_HOSTS", [])
# Price feeds (scenarios.feeds) may read files only under these directories; URLs go through the guard above.
PRICE_FEED_DIRS = env_list("PRICE_FEED_DIRS", [])
PRICE_FEED_MAX_BYTES = env_int("PRICE_FEED_MAX_BYTES", 5 * 1024 * 1024)
PRICE_FEED_TIMEOUT_S = env_int("PRICE_FEED_TIMEOUT_S", 30)
# Webhook deliveries (integrations.dispatch): retried with full-jitter exponential backoff from BASE up to
# MAX seconds between attempts, for WINDOW seconds after the event; each request waits at most TIMEOUT.
WEBHOOK_RETRY_WINDOW_S = env_int("WEBHOOK_RETRY_WINDOW_S", 24 * 3600)
WEBHOOK_BACKOFF_BASE_S = env_int("WEBHOOK_BACKOFF_BASE_S", 5)
WEBHOOK_BACKOFF_MAX_S = env_int("WEBHOOK_BACKOFF_MAX_S", 3600)
WEBHOOK_TIMEOUT_S = env_int("WEBHOOK_TIMEOUT_S", 10)

# Worker and beat liveness: each writes a timestamp to Redis on this period; /healthz reads it.
HEARTBEAT_PERIOD_S = env_int("HEARTBEAT_PERIOD_S", 5)
HEARTBEAT_STALE_S = env_int("HEARTBEAT_STALE_S", 30)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")),
    },
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
