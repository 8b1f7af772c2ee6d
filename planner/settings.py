"""Planner settings: one module, every deployment difference read from the environment (12-factor).

Variables (all optional in development):
  DATABASE_URL   postgres://user:pass@host:port/name   (unset: the embedded PostgreSQL, see planner.embedded)
  REDIS_URL      redis://host:port/db                   (unset: the embedded Redis)
  SECRET_KEY     required when DEBUG is off
  DEBUG          "1"/"true" to enable; default on for a development checkout, off when PLANNER_ENV=production
  ALLOWED_HOSTS  comma-separated host names
  PLANNER_ENV    "development" (default) or "production": production fails fast on missing secrets
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    value = env_str(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    value = env_str(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = env_str(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


PLANNER_ENV = env_str("PLANNER_ENV", "development")
if PLANNER_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"PLANNER_ENV={PLANNER_ENV!r}: expected 'development' or 'production'")
PRODUCTION = PLANNER_ENV == "production"

DEBUG = env_bool("DEBUG", default=not PRODUCTION)

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
_database_url = env_str("DATABASE_URL")
_redis_url = env_str("REDIS_URL")
EMBEDDED_SERVICES = _database_url is None or _redis_url is None
if EMBEDDED_SERVICES:
    from planner import embedded

    _servers = embedded.ensure_running()
    _database_url = _database_url or _servers.database_url
    _redis_url = _redis_url or _servers.redis_url
    # Child processes (Celery workers, test helpers) must reach the same servers without starting more.
    os.environ.setdefault("DATABASE_URL", _database_url)
    os.environ.setdefault("REDIS_URL", _redis_url)

assert _database_url is not None and _redis_url is not None
DATABASES = {
    "default": dj_database_url.parse(
        _database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
if not DATABASES["default"]["ENGINE"].endswith("postgresql"):
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...)")
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", env_int("DB_CONNECT_TIMEOUT_S", 5))
REDIS_URL: str = _redis_url

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
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on a missing root before collectstatic
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Request bodies above this are refused with 400 before parsing (scenario documents are a few KB).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_BODY_BYTES", 1_048_576)

# --- Security (production) ----------------------------------------------------------------------------
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

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
        "solve": env_str("THROTTLE_SOLVE", "600/min"),
        "run": env_str("THROTTLE_RUN", "600/min"),
        "compare": env_str("THROTTLE_COMPARE", "6000/min"),
    },
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

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
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
