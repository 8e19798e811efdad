"""Django settings for digitslike. Every value a deployment may change comes
from an environment variable, read through the typed helpers in ``env``."""

import secrets
from pathlib import Path

from .env import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_path,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_path("DATA_DIR", BASE_DIR / "var")
JOBS_DIR = DATA_DIR / "jobs"


def _secret_key() -> str:
    """Use SECRET_KEY when given; otherwise keep a generated one under DATA_DIR
    so sessions survive restarts without any set-up."""
    given = env_str("SECRET_KEY", "")
    if given:
        return given
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "accounts",
    "jobs",
    "datasets",
    "training",
    "devicechecks",
    "inference",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.TokenAuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "digitslike.urls"
ASGI_APPLICATION = "digitslike.asgi.application"

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
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL", "")
if _database_url:
    _default_db = database_from_url(_database_url)
else:
    _default_db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA_DIR / "db.sqlite3")}
if _default_db["ENGINE"].endswith("sqlite3"):
    # WAL lets the web server read while a worker writes; IMMEDIATE makes a
    # writer wait for the lock up front instead of failing half-way.
    _default_db["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    _test_name = env_str("SQLITE_TEST_NAME", "")
    if _test_name:
        # Tests share one file-backed database with the worker subprocesses.
        _default_db["TEST"] = {"NAME": _test_name}
DATABASES = {"default": _default_db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# Redis: Celery broker, live event bus and device leases.
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# Prefix of every key this app writes, so several installs (or test runs)
# can share one Redis server.
REDIS_PREFIX = env_str("REDIS_PREFIX", "dl")

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# Delivery. The database, not the broker, is the record of a job: a worker
# claims a job with a conditional UPDATE (so a duplicated message runs it
# once), and the reconciler requeues or fails the jobs of a worker whose
# heartbeat stopped and re-sends queued jobs whose message was lost, at most
# JOB_MAX_ATTEMPTS times. So a message is acknowledged as soon as a worker
# thread starts it, and a worker fetches a message only when it has a free
# thread: nothing of a long job stays unacknowledged in Redis, so nothing is
# redelivered while it runs, whatever the visibility timeout. (With late
# acknowledgement, kombu's Redis transport crashes the worker when Redis
# restarts under a running job: it tries to restore the unacknowledged message
# on a connection it has already dropped.)
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_DISABLE_PREFETCH = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Only a message fetched by a worker that died before starting it waits
    # this long; the reconciler usually re-sends it sooner.
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=60),
    "global_keyprefix": f"{REDIS_PREFIX}:celery:",
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_DEFAULT_QUEUE = "cpu"

# Jobs.
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3, minimum=1)
JOB_ABORT_GRACE_SECONDS = env_float("JOB_ABORT_GRACE_SECONDS", 10.0)
WORKER_HEARTBEAT_SECONDS = env_float("WORKER_HEARTBEAT_SECONDS", 2.0)
# A worker silent for this long is taken for dead and its jobs are requeued.
WORKER_DEAD_AFTER_SECONDS = env_float("WORKER_DEAD_AFTER_SECONDS", 15.0)
# Modules to import for the job kinds they register (besides the apps' own).
JOB_KINDS_MODULES = env_list("JOB_KINDS_MODULES", [])
# Device slots a worker without GPUs offers for CPU jobs.
CPU_SLOTS = env_int("CPU_SLOTS", 1, minimum=1)

# Datasets.
# Server folders that dataset imports may read (the folder browser shows only these).
DATASET_ROOTS = [str(Path(p).expanduser().resolve()) for p in env_list("DATASET_ROOTS", [])] or [str(DATA_DIR / "imports")]
# The largest archive a user may upload.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 20 * 1024**3, minimum=1024)
# Uploads go to disk, never into memory, as they arrive.
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "uploads")
FILE_UPLOAD_HANDLERS = ["datasets.uploads.LimitedTemporaryFileUploadHandler"]
# Archive extraction limits (see trainer/archives.py).
ARCHIVE_MAX_BYTES = env_int("ARCHIVE_MAX_BYTES", 50 * 1024**3, minimum=1024)
ARCHIVE_MAX_RATIO = env_float("ARCHIVE_MAX_RATIO", 200.0)
