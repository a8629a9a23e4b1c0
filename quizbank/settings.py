"""Settings come from the environment.

The embedded defaults are for development on one machine: a SQLite file, no broker (grading runs
in-process through the same sandbox pool), DEBUG on. Production sets DEBUG=0 and must then set
SECRET_KEY and ALLOWED_HOSTS, or start-up fails loudly.
"""

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}: expected a boolean (1/0, true/false), got {value!r}")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
# Under DEBUG a 404 or a 500 is still the site's own page (quizbank/http.py); 1: Django's
# technical pages instead.
DEBUG_TECHNICAL_PAGES = env_bool("DEBUG_TECHNICAL_PAGES", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    # A throwaway key for development only; sessions do not survive a restart, which is fine there.
    SECRET_KEY = "dev-only-" + os.urandom(16).hex()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]" if DEBUG else "")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "django_htmx",
    "accounts",
    "quizbank",
    "practice",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "quizbank.http.RejectNulMiddleware",
    # Outside the site's own 404 pages under DEBUG: an API path answers JSON either way.
    "quizbank.http.ApiNotFoundMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "quizbank.http.SitePagesUnderDebugMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "quizbank.http.MethodNotAllowedPageMiddleware",
    # Last, so it sees what views raise: a database or Redis outage answers 503 with Retry-After.
    "quizbank.http.ServiceUnavailableMiddleware",
]

ROOT_URLCONF = "quizbank.urls"
WSGI_APPLICATION = "quizbank.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "practice.context_processors.learner_settings",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        # A persistent connection is checked before reuse, so the first request after a
        # PostgreSQL restart reconnects instead of failing with a 500.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # JIT compilation pays off for long analytical queries; this site runs short ones, and a
    # plan estimated past jit_above_cost once made a 2 ms search query take 80 ms compiling.
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c jit=off"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Search ranks in PostgreSQL where it runs ("auto"), in Python elsewhere (quizbank/search/); the
# tests run both rankers on PostgreSQL by setting "python".
SEARCH_RANKER = "auto"
# How a search ranks (quizbank/search/semantic.py): "fused" (the full-text ranker, BM25 and
# meaning), or for bench/search_quality.py's columns "off" (the full-text ranker alone, as
# without the encoder), "words" (BM25 alone) or "only" (meaning alone).
SEARCH_SEMANTIC = os.environ.get("SEARCH_SEMANTIC", "fused")
# Seconds a search's results are kept in the shared cache for the same search again (the next
# page, a filter ticked); 0 ranks every request afresh. A write to the bank forgets them at once.
SEARCH_RESULTS_CACHE = int(os.environ.get("SEARCH_RESULTS_CACHE", "600"))
AUTH_USER_MODEL = "accounts.User"

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

# HTTPS in production. Production runs behind a proxy that terminates TLS and sets
# X-Forwarded-Proto (the compose file's); set SECURE_PROXY_SSL_HEADER=0 where nothing does.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0" if DEBUG else "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("SECURE_PROXY_SSL_HEADER", not DEBUG):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)

# Content-Security-Policy: scripts only from this site (no inline script anywhere); inline style
# attributes are allowed for the progress bars' widths and htmx's indicator styles.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# Failed logins are counted in the cache (Redis when REDIS_URL is set) per account and per address;
# past the limit, logins from there are refused until the window has passed.
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
LOGIN_FAILURE_ADDRESS_LIMIT = int(os.environ.get("LOGIN_FAILURE_ADDRESS_LIMIT", "30"))
LOGIN_FAILURE_WINDOW = int(os.environ.get("LOGIN_FAILURE_WINDOW", "900"))
# Failures on one account from anywhere before each further guess must wait (doubling, up to the
# window) unless it comes from a browser that signed in to that account before.
LOGIN_SLOWDOWN_AFTER = int(os.environ.get("LOGIN_SLOWDOWN_AFTER", "10"))
# How many proxies in front of the site append the client's address to X-Forwarded-For (0: use
# the connection's address; the compose file's single proxy: 1).
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))
SIGNUP_LIMIT_PER_HOUR = int(os.environ.get("SIGNUP_LIMIT_PER_HOUR", "10"))
PASSWORD_RESET_LIMIT_PER_HOUR = int(os.environ.get("PASSWORD_RESET_LIMIT_PER_HOUR", "5"))

