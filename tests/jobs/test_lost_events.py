"""The lost event: one that reached a job's file and never the live bus.

A process gives up on Redis when Redis stalls past its socket timeout (5 s:
an append-only file's fsync on a busy disk, a starved server) and keeps no
copy of what it could not send. The job's stream then learns of the event
only from a later one on the bus, and after a job's last event (its final
status) none comes. Both ways such an event still arrives are checked with
the suite's Redis really stalled (``SIGSTOP``): the stream that reads the
file when its bus is quiet, and the reconciler that sends what the bus
lacks, for the list pages."""

import asyncio

import pytest

from jobs import feeds, sse
from jobs.bus import client, job_stream, jobs_stream
from jobs.models import Job, Status
from jobs.publish import publish
from jobs.reconcile import reconcile

pytestmark = pytest.mark.slow  # each waits out the publisher's 5 s socket timeout


def seqs_on(stream: str, job: Job) -> list[int]:
    return [int(fields[b"seq"]) for _, fields in client().xrange(stream) if int(fields[b"job"]) == job.pk]


def ids_in(text: str) -> list[int]:
    return [int(line.removeprefix("id: ")) for line in text.split("\n") if line.startswith("id: ")]


def test_an_event_whose_publisher_gave_up_on_a_stalled_redis_still_reaches_the_stream(alice, redis_server):
    """Redis stalled past the publisher's socket timeout (5 s) fails its
    call: the event is in the file and never on the bus. The job's last
    event (here its final status) has no later one on the bus to show the
    gap, and a stream that read the file only at such a gap waited for it
    for good: the lost event of a loaded machine, whose disk delays the
    suite's Redis's append-only file."""
    job = Job.objects.create(kind="sleep", name="stalled", owner=alice, resources={"device": "cpu"})
    start = publish(job, "log", {"lines": ["before the stream"]})["seq"]

    async def sent() -> tuple[int, list[int]]:
        stream = feeds.follow(job.pk, job.folder, start)
        assert await anext(stream) == "retry: 1000\n\n"
        assert (await anext(stream)).startswith("event: resources")  # the stream has joined the bus
        redis_server.pause()
        try:
            last = await asyncio.to_thread(publish, job, "status", {"status": "done", "message": "Finished"})
        finally:
            redis_server.resume()
        assert seqs_on(job_stream(job.pk), job) == [start]
        ids: list[int] = []
        async with asyncio.timeout(3 * sse.BLOCK_MS / 1000):
            while not ids:
                ids += ids_in(await anext(stream))
        await stream.aclose()
        return last["seq"], ids

    try:
        last, ids = asyncio.run(sent())
        assert ids == [last] == [start + 1]
    finally:
        client().delete(job_stream(job.pk))


def test_the_reconciler_sends_a_final_status_its_publisher_could_not(alice, redis_server):
    job = Job.objects.create(kind="sleep", name="unsent", owner=alice, resources={"device": "cpu"})
    job.transition(Status.RUNNING, frm=[Status.QUEUED], message="Running")
    redis_server.pause()
    try:
        job.transition(Status.DONE, frm=[Status.RUNNING], message="Finished")
    finally:
        redis_server.resume()
    try:
        assert Job.objects.get(pk=job.pk).status == Status.DONE  # the database has it, the bus does not
        assert seqs_on(job_stream(job.pk), job) == seqs_on(jobs_stream(), job) == [1]
        reconcile()
        assert seqs_on(job_stream(job.pk), job) == seqs_on(jobs_stream(), job) == [1, 2]
        reconcile()  # what the bus has is not sent again
        assert seqs_on(jobs_stream(), job) == [1, 2]
    finally:
        client().delete(job_stream(job.pk), jobs_stream())
