"""Django settings for digitslike. Every value a deployment may change comes
from an environment variable, read through the typed helpers in ``env``."""

import secrets
import socket
from pathlib import Path

from csp.constants import NONE, SELF, UNSAFE_INLINE

from .env import (
    create_private_file,
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_path,
    env_str,
    make_private_folder,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_path("DATA_DIR", BASE_DIR / "var")
JOBS_DIR = DATA_DIR / "jobs"
# Everything under DATA_DIR is the app's alone: users' data, the database,
# the secret key. Made (or made private) here, before anything writes into it.
make_private_folder(DATA_DIR)


def _secret_key() -> str:
    """Use SECRET_KEY when given; otherwise keep a generated one under DATA_DIR
    so sessions survive restarts without any set-up."""
    given = env_str("SECRET_KEY", "")
    if given:
        return given
    path = DATA_DIR / "secret_key"
    if not path.exists():
        create_private_file(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Serving over HTTPS (docs/deploy.md). All off by default, for `make run` on
# http://127.0.0.1. HTTPS=true makes cookies secure and redirects plain HTTP;
# BEHIND_PROXY=true trusts the reverse proxy's X-Forwarded-Proto (set it only
# when a proxy you run sets it). The client's address comes from
# X-Forwarded-For only where the connection comes from an address in
# FORWARDED_ALLOW_IPS (comma-separated, passed to uvicorn; none by default):
# uvicorn's own default trusts 127.0.0.1, so any local process could name
# whatever address it liked to the sign-in limits.
HTTPS = env_bool("HTTPS", False)
BEHIND_PROXY = env_bool("BEHIND_PROXY", False)
FORWARDED_ALLOW_IPS = env_str("FORWARDED_ALLOW_IPS", "")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS and env_bool("HTTPS_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("HSTS_PRELOAD", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "accounts",
    "jobs",
    "datasets",
    "training",
    "devicechecks",
    "inference",
    "pretrained",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "web.nulbytes.RefuseNulMiddleware",
    "web.files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.TokenAuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "jobs.middleware.ActionErrorMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its page.
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy (django-csp): scripts only from this site, and no
# inline script anywhere (page data travels in json_script blocks, which are
# not run). Plotly.js sets inline styles and draws images from data: URLs.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

ROOT_URLCONF = "digitslike.urls"
# Under /api/, a failed CSRF check answers in the API's JSON error shape.
CSRF_FAILURE_VIEW = "web.api.csrf_failure"
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
                "accounts.context_processors.signup",
                "jobs.context_processors.job_statuses",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL", "")
if _database_url:
    _default_db = database_from_url(_database_url)
else:
    _default_db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA_DIR / "db.sqlite3")}
    # An empty file is an empty database; SQLite gives its -wal and -shm
    # files the same permissions.
    create_private_file(DATA_DIR / "db.sqlite3", "")
if _default_db["ENGINE"].endswith("sqlite3"):
    # WAL lets the web server read while a worker writes; IMMEDIATE makes a
    # writer wait for the lock up front instead of failing half-way.
    _default_db["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A request thread keeps its connection, as on PostgreSQL: opening one
    # (and its WAL pragma) was about 2.5 ms of Classify one's 12 ms in the
    # web process (bench/classify_latency.py, docs/benchmarks.md).
    _default_db["CONN_MAX_AGE"] = 60
    _default_db["CONN_HEALTH_CHECKS"] = True
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
# django-axes counts failed sign-ins per user name and address, and refuses
# more after LOGIN_FAILURE_LIMIT of them for LOGIN_LOCKOUT_MINUTES.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("LOGIN_LOCKOUT_MINUTES", 15.0) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "accounts.lockout.locked_out"
AXES_VERBOSE = False
# The client's address is the connection's, as uvicorn gives it: the
# proxy's X-Forwarded-For only when the proxy is in FORWARDED_ALLOW_IPS
# (read here, the header's first address would be whatever the client sent).
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]
# Who may make an account: anyone (the default), or, with SIGNUP_OPEN=false,
# only an administrator (the admin pages, or manage.py createsuperuser).
SIGNUP_OPEN = env_bool("SIGNUP_OPEN", True)
# The first account to sign up becomes the administrator, so a fresh install
# needs no set-up. Turn it off where strangers could sign up first, and make
# the administrator with createsuperuser or ADMIN_USERNAME/ADMIN_PASSWORD.
FIRST_SIGNUP_IS_ADMIN = env_bool("FIRST_SIGNUP_IS_ADMIN", True)
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
# The app serves its own static files (WhiteNoise, with caching headers and
# compression), as one tool under uvicorn with nothing in front of it. Found
# where they lie, so `make run` needs no collectstatic; the Docker image
# collects them into STATIC_ROOT.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

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
# A running job's process silent for 10 times its usual gap, and at least this long, is "not responding".
JOB_SILENT_SECONDS = env_float("JOB_SILENT_SECONDS", 300.0)
WORKER_HEARTBEAT_SECONDS = env_float("WORKER_HEARTBEAT_SECONDS", 2.0)
# A worker silent for this long is taken for dead and its jobs are requeued.
WORKER_DEAD_AFTER_SECONDS = env_float("WORKER_DEAD_AFTER_SECONDS", 15.0)
# Modules to import for the job kinds they register (besides the apps' own).
JOB_KINDS_MODULES = env_list("JOB_KINDS_MODULES", [])
# Device slots a worker without GPUs offers for CPU jobs.
CPU_SLOTS = env_int("CPU_SLOTS", 1, minimum=1)
# A job over several machines: the address the other machines reach this one
# at, when it runs the job's first node (the rendezvous), and how long the
# nodes have to all start before the job fails.
NODE_ADDRESS = env_str("NODE_ADDRESS", socket.getfqdn())
NODE_RENDEZVOUS_SECONDS = env_int("NODE_RENDEZVOUS_SECONDS", 300, minimum=5)

# Per user: jobs queued or running at once (0: no limit; at least a full
# sweep), and the bytes their job folders may hold (0: no limit).
JOB_QUOTA_ACTIVE = env_int("JOB_QUOTA_ACTIVE", 100, minimum=0)
DISK_QUOTA_BYTES = env_int("DISK_QUOTA_BYTES", 0, minimum=0)
# Devices of one class (GPUs, or CPU slots) a user's running jobs may hold at
# once, unless staff set the user's own (jobs.models.DeviceLimit); 0: no limit.
DEVICE_LIMIT_PER_USER = env_int("DEVICE_LIMIT_PER_USER", 0, minimum=0)
# Live event streams a user may hold open at once in one web process.
SSE_STREAMS_PER_USER = env_int("SSE_STREAMS_PER_USER", 20, minimum=1)
# Classify one requests a user may have in flight at once in one web process:
# the model server answers one at a time, for everyone.
CLASSIFY_IN_FLIGHT_PER_USER = env_int("CLASSIFY_IN_FLIGHT_PER_USER", 2, minimum=1)
# Connections each process's Redis pool may open; a stream that finds none
# free within a few seconds reads its job's file instead.
REDIS_MAX_CONNECTIONS = env_int("REDIS_MAX_CONNECTIONS", 256, minimum=4)

# Visualize and Customize build networks in a child process: its address
# space (torch alone takes about 4 GiB of it), the most parameters it builds,
# how many may run at once in each web process, and how long one may take
# (importing torch is most of it: 2 s on a quiet machine, 40 s on a starved one).
INSPECT_TIMEOUT_SECONDS = env_int("INSPECT_TIMEOUT_SECONDS", 60, minimum=1)
INSPECT_MEMORY_BYTES = env_int("INSPECT_MEMORY_BYTES", 8 * 1024**3, minimum=5 * 1024**3)
INSPECT_MAX_PARAMS = env_int("INSPECT_MAX_PARAMS", 500_000_000, minimum=1)
INSPECT_CONCURRENCY = env_int("INSPECT_CONCURRENCY", 2, minimum=1)

# Datasets.
# Server folders that dataset imports may read (the folder browser shows only these).
DATASET_ROOTS = [str(Path(p).expanduser().resolve()) for p in env_list("DATASET_ROOTS", [])] or [str(DATA_DIR / "imports")]
# The largest archive a user may upload.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 20 * 1024**3, minimum=1024)
# The largest request body anywhere else, and from anyone not signed in
# (web/bodylimit.py refuses a larger one before it is read).
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 10 * 1024**2, minimum=1024)
# Uploads go to disk, never into memory, as they arrive.
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "uploads")
FILE_UPLOAD_HANDLERS = ["jobs.uploadfiles.LimitedTemporaryFileUploadHandler"]
# The largest weights file a pretrained model may be uploaded as (it is read whole).
PRETRAINED_MAX_BYTES = env_int("PRETRAINED_MAX_BYTES", 4 * 1024**3, minimum=1024)
# Archive extraction limits (see trainer/archives.py).
ARCHIVE_MAX_BYTES = env_int("ARCHIVE_MAX_BYTES", 50 * 1024**3, minimum=1024)
ARCHIVE_MAX_RATIO = env_float("ARCHIVE_MAX_RATIO", 200.0)
