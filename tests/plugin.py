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


def pytest_unconfigure(config):
    REDIS.stop()
    shutil.rmtree(ROOT, ignore_errors=True)
