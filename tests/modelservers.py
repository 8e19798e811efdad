"""The model server for tests: a real ``python -m trainer.modelserver`` on
the suite's Redis and the test's own data folder, under the prefix the web
app uses, so that Classify one reaches it as in production."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis
from django.conf import settings

from tests.processes import Service, wait_for
from trainer import modelclient


def start_model_server(data_dir: Path, prefix: str, log_dir: Path, **env: str) -> Service:
    service = Service([sys.executable, "-m", "trainer.modelserver", "--redis-url", settings.REDIS_URL,
                       "--prefix", prefix, "--data-dir", str(data_dir)],
                      {"OMP_NUM_THREADS": "1", **env}, log_dir / "modelserver.log")
    client = redis.Redis.from_url(settings.REDIS_URL)

    def up() -> bool:
        """This server says it is alive (not one stopped a moment ago whose key has not expired)."""
        if service.process.poll() is not None:
            raise AssertionError(f"the model server exited:\n{service.output()}")
        return client.get(modelclient.alive_key(prefix)) == str(service.pid).encode()

    wait_for(up, timeout=90, what="the model server to start")
    return service


@pytest.fixture
def model_server(log_dir):
    """A model server for the web app of this test (its DATA_DIR and REDIS_PREFIX)."""
    service = start_model_server(settings.DATA_DIR, settings.REDIS_PREFIX, log_dir)
    yield service
    service.stop()
