"""A job's live events read once per web process, however many streams follow
the job.

With each job stream reading the job's Redis stream and its file for itself,
200 browsers on one training job meant 200 ``XREAD`` calls, 200 file reads
and 200 JSON decodes and encodes for every event, and the web process fell
so far behind that pages took seconds (``bench/load.py``). A ``Feed`` reads
the job's events the way one stream did: live from the job's Redis stream,
from ``events.jsonl`` while Redis is down (and whenever Redis skips one, the
file being the record), and keeps the last ``KEEP_EVENTS`` as ready SSE
frames. Each stream takes the frames after its own ``seq`` from there, or
from the file first when it is further behind (a browser resuming after
``Last-Event-ID``, a page opened on an older ``since``). The feed stops when
the last stream following it ends.

Streams see each event once, in ``seq`` order: every event reaches the file
before the bus, so a stream that has read the file up to some event finds
the feed's frames going on from there.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import redis

from . import bus, eventseek, sse

log = logging.getLogger(__name__)

KEEP_EVENTS = 1000


class Feed:
    """One job's events as SSE frames, for every stream of this event loop."""

    def __init__(self, job_id: int, folder: Path) -> None:
        self.job_id, self.folder = job_id, folder
        self.base = eventseek.last_seq(folder)  # the frames held are the events after this one
        self.seqs: list[int] = []
        self.frames: list[str] = []
        self.fresh = asyncio.Event()  # set, and replaced, when frames are added
        self.followers = 0
        self.task = asyncio.create_task(self._read())

    @property
    def last(self) -> int:
        return self.seqs[-1] if self.seqs else self.base

    def after(self, seq: int) -> tuple[int, str]:
        """The held frames after ``seq`` (at least ``base``), joined, and the
        last one's seq (``seq`` when there are none)."""
        start = bisect.bisect_right(self.seqs, seq)
        if start == len(self.seqs):
            return seq, ""
        return self.seqs[-1], "".join(self.frames[start:])

    def _add(self, events: list[dict[str, Any]]) -> None:
        added = False
        for event in events:
            if event["seq"] > self.last:
                self.seqs.append(event["seq"])
                self.frames.append(sse.frame(event, event_id=event["seq"]))
                added = True
        if not added:
            return
        if len(self.seqs) > 2 * KEEP_EVENTS:  # trimmed now and then, not at every event
            self.base = self.seqs[-KEEP_EVENTS - 1]
            del self.seqs[:-KEEP_EVENTS], self.frames[:-KEEP_EVENTS]
        self.fresh.set()
        self.fresh = asyncio.Event()

    async def _read(self) -> None:
        stream = bus.job_stream(self.job_id)
        reader = eventseek.reader_after(self.folder, self.base)
        position: str | None = None
        while True:
            if position is None:
                try:
                    position = await sse.stream_end(stream)  # noted before reading the file: no gap
                except redis.RedisError:
                    position = None
            self._add(reader.read())
            if position is None:  # Redis is down: poll the file, try Redis again soon
                await asyncio.sleep(sse.FILE_POLL_SECONDS)
                continue
            try:
                reply = await sse.redis_client().xread({stream: position}, block=sse.BLOCK_MS, count=500)
            except redis.RedisError as exc:
                log.info("live bus unavailable for job %s, reading its file: %s", self.job_id, exc)
                position = None
                continue
            live = []
            for _, entries in reply:
                for entry_id, fields in entries:
                    position = entry_id.decode()
                    live.append(bus.decode(fields)[1])
            if live and live[0]["seq"] > self.last + 1:
                self._add(reader.read())  # the file has what the bus skipped
            self._add(live)


_feeds: dict[tuple[int, int], Feed] = {}


def _join(job_id: int, folder: Path) -> Feed:
    key = (id(asyncio.get_running_loop()), job_id)
    if key not in _feeds or _feeds[key].task.done():
        _feeds[key] = Feed(job_id, folder)
    feed = _feeds[key]
    feed.followers += 1
    return feed


def _leave(job_id: int, feed: Feed) -> None:
    feed.followers -= 1
    if feed.followers == 0:
        feed.task.cancel()
        key = (id(asyncio.get_running_loop()), job_id)
        if _feeds.get(key) is feed:
            del _feeds[key]


def _history(folder: Path, after_seq: int) -> tuple[int, str]:
    """The file's events after ``after_seq`` as frames, joined, and the last one's seq."""
    events = eventseek.reader_after(folder, after_seq).read()
    frames = "".join(sse.frame(event, event_id=event["seq"]) for event in events)
    return (events[-1]["seq"] if events else after_seq), frames


async def follow(job_id: int, folder: Path, after_seq: int) -> AsyncIterator[str]:
    """A job page's stream: the events after ``after_seq``, then live ones as
    they come, with resource updates and keep-alives between."""
    extras = sse.Extras()
    feed = _join(job_id, folder)
    try:
        yield "retry: 1000\n\n"
        while True:
            woken = feed.fresh
            if after_seq < feed.base:  # further behind than the feed holds
                after_seq, frames = _history(folder, after_seq)
                if frames:
                    yield frames
            after_seq, frames = feed.after(after_seq)
            if frames:
                yield frames
            async for extra in extras.frames():
                yield extra
            if feed.task.done():
                feed.task.result()  # the feed failed: end the stream with its error, the browser reconnects
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(sse.BLOCK_MS / 1000):  # no task per wait, unlike wait_for
                    await woken.wait()
    finally:
        _leave(job_id, feed)
