"""The shared reader per job (``jobs/feeds.py``): every stream of a job gets
every event once, in order, while the job's bus is read once for all of
them, whatever order the bus carries the events in."""

import asyncio

from jobs import feeds
from jobs.bus import Forwarder, client, encode, job_stream
from jobs.models import Job
from trainer import eventlog


def ids_in(text: str) -> list[int]:
    return [int(line.removeprefix("id: ")) for line in text.split("\n") if line.startswith("id: ")]


async def joined(job: Job, after: int):
    """A job's stream that has sent its first resources: it has joined the feed."""
    stream = feeds.follow(job.pk, job.folder, after)
    assert await anext(stream) == "retry: 1000\n\n"
    assert (await anext(stream)).startswith("event: resources")
    return stream


async def ids_until(stream, count: int, seconds: float = 10) -> list[int]:
    ids: list[int] = []
    async with asyncio.timeout(seconds):
        while len(ids) < count:
            ids += ids_in(await anext(stream))
    return ids


def started_job(owner) -> tuple[Job, int]:
    job = Job.objects.create(kind="sleep", name="fed", owner=owner, resources={"device": "cpu"})
    job.folder.mkdir(parents=True)
    start = eventlog.append(job.folder, "log", {"lines": ["before the streams"]})["seq"]
    Forwarder(job.pk, job.folder).forward()
    return job, start


def test_a_reply_that_carries_events_out_of_order_loses_none(alice):
    """Two processes forwarding one file race on the bus, so one reply can
    carry n+1, n+3, n+2. The reader withdrawn before looked for a gap only
    before a reply's first event: it sent n+3 and dropped n+2 for good."""
    job, start = started_job(alice)

    async def sent() -> list[int]:
        stream = await joined(job, start)
        await asyncio.sleep(0.3)  # the feed waits on the bus
        events = [eventlog.append(job.folder, "progress", {"progress": n / 3}) for n in (1, 2, 3)]
        racing = client().pipeline(transaction=True)  # one reply carries all three
        for event in (events[0], events[2], events[1]):
            racing.xadd(job_stream(job.pk), encode(event, job.pk))
        racing.execute()
        ids = await ids_until(stream, 3, seconds=3)
        await stream.aclose()
        return ids

    try:
        assert asyncio.run(sent()) == [start + 1, start + 2, start + 3]
    finally:
        client().delete(job_stream(job.pk))


def xreads() -> int:
    return int(client().info("commandstats").get("cmdstat_xread", {}).get("calls", 0))


def test_twenty_streams_of_a_job_get_every_event_from_one_read_of_its_bus(alice):
    job, start = started_job(alice)

    async def sent() -> tuple[list[list[int]], int, list[int]]:
        streams = [await joined(job, start) for _ in range(20)]
        await asyncio.sleep(0.3)
        before = xreads()
        await asyncio.sleep(3)  # nothing comes: per-stream readers would wait on the bus 20 at a time
        quiet_reads = xreads() - before
        for n in range(200):
            eventlog.append(job.folder, "progress", {"progress": n / 200})
            if n % 7 == 0:
                Forwarder(job.pk, job.folder).forward()
        Forwarder(job.pk, job.folder).forward()
        got = [await ids_until(stream, 200) for stream in streams]
        late = feeds.follow(job.pk, job.folder, start + 190)  # a browser resuming after Last-Event-ID
        resumed = await ids_until(late, 10)
        for stream in [*streams, late]:
            await stream.aclose()
        return got, quiet_reads, resumed

    try:
        got, quiet_reads, resumed = asyncio.run(sent())
        assert all(ids == list(range(start + 1, start + 201)) for ids in got)
        assert quiet_reads <= 6, quiet_reads
        assert resumed == list(range(start + 191, start + 201))
        assert not feeds._feeds  # the last stream gone, its feed stopped
    finally:
        client().delete(job_stream(job.pk))
