"""Loaded with ``-p tests.plugin`` before Django is set up: gives the suite
its own Redis server (so tests may stop and restart it), its own data folder,
and short worker timings, all through the environment that the worker and
web subprocesses inherit."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.redisserver import RedisServer

ROOT = Path(tempfile.mkdtemp(prefix="digitslike-tests-"))
REDIS = RedisServer(ROOT / "redis")
REDIS.start()

os.environ.update({
    "DATA_DIR": str(ROOT / "data"),
    "REDIS_URL": REDIS.url,
    "REDIS_PREFIX": "dltest",
    "JOB_KINDS_MODULES": "tests.jobkinds",
    "SQLITE_TEST_NAME": str(ROOT / "test.sqlite3"),
    "WORKER_HEARTBEAT_SECONDS": "0.5",
    "WORKER_DEAD_AFTER_SECONDS": "3",
    "JOB_ABORT_GRACE_SECONDS": "1.5",
    "LOG_LEVEL": "WARNING",
})


# A test that may use the database asks for one of these (its users, a
# worker or a web server over the test database ask for them in turn).
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup"}

# The files of tests that use no database which ``make test`` runs in its
# PostgreSQL pass rather than its SQLite pass: the tests that use none run in
# one pass only, and the SQLite pass had them all (930 of its 2,030
# CPU-seconds against the PostgreSQL pass's 1,120), so it ran on alone for
# ten minutes. These 440 CPU-seconds even the two (docs/testing.md).
SECOND_PASS_FILES = {"tests/trainer/test_train.py"}


def _uses_database(item) -> bool:
    return bool(DATABASE_FIXTURES & set(item.fixturenames) or item.get_closest_marker("django_db"))


def pytest_collection_modifyitems(config, items):
    """``DATABASE_PASS`` (set by ``make test``, which runs two passes at once):
    ``sqlite``, every test but those of SECOND_PASS_FILES that use no
    database; ``postgresql``, the tests that may use the database and those.
    A test that uses no database runs the same whatever the database is,
    since pytest-django refuses database access to a test that did not ask
    for it, so it runs in one pass only. Unset (``make test-fast``, a
    pytest run by hand), every test runs."""
    database_pass = os.environ.get("DATABASE_PASS")
    if database_pass:
        root = Path(str(config.rootpath))
        if missing := [name for name in SECOND_PASS_FILES if not (root / name).is_file()]:
            raise pytest.UsageError(f"tests/plugin.py: SECOND_PASS_FILES names files that are gone: {missing}")
        second = {root / name for name in SECOND_PASS_FILES}
        kept, left = [], []
        for item in items:
            in_second = item.path in second
            runs = _uses_database(item) or (in_second if database_pass == "postgresql" else not in_second)
            (kept if runs else left).append(item)
        config.hook.pytest_deselected(items=left)
        items[:] = kept
    # The files that hold slow tests go first (each file's tests keep their
    # order): spread over processes, their long waits then overlap the rest
    # of the suite instead of ending it alone.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


def pytest_unconfigure(config):
    REDIS.stop()
    shutil.rmtree(ROOT, ignore_errors=True)
