"""A long job's page and stream read only what they need of its
``events.jsonl``: from the end, or from the event a stream resumes after.
Measured as the bytes this process reads (``rchar`` in ``/proc/self/io``)
against a generated file of a quarter of a million events. And a stream
sends each event once, in order, whatever the bus skips or repeats."""

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.conf import settings
from django.test import Client

from jobs import bus, eventseek, feeds
from jobs.bus import Forwarder, client, decode, encode, job_stream
from jobs.models import Job, Status
from trainer import eventlog

EVENTS = 250_000
BOUND = 2 * 1024 * 1024  # bytes a page or a resumed stream may read; the file holds over 30 MiB


def bytes_read() -> int:
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.fixture
def week_long(alice):
    job = Job.objects.create(kind="sleep", name="a week of events", owner=alice, resources={"device": "cpu"})
    job.transition(Status.WAITING, frm=[Status.QUEUED], message="Claimed")
    job.transition(Status.RUNNING, frm=[Status.WAITING], message="Running")
    with open(job.folder / eventlog.FILENAME, "a") as handle:
        start = eventlog.Reader(job.folder).read()[-1]["seq"] + 1
        for seq in range(start, start + EVENTS):
            event = {"seq": seq, "t": 1.7e9 + seq, "kind": "train",
                     "data": {"step": seq, "loss": 1.0 / seq, "lr": 0.01, "images_per_s": 1234.5}}
            handle.write(json.dumps(event, separators=(",", ":")) + "\n")
    assert (job.folder / eventlog.FILENAME).stat().st_size > 30 * 1024 * 1024
    yield job
    client().delete(job_stream(job.pk))


def test_a_long_jobs_page_reads_a_bounded_amount(alice, week_long):
    browser = Client()
    browser.force_login(alice)
    browser.get(f"/jobs/{week_long.pk}/")  # templates and code loaded once
    before = bytes_read()
    page = browser.get(f"/jobs/{week_long.pk}/")
    assert bytes_read() - before < BOUND
    last = week_long.transitions.count() + EVENTS
    assert page.status_code == 200 and f"?since={last}" in page.content.decode()
    assert "Claimed" in page.content.decode() and "Running" in page.content.decode()


def test_a_resumed_stream_reads_from_where_it_resumes(week_long):
    last = week_long.transitions.count() + EVENTS
    before = bytes_read()
    ids = asyncio.run(event_ids(week_long, last - 3, 3))
    assert bytes_read() - before < BOUND
    assert ids == [last - 2, last - 1, last]


def test_a_new_forwarder_reads_only_what_the_stream_lacks(week_long):
    Forwarder(week_long.pk, week_long.folder).forward()  # the stream has it all now
    eventlog.append(week_long.folder, "progress", {"progress": 0.5})
    before = bytes_read()
    fresh = Forwarder(week_long.pk, week_long.folder).forward()
    assert bytes_read() - before < BOUND
    assert [e["kind"] for e in fresh] == ["progress"]


def pipelines_and_adds() -> tuple[int, int]:
    """Pipelines and ``XADD``s this test's Redis ran since its counts were
    reset: a Forwarder's pipeline ends with one ``EXPIRE``. Each process of
    the suite has its own Redis, so the counts are this test's alone."""
    stats = client().info("commandstats")
    return (stats.get("cmdstat_expire", {}).get("calls", 0), stats.get("cmdstat_xadd", {}).get("calls", 0))


def test_a_backlog_longer_than_the_stream_keeps_sends_its_tail_in_bounded_pipelines(week_long):
    """A new Forwarder on a file of a quarter of a million events sent them
    all in one pipeline: on a loaded machine Redis took longer than the
    socket's 5 s timeout to answer, nothing was marked sent, and each try
    sent the whole backlog again. Now it sends the last ``STREAM_MAXLEN``
    (what the stream keeps) in pipelines of ``SEND_BATCH``."""
    assert (bus.STREAM_MAXLEN, bus.SEND_BATCH) == (20_000, 1000)
    last = week_long.transitions.count() + EVENTS
    client().config_resetstat()
    Forwarder(week_long.pk, week_long.folder).forward()
    assert pipelines_and_adds() == (20, 20_000)  # train events: none for the list pages' stream
    kept = [int(fields[b"seq"]) for _, fields in client().xrange(job_stream(week_long.pk))]
    assert kept[-bus.STREAM_MAXLEN:] == list(range(last - bus.STREAM_MAXLEN + 1, last + 1))
    assert set(kept[:-bus.STREAM_MAXLEN]) <= {1, 2}  # the two statuses the transitions published


