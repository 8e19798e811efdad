"""A job's live events read once per web process, however many streams
follow the job.

With each job stream reading the job's Redis stream and file for itself,
every event cost every stream an ``XREAD`` and its reply's decoding: 500
browsers on one training job fell seconds behind (``bench/load.py``). A
``Feed`` reads the job's events as each stream did before: live from the
bus, from ``events.jsonl`` on joining, on a gap, while Redis is down and
when the bus was quiet while the file grew. It keeps the last
``KEEP_EVENTS`` as ready SSE frames; each stream takes the frames after its
own ``seq`` from there, or from the file first when it is further behind (a
browser resuming after ``Last-Event-ID``). The feed stops when the last
stream following it ends.

Twice before a shared reader was withdrawn over a lost event. One cause was
the page's (``live.js`` opened its stream before the page's module had
subscribed, fixed since). The other was this reader's: it looked for a gap
only before the first event of a reply, so a reply that carried ``n+1, n+3,
n+2`` (two processes forwarding the same file race on the bus) sent ``n+3``
and dropped ``n+2`` as already sent. Every event is checked now
(``tests/jobs/test_feeds.py``).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import redis

from trainer import eventlog

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

    def _hold(self, seq: int, text: str) -> None:
        self.seqs.append(seq)
        self.frames.append(text)

    def _wake(self) -> None:
        if len(self.seqs) > 2 * KEEP_EVENTS:  # trimmed now and then, not at every event
            self.base = self.seqs[-KEEP_EVENTS - 1]
            del self.seqs[:-KEEP_EVENTS], self.frames[:-KEEP_EVENTS]
        self.fresh.set()
        self.fresh = asyncio.Event()

    def _read_file(self, reader: eventlog.Reader) -> eventlog.Reader:
        """Hold the file's events after the last one held; the reader that
        read them (a new one when live events left the old one behind)."""
        if reader.after_seq < self.last:
            reader = eventseek.reader_after(self.folder, self.last)
        for event in reader.read():
            if event["seq"] == self.last + 1:
                self._hold(event["seq"], sse.frame(event, event_id=event["seq"]))
        return reader

    async def _read(self) -> None:
        stream = bus.job_stream(self.job_id)
        reader = eventseek.reader_after(self.folder, self.base)
        quiet = sse.QuietCheck(self.folder)
        position: str | None = None
        while True:
            held = len(self.seqs)
            if position is None:
                try:
                    position = await sse.stream_end(stream)  # noted before reading the file: no gap
                except redis.RedisError:
                    position = None
                reader = self._read_file(reader)
                if len(self.seqs) != held:
                    self._wake()
                    held = len(self.seqs)
            if position is None:  # Redis is down: poll the file, try Redis again soon
                await asyncio.sleep(sse.FILE_POLL_SECONDS)
                continue
            try:
                reply = await sse.redis_client().xread({stream: position}, block=sse.BLOCK_MS, count=500)
            except redis.RedisError as exc:
                log.info("live bus unavailable for job %s, reading its file: %s", self.job_id, exc)
                position = None
                continue
            if not reply and quiet.file_grew():  # what never reached the bus: the file has it
                reader = self._read_file(reader)
            for _, entries in reply:
                for entry_id, fields in entries:
                    position = entry_id.decode()
                    seq = int(fields[b"seq"])
                    if seq > self.last + 1:  # the bus skipped some: the file has them
                        reader = self._read_file(reader)
                    if seq == self.last + 1:
                        self._hold(seq, sse.live_frame(seq, fields))
            if len(self.seqs) != held:
                self._wake()


_feeds: dict[tuple[int, int], Feed] = {}


def _join(job_id: int, folder: Path) -> Feed:
    loop = asyncio.get_running_loop()
    key = (id(loop), job_id)
    # A feed left by a closed loop whose id came round again does not count.
    if key not in _feeds or _feeds[key].task.done() or _feeds[key].task.get_loop() is not loop:
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
    """A job page's stream: the events after ``after_seq``, each once, in
    ``seq`` order, then live ones as they come, with resource updates and
    keep-alives between."""
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
