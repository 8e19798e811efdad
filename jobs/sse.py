"""Server-Sent Events: one stream per page.

- a job's page: the job's events, first its history from ``events.jsonl``
  (after ``Last-Event-ID`` or ``?since=``, read from where those begin),
  then live from its Redis stream, read once for all its streams
  (``jobs.feeds``);
  each event's SSE id is its ``seq``, so a reconnecting browser misses none;
- list pages: the status and progress of every job, from the shared stream,
  with Redis stream ids as SSE ids;
- every stream also carries ``resources`` events (free devices) when they change.

When Redis is unreachable, job streams read the file instead and list
streams wait; when Redis is back they carry on, and list streams send a
``resync`` event so the page reloads its list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import redis
from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse

from trainer import eventlog
from web.api import error

from . import bus, resources

log = logging.getLogger(__name__)

BLOCK_MS = 1000
KEEPALIVE_SECONDS = 15.0
RESOURCES_EVERY_SECONDS = 2.0
RECONNECT_EVERY_SECONDS = 1.0
FILE_POLL_SECONDS = 0.25


def frame(data: Any, event: str | None = None, event_id: str | int | None = None) -> str:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event:
        lines.append(f"event: {event}")
    lines.append("data: " + json.dumps(data, separators=(",", ":")))
    return "\n".join(lines) + "\n\n"


class _Cached:
    """One computation shared by every stream in this process for ``ttl`` seconds."""

    def __init__(self, compute: Any, ttl: float) -> None:
        self.compute, self.ttl = sync_to_async(compute), ttl
        self.value: Any = None
        self.at = 0.0
        self.lock = asyncio.Lock()

    async def get(self) -> Any:
        async with self.lock:
            if time.monotonic() - self.at >= self.ttl:
                self.value = await self.compute()
                self.at = time.monotonic()
        return self.value


free_counts = _Cached(resources.free_counts, ttl=RESOURCES_EVERY_SECONDS / 2)
snapshot = _Cached(resources.snapshot, ttl=RESOURCES_EVERY_SECONDS / 2)

_clients: dict[int, Any] = {}


def redis_client() -> Any:
    """This event loop's client (one pool per loop)."""
    loop = id(asyncio.get_running_loop())
    if loop not in _clients:
        _clients[loop] = bus.async_client()
    return _clients[loop]


class Ticker:
    """Says when a periodic side-duty (keep-alive, resources) is due."""

    def __init__(self, every: float) -> None:
        self.every, self.last = every, 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            return True
        return False


class Extras:
    """Keep-alive comments and resource updates, mixed into any stream."""

    def __init__(self, detailed: bool = False) -> None:
        self.keepalive = Ticker(KEEPALIVE_SECONDS)
        self.resources = Ticker(RESOURCES_EVERY_SECONDS)
        self.detailed = detailed
        self.sent: Any = None
        self.keepalive.last = time.monotonic()

    async def frames(self) -> AsyncIterator[str]:
        if self.resources.due():
            value = await (snapshot.get() if self.detailed else free_counts.get())
            if value != self.sent:
                self.sent = value
                yield frame(value, event="resources")
        if self.keepalive.due():
            yield ": keep-alive\n\n"


async def stream_end(stream: str) -> str:
    last = await redis_client().xrevrange(stream, count=1)
    return last[0][0].decode() if last else "0-0"


def live_frame(seq: int, fields: dict[bytes, bytes]) -> str:
    """An event from the bus as its frame: the bus carries it as the same
    JSON a frame holds, so it is not decoded and encoded again per stream."""
    return f"id: {seq}\ndata: {fields[b'event'].decode()}\n\n"


class QuietCheck:
    """Tells a job's reader whose bus was quiet for a whole ``BLOCK_MS`` whether
    the job's file grew since it last asked: one ``stat`` a quiet second.

    An event can reach the file and never the bus: the process that wrote
    it gives up on Redis when Redis stalls past its socket timeout (an
    append-only file's fsync on a busy disk, a starved server) and keeps no
    copy to send later. A later event on the bus shows the gap, but after a
    job's last event (its final status) none comes."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / eventlog.FILENAME
        self.size = self._size()

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def file_grew(self) -> bool:
        size = self._size()
        grew, self.size = size != self.size, size
        return grew


async def jobs_events(since: str | None, detailed: bool = False) -> AsyncIterator[str]:
    """Every job's status and progress from the bus's jobs stream, each once
    and in its job's order: two processes' Forwarders racing on one job's
    file (a status published while the worker's resend of unsent events reads
    that file) both put its new events on the bus, so an event whose ``seq``
    is not past its job's last one sent here is dropped."""
    stream = bus.jobs_stream()
    extras = Extras(detailed=detailed)
    position = since
    newest: dict[int, int] = {}  # each job's last seq sent on this connection
    yield "retry: 1000\n\n"
    if position is None:
        # Note where the stream ends before telling the page to load its list,
        # so whatever happens after that load reaches the page.
        try:
            position = await stream_end(stream)
        except redis.RedisError:
            position = None
        yield frame({}, event="resync")
    down_since: float | None = None
    while True:
        async for extra in extras.frames():
            yield extra
        try:
            if position is None:
                position = await stream_end(stream)
            if down_since is not None:
                down_since = None
                yield frame({}, event="resync")  # what happened while Redis was away
            reply = await redis_client().xread({stream: position}, block=BLOCK_MS, count=500)
        except redis.RedisError as exc:
            if down_since is None:
                log.info("live bus unavailable for the job list: %s", exc)
                down_since = time.monotonic()
            position = None
            await asyncio.sleep(RECONNECT_EVERY_SECONDS)
            continue
        for _, entries in reply:
            for entry_id, fields in entries:
                position = entry_id.decode()
                job_id, event = bus.decode(fields)
                if event["seq"] <= newest.get(job_id, 0):
                    continue
                newest[job_id] = event["seq"]
                yield frame({"job": job_id, **event}, event_id=position)


def event_stream(iterator: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(iterator, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # tell proxies not to buffer
    return response


async def signed_in(request: HttpRequest) -> JsonResponse | None:
    user = await request.auser()
    if not user.is_authenticated:
        return error("Sign in to follow live events.", 401)
    return None
