"""Loaded with ``-p tests.plugin`` before Django is set up: gives the suite
its own Redis server (so tests may stop and restart it), its own data folder,
and short worker timings, all through the environment that the worker and
web subprocesses inherit."""

import os
import shutil
import tempfile
from pathlib import Path

from tests.redisserver import RedisServer

ROOT = Path(tempfile.mkdtemp(prefix="digitslike-tests-"))
REDIS = RedisServer(ROOT / "redis")
REDIS.start()

# What tests/sharedruns.py makes once for the whole run: the first process
# (pytest's own, before it starts pytest-xdist's workers, which inherit its
# environment) makes the folder and removes it at its end, unless it was
# given (scripts/test.sh gives both database passes one).
OWNS_SHARED = "TEST_SHARED_DIR" not in os.environ
if OWNS_SHARED:
    os.environ["TEST_SHARED_DIR"] = tempfile.mkdtemp(prefix="digitslike-shared-")

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
    # Importing torch in Visualize's child took 40 s with both cores busy:
    # the limit here is for a hang, not for a starved machine.
    "INSPECT_TIMEOUT_SECONDS": "240",
})


# A test that may use the database asks for one of these (its users, a
# worker or a web server over the test database ask for them in turn).
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup"}
# A test that asks for one of these is about what it serves, not about the
# database: the model server reads job folders and never the database, and
# the web side's rows around it are a user's and a model's, made and read
# back through the ORM as every other test's.
ONE_DATABASE_FIXTURES = {"model_server"}


def runs_on_one_database(item) -> bool:
    """Whether the second database's pass leaves ``item`` out: marked
    ``one_database`` (a training, evaluation or export whose work is the
    trainer's, the database holding only its user's rows), or asking for a
    fixture of ``ONE_DATABASE_FIXTURES``."""
    return bool(item.get_closest_marker("one_database") or ONE_DATABASE_FIXTURES & set(item.fixturenames))


def pytest_collection_modifyitems(config, items):
    """With ``DATABASE_TESTS_ONLY`` set (the second database's pass of
    ``make test``), only the tests that may use the database run: the others
    run in the first pass, and run the same whatever the database is, since
    pytest-django refuses database access to a test that did not ask for it.
    Nor do the tests ``runs_on_one_database`` names: their work is the
    trainer's, the same whatever database holds their rows, and training it
    twice cost a fifth of the suite's CPU."""
    if os.environ.get("DATABASE_TESTS_ONLY"):
        kept, left = [], []
        for item in items:
            uses_database = DATABASE_FIXTURES & set(item.fixturenames) or item.get_closest_marker("django_db")
            (kept if uses_database and not runs_on_one_database(item) else left).append(item)
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
    if OWNS_SHARED:
        shutil.rmtree(os.environ["TEST_SHARED_DIR"], ignore_errors=True)