# Password-reset mail goes to the console in development. Production must name a backend (the SMTP
# one reads EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD and EMAIL_USE_TLS):
# otherwise live reset links would be printed to the web log and learners would get nothing.
if not DEBUG and not os.environ.get("EMAIL_BACKEND"):
    raise ImproperlyConfigured(
        "EMAIL_BACKEND must be set when DEBUG is off "
        "(e.g. django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST)"
    )
EMAIL_BACKEND_PATH = os.environ.get(
    "EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend"
)
MAILERS: dict[str, dict[str, Any]] = {"default": {"BACKEND": EMAIL_BACKEND_PATH}}
if EMAIL_BACKEND_PATH == "django.core.mail.backends.smtp.EmailBackend":
    MAILERS["default"]["OPTIONS"] = {
        "host": os.environ.get("EMAIL_HOST", "localhost"),
        "port": int(os.environ.get("EMAIL_PORT", "25")),
        "username": os.environ.get("EMAIL_HOST_USER", ""),
        "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
    }
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "quizbank <noreply@localhost>")

# Redis is both the Celery broker and the cache when REDIS_URL is set. Without it (the development
# default) there is no broker: tasks run in the web process, and grading still uses the sandbox.
REDIS_URL = os.environ.get("REDIS_URL", "")
CACHES: dict[str, dict[str, Any]]
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "quizbank.cache.DegradingRedisCache", "LOCATION": REDIS_URL}}
    CELERY_BROKER_URL = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = True
# Each process's own copy of cached bank facts. Their keys hold the bank version, so an entry never
# changes: only the version is read from the shared cache on each request (quizbank/caching.py).
CACHES["local"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "bank-facts",
    "OPTIONS": {"MAX_ENTRIES": 2000},
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# Publishing to a broker that is down fails within about a second (a 503 to the submitter),
# instead of Celery's default retries.
GRADER_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.5,
}
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "socket_timeout": 10}
# The sweep runs on a queue of its own, served by the beat container's small worker (compose's
# `sweeper`), so a grading backlog or a missing grading worker cannot delay it. Every few seconds:
# it is a few indexed queries, and it is what bounds how long a lost message or a dead worker
# delays a verdict (README, "Grading").
SWEEP_INTERVAL = float(os.environ.get("SWEEP_INTERVAL", "3"))
CELERY_TASK_ROUTES = {"submissions.sweep": {"queue": "sweep"}}
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-submissions": {
        "task": "submissions.sweep",
        "schedule": SWEEP_INTERVAL,
        # A sweep that could not run in time is dropped, not stacked behind the next one.
        "options": {"queue": "sweep", "expires": SWEEP_INTERVAL},
    },
}

# What sends an exercise version to the grader for verification (the admin's save and Verify):
# the learner app grades, on its workers; the content app only names it.
EXERCISE_VERIFICATION = "practice.services.dispatch.exercise_version_dispatch"

