"""Restarting the web server while pages stream: each client reconnects
with ``Last-Event-ID`` and carries on, with no event missed or repeated."""

import pytest

from accounts.models import ApiToken
from jobs.models import Status
from tests.jobtools import events_of, status_of, submit_sleep, wait_status
from tests.processes import start_web, wait_for
from tests.redisserver import free_port
from tests.sseclient import SSEClient


@pytest.mark.slow
def test_streams_resume_without_a_gap_across_a_web_restart(alice, worker, db_url, log_dir):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    web = start_web(db_url, port, log_dir)
    auth = {"Authorization": f"Token {ApiToken.issue(alice, 'test')[1]}"}
    job = submit_sleep(alice, steps=100, step_seconds=0.1)
    followers = [SSEClient(f"{url}/api/jobs/{job.pk}/events", auth) for _ in range(3)]
    listing = SSEClient(f"{url}/api/events", auth)
    try:
        wait_for(lambda: all(len(f.of()) >= 5 for f in followers), what="the streams to deliver some events")
        wait_for(lambda: listing.of("resync"), what="the list stream's first resync")  # connected before the stop
        web.stop()
        assert status_of(job) == Status.RUNNING, "the server restarts in the middle of the job"
        web = start_web(db_url, port, log_dir)
        wait_status(job, Status.DONE, timeout=60)

        def delivered_to_the_end(follower: SSEClient) -> bool:
            return any(e["data"]["kind"] == "status" and e["data"]["data"]["status"] == "done" for e in follower.of())

        wait_for(lambda: all(delivered_to_the_end(f) for f in followers), timeout=30,
                 what="every stream to deliver the job's end")
        recorded = [e["seq"] for e in events_of(job)]
        for follower in followers:
            assert follower.connections >= 2, "it reconnected"
            assert [e["data"]["seq"] for e in follower.of()] == recorded, "every event once, in order"
        def listed() -> list[int]:
            return [e["data"]["seq"] for e in listing.of() if e["data"]["job"] == job.pk]

        wait_for(lambda: listed() and listed()[-1] == recorded[-1], what="the list stream to deliver the job's end")
        summaries = [e["seq"] for e in events_of(job) if e["kind"] in ("status", "progress")]
        assert listing.connections >= 2
        assert listed() == summaries[summaries.index(listed()[0]):], "the list stream too: nothing missed or repeated"
    finally:
        for client in [*followers, listing]:
            client.close()
        web.stop()
