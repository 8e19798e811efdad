"""Device leases in Redis: all or nothing, held by one job, refreshed by the
worker, gone when the worker stops refreshing them."""

import pytest

from jobs import leases
from jobs.bus import client
from tests.processes import wait_for


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
