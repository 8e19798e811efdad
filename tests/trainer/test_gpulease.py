"""The model server's GPU lease on the suite's Redis, without a GPU: taken
when the GPU is free, refused while a job holds it, refreshed, given back
when idle; and a job refused while the server holds it."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings

from jobs import leases
from tests.processes import wait_for
from trainer import devicelease, modelclient
from trainer.gpulease import DeviceBusy, GpuLease, device_id
from trainer.modelserver import ALIVE_SECONDS, POLL_SECONDS, Models, Server


class Clock:
    """Time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@pytest.fixture
def host(client):
    name = f"host-{uuid.uuid4().hex[:8]}"
    yield name
    for key in client.keys(leases.lease_key(name, "*")):
        client.delete(key)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def lease(client, host, clock) -> GpuLease:
    return GpuLease(client, settings.REDIS_PREFIX, host, "gpu0", ttl_seconds=3, idle_seconds=60, clock=clock)


def test_torch_devices_name_their_lease():
    assert device_id("cuda") == "gpu0"
    assert device_id("cuda:2") == "gpu2"
    assert device_id("cpu") is None


def test_the_server_takes_a_free_gpu_and_a_job_is_refused_while_it_holds_it(lease, host):
    lease.take()
    assert lease.held
    assert leases.holder(host, "gpu0") == f"modelserver:{os.getpid()}"
    assert leases.acquire(host, ["gpu0"], 1, job_id=5) is None
    assert leases.refresh(host, ["gpu0"], job_id=5) == ["gpu0"]


def test_the_server_is_refused_while_a_job_holds_the_gpu(lease, host):
    assert leases.acquire(host, ["gpu0"], 1, job_id=5) == ["gpu0"]
    with pytest.raises(DeviceBusy, match="busy with a job"):
        lease.take()
    assert not lease.held
    assert leases.holder(host, "gpu0") == "5"


def test_the_lease_is_refreshed_within_its_time_to_live(lease, host, client, clock):
    lease.take()
    key = devicelease.lease_key(settings.REDIS_PREFIX, host, "gpu0")
    client.pexpire(key, 500)
    clock.now += 0.5
    assert lease.keep()
    assert client.pttl(key) <= 500, "not due yet: left as it was"
    clock.now += 1.0  # a third of the 3 s time to live has passed
    assert lease.keep()
    assert client.pttl(key) > 2000
    client.delete(key)  # a restarted Redis
    clock.now += 1.0
    assert lease.keep()
    assert leases.holder(host, "gpu0") == lease.holder


def test_a_lease_lost_to_a_job_is_not_kept(lease, host, client, clock):
    lease.take()
    client.delete(devicelease.lease_key(settings.REDIS_PREFIX, host, "gpu0"))
    assert leases.acquire(host, ["gpu0"], 1, job_id=9) == ["gpu0"]
    clock.now += 1.0
    assert not lease.keep()
    assert leases.holder(host, "gpu0") == "9"


def test_an_idle_server_drops_its_models_and_gives_the_gpu_back(lease, host, client, clock, tmp_path):
    server = Server(client, settings.REDIS_PREFIX, tmp_path, Models(2, "cpu"), lease)
    lease.take()
    server.models.held[("job", None)] = (object(), 0.0)
    clock.now += 30
    server.tend_lease()
    assert lease.held and server.models.held, "used 30 s ago: kept"
    clock.now += 30
    server.tend_lease()
    assert not lease.held and not server.models.held
    assert leases.holder(host, "gpu0") is None
    assert leases.acquire(host, ["gpu0"], 1, job_id=5) == ["gpu0"]


def test_a_request_while_a_job_holds_the_gpu_is_answered_busy(lease, host, client, tmp_path):
    server = Server(client, settings.REDIS_PREFIX, tmp_path, Models(2, "cpu"), lease)
    leases.acquire(host, ["gpu0"], 1, job_id=5)
    reply_key = f"reply-{uuid.uuid4().hex}"
    server.handle(json.dumps({"op": "classify", "job": 1, "image": "", "reply": reply_key}).encode())
    reply = json.loads(client.lpop(reply_key))
    assert reply["ok"] is False and reply["code"] == "busy"
    assert "try again when it ends" in reply["error"]



def test_a_long_request_keeps_the_server_alive_and_the_gpu_from_jobs_until_it_ends(client, host, tmp_path):
    lease = GpuLease(client, settings.REDIS_PREFIX, host, "gpu0", ttl_seconds=2, idle_seconds=60)
    prefix = f"long-{uuid.uuid4().hex[:8]}"
    server = Server(client, prefix, tmp_path, Models(2, "cpu"), lease)
    lease.take()
    server.models.held[("job", None)] = (object(), 0.0)
    server.say_alive()  # as the loop does before it takes a request
    started = time.monotonic()
    with server.kept_up():
        while time.monotonic() - started < ALIVE_SECONDS + 2:  # past the alive key's life and the lease's
            assert client.exists(modelclient.alive_key(prefix)), "clients see a server at work, not none"
            assert leases.acquire(host, ["gpu0"], 1, job_id=5) is None, "the GPU stays the request's"
            time.sleep(0.2)
    assert leases.holder(host, "gpu0") == lease.holder


def test_one_thread_keeps_the_server_up_through_every_request_and_only_while_one_runs(client, tmp_path):
    prefix = f"kept-{uuid.uuid4().hex[:8]}"
    server = Server(client, prefix, tmp_path, Models(2, "cpu"))
    alive = modelclient.alive_key(prefix)
    keepers = [t.name for t in threading.enumerate()].count("kept-up")  # other servers' in this process
    for _ in range(3):
        with server.kept_up():
            client.delete(alive)
            wait_for(lambda: client.exists(alive), timeout=10, what="the alive key said again during the request")
    assert [t.name for t in threading.enumerate()].count("kept-up") == keepers + 1, "one thread for every request"
    client.delete(alive)
    time.sleep(POLL_SECONDS * 2.5)
    assert not client.exists(alive), "between requests the loop says it is alive, not the thread"


def test_a_lease_lost_during_a_request_drops_the_models_after_it(lease, host, client, clock, tmp_path):
    server = Server(client, settings.REDIS_PREFIX, tmp_path, Models(2, "cpu"), lease)
    lease.take()
    server.models.held[("job", None)] = (object(), 0.0)
    client.delete(devicelease.lease_key(settings.REDIS_PREFIX, host, "gpu0"))
    assert leases.acquire(host, ["gpu0"], 1, job_id=9) == ["gpu0"]
    clock.now += 1.0
    assert not lease.keep(), "what the request's thread finds"
    server.tend_lease()
    assert not server.models.held and leases.holder(host, "gpu0") == "9"