@pytest.mark.parametrize("backlog, pipelines", [(999, 1), (2500, 3)], ids=["under-a-batch", "three-batches"])
def test_a_backlog_the_stream_keeps_is_sent_whole_a_batch_per_pipeline(alice, backlog, pipelines):
    job = Job.objects.create(kind="sleep", name="backlog", owner=alice, resources={"device": "cpu"})
    job.folder.mkdir(parents=True)
    for step in range(backlog):
        eventlog.append(job.folder, "progress" if step % 100 == 0 else "train", {"step": step})
    client().config_resetstat()
    try:
        Forwarder(job.pk, job.folder).forward()
        summaries = len(range(0, backlog, 100))
        assert pipelines_and_adds() == (pipelines, backlog + summaries)
        sent = [int(fields[b"seq"]) for _, fields in client().xrange(job_stream(job.pk))]
        assert sent == list(range(1, backlog + 1))
    finally:
        client().delete(job_stream(job.pk))


def test_a_reader_waiting_on_the_bus_gets_a_reports_events_in_one_reply(alice):
    """A training report appends three events together. Sent as a pipeline
    of single commands, a reader blocked on the job's stream woke for the
    first and came back for the others: each of 500 streams of a job was
    woken three times a report. Sent in one transaction, once."""
    job = Job.objects.create(kind="sleep", name="a report", owner=alice, resources={"device": "cpu"})
    job.folder.mkdir(parents=True)
    eventlog.append(job.folder, "log", {"lines": ["before"]})
    forwarder = Forwarder(job.pk, job.folder)
    forwarder.forward()
    end = client().xrevrange(job_stream(job.pk), count=1)[0][0]
    reader = redis.Redis.from_url(settings.REDIS_URL)
    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(reader.xread, {job_stream(job.pk): end}, block=20_000)
            deadline = time.monotonic() + 10
            while client().info("clients")["blocked_clients"] < 1:
                assert time.monotonic() < deadline, "the reader never blocked"
                time.sleep(0.01)
            for kind in ("train", "progress", "perf"):
                eventlog.append(job.folder, kind, {"step": 1})
            forwarder.forward()
            [(_, entries)] = reply.result(timeout=20)
        assert [decode(fields)[1]["kind"] for _, fields in entries] == ["train", "progress", "perf"]
    finally:
        reader.close()
        client().delete(job_stream(job.pk))


def test_a_stream_sends_what_the_bus_skipped_from_the_file_and_what_it_repeats_once(alice):
    job = Job.objects.create(kind="sleep", name="gaps", owner=alice, resources={"device": "cpu"})
    job.folder.mkdir(parents=True)
    start = eventlog.append(job.folder, "log", {"lines": ["before the stream"]})["seq"]

    async def sent() -> list[int]:
        stream = feeds.follow(job.pk, job.folder, start)
        assert await anext(stream) == "retry: 1000\n\n"
        # The stream has noted where the bus ends and read the file when it
        # sends its first resources: what follows reaches it only by the bus.
        assert (await anext(stream)).startswith("event: resources")
        skipped = eventlog.append(job.folder, "log", {"lines": ["never on the bus"]})
        repeated = eventlog.append(job.folder, "progress", {"progress": 0.5})
        for _ in range(2):
            client().xadd(job_stream(job.pk), encode(repeated, job.pk))
        last = eventlog.append(job.folder, "progress", {"progress": 0.75})
        client().xadd(job_stream(job.pk), encode(last, job.pk))
        ids = []
        async with asyncio.timeout(30):
            while len(ids) < 3:
                ids += [int(line.removeprefix("id: ")) for line in (await anext(stream)).split("\n")
                        if line.startswith("id: ")]
        await stream.aclose()
        assert [skipped["seq"], repeated["seq"], last["seq"]] == [start + 1, start + 2, start + 3]
        return ids

    try:
        assert asyncio.run(sent()) == [start + 1, start + 2, start + 3]
    finally:
        client().delete(job_stream(job.pk))


