"""Per-user quotas: jobs queued or running, disk held by job folders, and
live event streams; each refused with a 4xx and a message that says why, on
the page and in the API. And the web process's Redis pool is bounded."""

import html
import json

import httpx
import pytest
import redis
from django.test import Client

from accounts.models import ApiToken
from jobs import services
from jobs.models import Job, Status
from tests.clients import signed_in
from tests.jobtools import submit_sleep, wait_status
from tests.processes import start_web, wait_for
from tests.redisserver import free_port
from tests.sseclient import SSEClient


def create_probe(client: Client):
    return client.post("/api/jobs", data=json.dumps({"kind": "probe", "name": "one more"}),
                       content_type="application/json")


def test_a_user_at_the_active_jobs_quota_is_refused_on_the_page_and_in_the_api(alice, bob, settings):
    settings.JOB_QUOTA_ACTIVE = 2
    first = submit_sleep(alice)
    submit_sleep(alice)
    refused = create_probe(signed_in(alice))
    assert refused.status_code == 429
    assert refused.json()["error"] == ("alice has 2 jobs queued or running, the most a user may have; "
                                       "wait for some to finish, or abort some.")
    page = signed_in(alice).post("/checks/new/", {"name": "check", "seconds": 1, "size": 16, "device": "cpu"})
    assert page.status_code == 429 and "alice has 2 jobs queued or running" in html.unescape(page.content.decode())
    clone = signed_in(alice).post(f"/jobs/{first.pk}/clone")
    assert clone.status_code == 429 and "alice has 2 jobs queued or running" in html.unescape(clone.content.decode())
    assert Job.objects.filter(owner=alice).count() == 2
    assert create_probe(signed_in(bob)).status_code == 201, "the quota is per user"
    services.abort(first, alice)
    assert create_probe(signed_in(alice)).status_code == 201, "a finished job frees its place"


def test_a_user_over_the_disk_quota_is_refused_until_they_delete(alice, settings):
    settings.DISK_QUOTA_BYTES = 10_000
    old = Job.objects.create(kind="sleep", name="old", owner=alice, status=Status.DONE)
    (old.folder / "checkpoints").mkdir(parents=True)
    (old.folder / "checkpoints" / "big.pt").write_bytes(b"x" * 12_000)
    refused = create_probe(signed_in(alice))
    assert refused.status_code == 403
    assert refused.json()["error"] == ("alice's jobs hold 11.7\xa0KB on disk, their quota is 9.8\xa0KB; "
                                       "delete some to queue more.")
    services.delete(old, alice)
    assert create_probe(signed_in(alice)).status_code == 201


def test_resuming_counts_against_the_quota(alice, settings):
    settings.JOB_QUOTA_ACTIVE = 1
    stopped = Job.objects.create(kind="probe", name="stopped", owner=alice, status=Status.ABORTED)
    stopped.folder.mkdir(parents=True)
    (stopped.folder / "probe.state").write_text("")
    submit_sleep(alice)
    with pytest.raises(services.ActionError, match="alice has 1 jobs queued or running") as refused:
        services.resume(stopped, alice)
    assert refused.value.status == 429


@pytest.fixture
def limited_web(db_url, log_dir):
    """A web server with small limits: 2 streams per user, 4 Redis connections a pool."""
    port = free_port()
    service = start_web(db_url, port, log_dir, SSE_STREAMS_PER_USER="2", REDIS_MAX_CONNECTIONS="4")
    service.url = f"http://127.0.0.1:{port}"
    yield service
    service.stop()


def test_a_user_may_hold_only_so_many_live_streams(alice, bob, limited_web):
    alice_auth = {"Authorization": f"Token {ApiToken.issue(alice, 't')[1]}"}
    bob_auth = {"Authorization": f"Token {ApiToken.issue(bob, 't')[1]}"}
    streams = [SSEClient(f"{limited_web.url}/api/events", alice_auth, reconnect=False) for _ in range(2)]
    for stream in streams:
        assert stream.connected.wait(10)
    third = httpx.get(f"{limited_web.url}/api/events", headers=alice_auth, timeout=10)
    assert third.status_code == 429
    assert third.json()["error"] == "alice has 2 live event streams open, the most a user may; close some pages."
    other = SSEClient(f"{limited_web.url}/api/events", bob_auth, reconnect=False)
    assert other.connected.wait(10), "the cap is per user"

    streams.pop().close()

    def another_accepted() -> bool:
        with httpx.stream("GET", f"{limited_web.url}/api/events", headers=alice_auth, timeout=10) as response:
            return response.status_code == 200

    wait_for(another_accepted, timeout=15, every=0.2, what="a closed stream to give its place back")
    for stream in [*streams, other]:
        stream.close()


def test_the_web_process_holds_no_more_redis_connections_than_its_pool_allows(alice, worker, limited_web,
                                                                               redis_server, settings):
    job = submit_sleep(alice, steps=20, step_seconds=0.1)
    wait_status(job, Status.RUNNING)
    followers = []
    for index in range(4):  # four users, two streams each: eight streams for a pool of four
        user = type(alice).objects.create_user(f"viewer{index}")
        auth = {"Authorization": f"Token {ApiToken.issue(user, 't')[1]}"}
        followers += [SSEClient(f"{limited_web.url}/api/jobs/{job.pk}/events", auth) for _ in range(2)]
    client = redis.Redis.from_url(redis_server.url)
    name = f"{settings.REDIS_PREFIX}:{limited_web.pid}"

    def web_connections() -> int:
        return sum(1 for entry in client.client_list() if entry["name"] == name)

    def all_saw_done() -> bool:
        assert web_connections() <= 2 * 4, "one pool for the streams, one for the rest"
        return all(any(e["data"]["kind"] == "status" and e["data"]["data"]["status"] == "done"
                       for e in follower.of()) for follower in followers)

    wait_for(all_saw_done, timeout=60, what="every stream to deliver the job's end")
    for follower in followers:
        follower.close()