# The grader's interpreter: a separate virtual environment with torch and nothing of Django.
GRADER_PYTHON = os.environ.get("GRADER_PYTHON", str(BASE_DIR / ".venv-grader" / "bin" / "python"))
# More slots than cores: a run that sleeps or blocks does not use its core, and each run's cpu
# cgroup keeps those that compute to one core and an equal share (grader/cgroups.py). A worker
# runs one thread per slot unless told otherwise (the GPU worker: `-c 1`).
GRADER_SLOTS = int(os.environ.get("GRADER_SLOTS", str(2 * (os.cpu_count() or 1))))
# Twice as many task threads as slots: a task spends part of its time in the database (marking the
# row running, storing the verdict) and in the broker, and with one thread per slot the slots sat
# idle meanwhile (issue 28, finding 8: 2 of 4 busy while messages waited). The extra threads wait
# for a slot in the pool; a message is acknowledged only after its verdict (acks_late), so the
# worker holds at most this many (prefetch multiplier 1).
CELERY_WORKER_CONCURRENCY = int(os.environ.get("GRADER_WORKER_THREADS", str(2 * GRADER_SLOTS)))
# How many submissions of one learner may be in the broker or in a slot at once, per queue; the
# rest wait in the database (practice/services/dispatch.py). 0: no cap.
GRADER_USER_IN_FLIGHT = int(os.environ.get("GRADER_USER_IN_FLIGHT", "1"))
# The light lane (issue 28): heavy learners (more than GRADER_HEAVY_SECONDS of code run in the
# last GRADER_HEAVY_WINDOW seconds, or most of their runs in it out of time) together have at most
# this many CPU submissions in the broker or in a slot; the rest wait as held rows. One slot of a
# worker is then always free for everyone else. With several CPU workers, set it to their slots
# together, less one. 0: no lane.
GRADER_HEAVY_IN_FLIGHT = int(os.environ.get("GRADER_HEAVY_IN_FLIGHT", str(GRADER_SLOTS - 1)))
GRADER_HEAVY_SECONDS = float(os.environ.get("GRADER_HEAVY_SECONDS", "10"))
GRADER_HEAVY_WINDOW = int(os.environ.get("GRADER_HEAVY_WINDOW", "60"))
# The GPU queue's device list: "auto" uses CUDA where the grader's torch finds a device; "none" is
# the fake, empty list (single-use slots on the CPU, `requires: cuda` checks skipped and counted),
# which CI uses to exercise the GPU path without a GPU (grader/README.md, "The GPU queue").
GRADER_GPU_DEVICES = os.environ.get("GRADER_GPU_DEVICES", "auto")
if GRADER_GPU_DEVICES not in ("auto", "none"):
    raise ImproperlyConfigured("GRADER_GPU_DEVICES must be 'auto' or 'none'")
# Seconds a submission may wait in a queue, or run past its time limit, before the sweep steps in.
GRADER_QUEUE_DEADLINE = int(os.environ.get("GRADER_QUEUE_DEADLINE", "120"))
GRADER_GPU_QUEUE_DEADLINE = int(os.environ.get("GRADER_GPU_QUEUE_DEADLINE", "600"))
# A running submission's lease: its worker renews it every third of this; when the worker dies the
# sweep re-sends the submission once the lease has run out.
GRADER_LEASE_SECONDS = float(os.environ.get("GRADER_LEASE_SECONDS", "6"))
# One budget per learner for code sent to the grader, whatever the path (the page, the API, mock
# interviews, code reviews): SUBMISSION_RATE ("N/s|min|hour|day"), and at most
# SUBMISSIONS_WAITING_MAX of theirs queued or running at once.
SUBMISSION_RATE = os.environ.get("SUBMISSION_RATE", "20/min")
SUBMISSIONS_WAITING_MAX = int(os.environ.get("SUBMISSIONS_WAITING_MAX", "3"))
# Mock interviews a learner may start per day (UTC days, as everywhere on the site).
INTERVIEWS_PER_DAY = int(os.environ.get("INTERVIEWS_PER_DAY", "20"))

REST_FRAMEWORK = {
    # Token first: a request without credentials is then answered 401 with
    # `WWW-Authenticate: Token` (session-first would answer 403 with no challenge).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PARSER_CLASSES": [
        "quizbank.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "quizbank.api.pagination.PageNumberPagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Services raise Django's ValidationError and quizbank.errors; this one handler answers them.
    "EXCEPTION_HANDLER": "quizbank.api.exceptions.exception_handler",
    "PAGE_SIZE": 20,
}

SPECTACULAR_SETTINGS = {
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "quizbank.api.schema.document_error_responses",
    ],
    "TITLE": "quizbank API",
    "DESCRIPTION": "PyTorch interview questions: browse, search, practise and get code graded.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs UI's assets are served from this site, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "QuestionKindEnum": "quizbank.models.Question.Kind",
        "QuestionStatusEnum": "quizbank.models.Question.Status",
        "QuickCheckKindEnum": "quizbank.models.QuickCheck.Kind",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
