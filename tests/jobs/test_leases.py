"""Device leases in Redis: all or nothing, held by one job, refreshed by the
worker, gone when the worker stops refreshing them."""

import pytest
from django.conf import settings

from jobs import leases, resources
from jobs.bus import client
from jobs.models import Worker
from tests.processes import wait_for
from trainer import devicelease
from trainer.gpulease import HOLDER_PREFIX


@pytest.fixture
def host(request):
    yield f"host-{request.node.name}"
    for key in client().keys(leases.lease_key(f"host-{request.node.name}", "*")):
        client().delete(key)


def test_a_job_gets_all_the_devices_it_asked_for_or_none(host):
    assert leases.acquire(host, ["gpu0", "gpu1", "gpu2"], 2, job_id=1) == ["gpu0", "gpu1"]
    assert leases.acquire(host, ["gpu0", "gpu1", "gpu2"], 2, job_id=2) is None
    assert client().get(leases.lease_key(host, "gpu2")) is None  # nothing half-taken
    assert leases.acquire(host, ["gpu0", "gpu1", "gpu2"], 1, job_id=2) == ["gpu2"]


def test_asking_again_for_held_devices_is_idempotent(host):
    assert leases.acquire(host, ["cpu0"], 1, job_id=7) == ["cpu0"]
    assert leases.acquire(host, ["cpu0"], 1, job_id=7) == ["cpu0"]


def test_only_the_holder_releases(host):
    leases.acquire(host, ["gpu0"], 1, job_id=1)
    leases.release(host, ["gpu0"], job_id=2)
    assert leases.acquire(host, ["gpu0"], 1, job_id=2) is None
    leases.release(host, ["gpu0"], job_id=1)
    assert leases.acquire(host, ["gpu0"], 1, job_id=2) == ["gpu0"]


def test_more_devices_than_exist_is_none(host):
    assert leases.acquire(host, ["gpu0"], 2, job_id=1) is None


def test_leases_expire_unless_refreshed(host, settings):
    settings.WORKER_DEAD_AFTER_SECONDS = 0.3
    leases.acquire(host, ["gpu0", "gpu1"], 2, job_id=1)
    # The refresh gives gpu0 a long life, so a busy machine's pauses cannot
    # let it lapse: only gpu1, never refreshed, runs out.
    settings.WORKER_DEAD_AFTER_SECONDS = 60
    leases.refresh(host, ["gpu0"], job_id=1)
    wait_for(lambda: client().get(leases.lease_key(host, "gpu1")) is None, timeout=10, what="gpu1's lease to lapse")
    assert leases.acquire(host, ["gpu0", "gpu1"], 1, job_id=2) == ["gpu1"]
    assert client().get(leases.lease_key(host, "gpu0")) == b"1"


def test_the_resources_name_a_lease_holder_that_is_no_job_as_its_app_registers_it(host, db):
    """The model server leases a GPU as a job does; the inference app names it."""
    Worker.objects.create(id="holders", hostname=host, pid=1, devices=[{"id": f"gpu{i}", "kind": "gpu"} for i in range(3)])
    devicelease.acquire(client(), settings.REDIS_PREFIX, host, ["gpu0"], 1, f"{HOLDER_PREFIX}4242", 60_000)
    devicelease.acquire(client(), settings.REDIS_PREFIX, host, ["gpu1"], 1, "nobody-registered:1", 60_000)
    [worker] = resources.snapshot()["workers"]
    assert [device["job"] for device in worker["devices"]] == [
        {"id": None, "name": "Model server (Classify one)", "owner": "pid 4242", "url": None}, None, None]
    assert resources.free_counts()["gpu"] == {"free": 2, "total": 3}