async def event_ids(job: Job, after: int, count: int) -> list[int]:
    """The ids of the first ``count`` events a job's stream sends after ``after``."""
    stream = feeds.follow(job.pk, job.folder, after)
    ids: list[int] = []
    async for text in stream:
        ids += [int(line.removeprefix("id: ")) for line in text.split("\n") if line.startswith("id: ")]
        if len(ids) >= count:
            break
    await stream.aclose()
    return ids


@pytest.mark.parametrize("events", [5, 400], ids=["under-a-chunk", "many-chunks"])
def test_reads_from_the_end_find_every_event_in_a_file_of_one_chunk_or_many(tmp_path, events):
    """The file is read back from its end ``CHUNK_BYTES`` (64 KiB) at a
    time: a file under one chunk, and one of many whose lines end on every
    side of a chunk's start, one line longer than two chunks, and a last
    line still being written. Each seq's offset, the tail and the last seq
    match a read from the start."""
    assert eventseek.CHUNK_BYTES == 64 * 1024
    lines, offsets = [], {0: 0}
    for seq in range(1, events + 1):
        size = 200 * 1024 if seq == 200 else (seq * 997) % 700
        lines.append(json.dumps({"seq": seq, "t": 0, "kind": "log", "data": {"text": "x" * size}}) + "\n")
        offsets[seq] = offsets[seq - 1] + len(lines[-1])
    (tmp_path / eventlog.FILENAME).write_text("".join(lines) + '{"seq": ' + str(events + 1))
    assert (offsets[events] < 64 * 1024) == (events == 5)
    assert eventseek.last_seq(tmp_path) == events
    assert [eventseek.offset_after(tmp_path, seq) for seq in offsets] == list(offsets.values())
    assert [e["seq"] for e in eventseek.tail(tmp_path, 3)] == list(range(events - 2, events + 1))
    assert [e["seq"] for e in eventseek.tail(tmp_path, events + 1)] == list(range(1, events + 1))


@pytest.mark.parametrize("behind", [1000, 25_000], ids=["within-the-stream", "past-the-trimmed-stream"])
def test_a_stream_left_behind_sends_every_event_once_in_order(alice, behind):
    """The bus keeps about the last ``STREAM_MAXLEN`` (20,000) events of a
    job. A page's stream that has not read while ``behind`` events came
    reads them from the bus (1,000), or, when the bus lacks the first of
    them (25,000: the Forwarder sends only what the stream keeps), from
    the file; either way each once, in order."""
    assert bus.STREAM_MAXLEN == 20_000
    job = Job.objects.create(kind="sleep", name="behind", owner=alice, resources={"device": "cpu"})
    job.folder.mkdir(parents=True)
    start = eventlog.append(job.folder, "log", {"lines": ["before the stream"]})["seq"]
    Forwarder(job.pk, job.folder).forward()

    async def sent() -> list[int]:
        stream = feeds.follow(job.pk, job.folder, start)
        assert await anext(stream) == "retry: 1000\n\n"
        assert (await anext(stream)).startswith("event: resources")  # the stream has noted where the bus ends
        with open(job.folder / eventlog.FILENAME, "a") as handle:
            for seq in range(start + 1, start + behind + 1):
                handle.write(json.dumps({"seq": seq, "t": 1.7e9, "kind": "progress",
                                         "data": {"progress": seq / behind}}, separators=(",", ":")) + "\n")
        Forwarder(job.pk, job.folder).forward()
        on_the_bus = {int(fields[b"seq"]) for _, fields in client().xrange(job_stream(job.pk))}
        assert (start + 1 in on_the_bus) == (behind < bus.STREAM_MAXLEN)
        ids: list[int] = []
        async with asyncio.timeout(60):
            while len(ids) < behind:
                ids += [int(line.removeprefix("id: ")) for line in (await anext(stream)).split("\n")
                        if line.startswith("id: ")]
        await stream.aclose()
        return ids

    try:
        assert asyncio.run(sent()) == list(range(start + 1, start + behind + 1))
    finally:
        client().delete(job_stream(job.pk))
