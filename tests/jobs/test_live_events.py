"""Live events over Server-Sent Events from the real ASGI server: history
first, then live, resumable with Last-Event-ID; one stream for all jobs."""

import httpx
import pytest

from accounts.models import ApiToken
from jobs.models import Status
from jobs.publish import publish
from tests.jobtools import all_events_of_ended, submit_sleep, wait_status
from tests.processes import wait_for
from tests.sseclient import SSEClient


@pytest.fixture
def auth(alice):
    _, key = ApiToken.issue(alice, "test")
    return {"Authorization": f"Token {key}"}


def seqs(client):
    return [e["data"]["seq"] for e in client.of()]


def test_a_job_stream_sends_history_then_live_events_in_order(alice, worker, web, auth):
    job = submit_sleep(alice, steps=30, step_seconds=0.1)
    wait_status(job, Status.RUNNING)
    follower = SSEClient(f"{web.url}/api/jobs/{job.pk}/events", auth)
    total = len(all_events_of_ended(job))
    wait_for(lambda: len(follower.of()) >= total, what=lambda: f"every event on the stream: it has seqs {seqs(follower)} "
             f"of 1 to {total}, over {follower.connections} connection(s)")
    assert seqs(follower) == list(range(1, total + 1))
    assert [e["id"] for e in follower.of()] == [str(i) for i in range(1, total + 1)]
    follower.close()


def test_a_reconnecting_client_misses_nothing_and_gets_no_duplicates(alice, worker, web, auth):
    job = submit_sleep(alice, steps=20, step_seconds=0.1)
    wait_status(job, Status.RUNNING)
    first = SSEClient(f"{web.url}/api/jobs/{job.pk}/events", auth, reconnect=False)
    wait_for(lambda: len(first.of()) >= 5, what="some events")
    first.close()
    resumed_from = first.last_event_id
    total = len(all_events_of_ended(job))
    second = SSEClient(f"{web.url}/api/jobs/{job.pk}/events", auth, last_event_id=resumed_from)
    wait_for(lambda: seqs(second) and seqs(second)[-1] == total, what="the rest of the events")
    assert seqs(second) == list(range(int(resumed_from) + 1, total + 1))
    second.close()


def test_the_shared_stream_carries_every_jobs_status_and_progress(alice, worker, web, auth):
    listing = SSEClient(f"{web.url}/api/events", auth)
    wait_for(lambda: listing.of("resync"), what="the first resync")
    jobs = [submit_sleep(alice, steps=3, name=f"j{i}") for i in range(2)]
    for job in jobs:
        wait_status(job, Status.DONE)

    def seen(job):
        return [e["data"]["data"].get("status") for e in listing.of() if e["data"]["job"] == job.pk
                and e["data"]["kind"] == "status"]

    for job in jobs:
        wait_for(lambda job=job: seen(job) == ["queued", "waiting", "running", "done"],
                 what=lambda job=job: f"job {job.pk}'s statuses, seen: {seen(job)}")
    progress = [e for e in listing.of() if e["data"]["kind"] == "progress"]
    assert progress and all(e["id"] for e in progress)
    assert not [e for e in listing.of() if e["data"]["kind"] == "log"]  # logs stay on the job's own stream
    # resources are sent every RESOURCES_EVERY_SECONDS, not on each status: the slot shows free soon after
    wait_for(lambda: [e["data"]["cpu"] for e in listing.of("resources")][-1:] == [{"free": 1, "total": 1}], timeout=10,
             what="the freed CPU slot on the stream")
    listing.close()


def test_an_event_two_forwarders_put_on_the_bus_reaches_the_shared_stream_once(alice, web, auth):
    """The race that showed a job's "waiting" twice on a loaded machine: a
    Forwarder that had read the job's file (the worker's resend of unsent
    events) sends again what a publish's own Forwarder has just sent."""
    from jobs import bus
    from trainer import eventlog

    listing = SSEClient(f"{web.url}/api/events", auth)
    wait_for(lambda: listing.of("resync"), what="the first resync")
    job = submit_sleep(alice)  # no worker: it stays queued
    resend = bus.Forwarder(job.pk, job.folder)
    resend.forward()  # it has read the file to its end
    eventlog.append(job.folder, "status", {"status": "waiting", "message": "Claimed", "progress": 0.0})
    bus.Forwarder(job.pk, job.folder).forward()  # the publish's own
    resend.forward()  # and the resend's, of the same line
    publish(job, "status", {"status": "running", "message": "Running", "progress": 0.0})
    on_bus = [event["seq"] for _, fields in bus.client().xrange(bus.jobs_stream())
              for job_id, event in [bus.decode(fields)] if job_id == job.pk]
    assert on_bus == [1, 2, 2, 3], "the bus holds the duplicate"

    def seen() -> list[tuple[int, str]]:
        return [(e["data"]["seq"], e["data"]["data"]["status"]) for e in listing.of()
                if e["data"]["job"] == job.pk and e["data"]["kind"] == "status"]

    wait_for(lambda: len(seen()) >= 3, what=lambda: f"the three statuses, seen: {seen()}")
    publish(job, "progress", {"progress": 0.5})  # a later event: nothing more of the statuses comes before it
    wait_for(lambda: [e for e in listing.of() if e["data"]["job"] == job.pk and e["data"]["kind"] == "progress"],
             what="the progress after them")
    assert seen() == [(1, "queued"), (2, "waiting"), (3, "running")]
    listing.close()


def test_publish_reaches_a_connected_client(alice, web, auth):
    job = submit_sleep(alice)  # no worker: it stays queued
    follower = SSEClient(f"{web.url}/api/jobs/{job.pk}/events", auth)
    wait_for(lambda: follower.of(), what="the history")
    publish(job, "note", {"text": "hello"})
    wait_for(lambda: [e for e in follower.of() if e["data"]["kind"] == "note"], what="the published event")
    follower.close()


def test_streams_need_a_signed_in_user_and_an_existing_job(alice, web, auth):
    assert httpx.get(f"{web.url}/api/events", timeout=5).status_code == 401
    assert httpx.get(f"{web.url}/jobs/1/events", timeout=5).status_code == 401
    assert httpx.get(f"{web.url}/api/jobs/999999/events", headers=auth, timeout=5).status_code == 404


def test_a_new_job_goes_live_where_a_stream_was_left_under_its_id(alice, transactional_db):
    """A database made anew while Redis kept its streams hands ids out again;
    the stream left under an id must not swallow the new job's events."""
    from jobs import bus

    first = submit_sleep(alice)
    reused = first.pk + 1
    leftover = {"seq": 500, "t": 0.0, "kind": "progress", "data": {"progress": 0.5}}
    bus.client().xadd(bus.job_stream(reused), bus.encode(leftover, reused))

    job = submit_sleep(alice)
    assert job.pk == reused
    publish(job, "progress", {"progress": 0.25})
    entries = bus.client().xrange(bus.job_stream(job.pk))
    assert [bus.decode(fields)[1]["seq"] for _, fields in entries] == [1, 2]

