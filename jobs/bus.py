"""The live bus: Redis streams that carry job events to the browsers.

The job folder's ``events.jsonl`` is the record; the bus only carries it.
Each job has a stream (``<prefix>:events:job:<id>``) with every event, and one
shared stream (``<prefix>:events:jobs``) carries the status and progress of all
jobs for list pages. Losing Redis loses nothing: a ``Forwarder`` pushes what
the file holds and the stream lacks once Redis is back, and readers fall back
to the file meanwhile.
"""

from __future__ import annotations

import json
import logging
import os
from functools import cache
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

from trainer import eventkinds, eventlog

from . import eventseek

log = logging.getLogger(__name__)

STREAM_MAXLEN = 20_000
# Events a Forwarder sends to Redis in one transaction.
SEND_BATCH = 1000
STREAM_TTL_SECONDS = 7 * 24 * 3600
# Event kinds that list pages need besides the job's own page.
SUMMARY_KINDS = (eventkinds.STATUS, eventkinds.PROGRESS)


def key(*parts: object) -> str:
    return ":".join([settings.REDIS_PREFIX, *map(str, parts)])


def job_stream(job_id: int) -> str:
    return key("events", "job", job_id)


def jobs_stream() -> str:
    return key("events", "jobs")


# How long a caller waits for a free connection of a full pool.
POOL_WAIT_SECONDS = 3


def _pool_options() -> dict[str, Any]:
    """Bounded pools (``REDIS_MAX_CONNECTIONS``), with connections named after
    the process so that ``CLIENT LIST`` shows who holds them."""
    return {"max_connections": settings.REDIS_MAX_CONNECTIONS, "timeout": POOL_WAIT_SECONDS,
            "socket_connect_timeout": 2, "health_check_interval": 10,
            "client_name": f"{settings.REDIS_PREFIX}:{os.getpid()}"}


@cache
def client() -> redis.Redis:
    pool = redis.BlockingConnectionPool.from_url(settings.REDIS_URL, socket_timeout=5, **_pool_options())
    return redis.Redis(connection_pool=pool)


def async_client() -> aioredis.Redis:
    """A client for the calling event loop's own connection pool."""
    return aioredis.Redis(connection_pool=aioredis.BlockingConnectionPool.from_url(settings.REDIS_URL,
                                                                                 **_pool_options()))


def encode(event: dict[str, Any], job_id: int) -> dict[str, str]:
    return {"job": str(job_id), "seq": str(event["seq"]), "event": json.dumps(event, separators=(",", ":"))}


def forget(job_id: int) -> None:
    """Drop a job's stream. A new job starts with none: a stream left under
    the same id (a database made anew while Redis kept its streams, or test
    databases that hand ids out again) would make its Forwarder skip the new
    job's events as already sent."""
    try:
        client().delete(job_stream(job_id))
    except redis.RedisError as exc:
        log.warning("could not clear the event stream of job %s: %s", job_id, exc)


def decode(fields: dict[bytes, bytes]) -> tuple[int, dict[str, Any]]:
    return int(fields[b"job"]), json.loads(fields[b"event"])


class Forwarder:
    """Pushes a job's events from its file to the bus, each once per Forwarder.

    ``forward()`` reads only what the file gained since the last call. When
    Redis is down the events wait in memory, and the next call sends them.
    A reader may still see an event twice (two Forwarders racing); events
    carry their ``seq``, and readers skip what they have.
    """

    def __init__(self, job_id: int, job_dir: Path) -> None:
        self.job_id = job_id
        self.reader = eventlog.Reader(job_dir)
        self.pending: list[dict[str, Any]] = []
        self.synced = False
        self.skip_through = 0

    def _sync_start(self) -> None:
        """Note what the stream already has, so a new Forwarder sends only the
        rest; one that has read nothing yet starts reading after it."""
        last = client().xrevrange(job_stream(self.job_id), count=1)
        self.skip_through = int(last[0][1][b"seq"]) if last else 0
        self.synced = True
        self.pending = [e for e in self.pending if e["seq"] > self.skip_through]
        if self.reader.tail.offset == 0:
            self.reader.tail.offset = eventseek.offset_after(self.reader.tail.path.parent, self.skip_through)

    def forward(self) -> list[dict[str, Any]]:
        """Return the events the file gained since the last call (a new
        Forwarder: since what the stream has), and send them with any that
        could not be sent before."""
        try:
            if not self.synced:
                self._sync_start()
        except redis.RedisError as exc:
            log.warning("event bus unavailable, job %s events wait in its file: %s", self.job_id, exc)
        fresh = self.reader.read()
        self.pending.extend(fresh)
        if self.synced and self.pending:
            try:
                self._send_pending()
            except redis.RedisError as exc:
                log.warning("event bus unavailable, job %s events wait in its file: %s", self.job_id, exc)
        return fresh

    def _send_pending(self) -> None:
        """Send ``pending`` in transactions of ``SEND_BATCH``, each taken off
        ``pending`` once Redis has it, so that a slow Redis answers every
        one within the socket's timeout and a failure resends only the
        rest. A transaction (``MULTI``), not a plain pipeline: Redis wakes a
        reader blocked on the stream once for all its events, not at the
        first (500 streams of a job: half the delay, ``bench/load.py``).

        Of a backlog longer than the stream keeps (a new Forwarder on a long
        file, Redis back after a long outage) only the last ``STREAM_MAXLEN``
        are sent: Redis would trim the others at once, and a reader further
        behind reads them from the file."""
        del self.pending[:-STREAM_MAXLEN]
        while self.pending:
            pipe = client().pipeline(transaction=True)
            for event in self.pending[:SEND_BATCH]:
                fields = encode(event, self.job_id)
                pipe.xadd(job_stream(self.job_id), fields, maxlen=STREAM_MAXLEN, approximate=True)
                if event["kind"] in SUMMARY_KINDS:
                    pipe.xadd(jobs_stream(), fields, maxlen=STREAM_MAXLEN, approximate=True)
            pipe.expire(job_stream(self.job_id), STREAM_TTL_SECONDS)
            pipe.execute()
            del self.pending[:SEND_BATCH]
