"""A long job's page and stream read only what they need of its
``events.jsonl``: from the end, or from the event a stream resumes after.
Measured as the bytes this process reads (``rchar`` in ``/proc/self/io``)
against a generated file of a quarter of a million events."""

import asyncio
import json

import pytest
from django.test import Client

from jobs import sse
from jobs.bus import Forwarder, client, job_stream
from jobs.models import Job, Status
from trainer import events as eventlog

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

    async def first_frames(after: int, count: int) -> list[str]:
        stream = sse.job_events(week_long.pk, week_long.folder, after)
        frames = [frame async for frame in _take(stream, count)]
        await stream.aclose()
        return frames

    before = bytes_read()
    frames = asyncio.run(first_frames(last - 3, 4))
    assert bytes_read() - before < BOUND
    assert [f.split("\n")[0] for f in frames[1:]] == [f"id: {seq}" for seq in (last - 2, last - 1, last)]


def test_a_new_forwarder_reads_only_what_the_stream_lacks(week_long):
    Forwarder(week_long.pk, week_long.folder).forward()  # the stream has it all now
    eventlog.append(week_long.folder, "progress", {"progress": 0.5})
    before = bytes_read()
    fresh = Forwarder(week_long.pk, week_long.folder).forward()
    assert bytes_read() - before < BOUND
    assert [e["kind"] for e in fresh] == ["progress"]


async def _take(stream, count: int):
    async for frame in stream:
        yield frame
        count -= 1
        if not count:
            return
