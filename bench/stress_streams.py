"""The readers of ``bench/stream_stress.py``: job page streams through the web
server (SSE, as a browser's ``EventSource`` reads them) and, for the
baseline, bare Redis ``XREAD`` loops on the same jobs' streams. Each runs in
a client process (asyncio) and checks what it received.

A reader stops once it has the job's last event (``final``), or at the
deadline. SSE frames are cut from the bytes as they come and only the
``id`` and the event's ``t`` are read from each: decoding every event's JSON
would make the clients, not the server, what limits the rate.
"""

from __future__ import annotations

import asyncio
import random
import time
from array import array
from dataclasses import dataclass, field

PAGE_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 30


@dataclass
class Reader:
    """What one stream must get: every event of job ``job`` up to ``final``.
    A ``drops`` stream disconnects at random moments and reconnects with
    ``Last-Event-ID``; a ``late`` one joins a random moment after the
    writers start (within ``join_within`` seconds), so reads history first."""

    job: int
    final: int
    cookie: str = ""
    drops: bool = False
    late: bool = False


@dataclass
class Received:
    seqs: array = field(default_factory=lambda: array("q"))
    delays: array = field(default_factory=lambda: array("d"))
    reconnects: int = 0
    last_arrival: float = 0.0
    joined: float = float("inf")
    last_id: int = 0  # taken with each event, as EventSource does: a dropped connection keeps it

    def add(self, seq: int, written: float, now: float) -> None:
        """Note an event; its delay counts if it was written once the reader
        had joined (what came before is history, not late)."""
        self.seqs.append(seq)
        self.last_id = seq
        if written >= self.joined:
            self.delays.append(now - written)
        self.last_arrival = now


@dataclass
class Check:
    """One stream's verdict against the events 1..final: ``lost`` are those
    it never got before a later one, ``unreached`` those after the last it
    got (a stream cut short by the deadline)."""

    received: int
    lost: int
    repeated: int
    disordered: int
    unreached: int
    reconnects: int


def check(seqs, final: int, reconnects: int = 0) -> Check:
    """Count the events never received, received more than once, received
    after a later one (their first time), and not reached."""
    seen: set[int] = set()
    repeated = disordered = highest = 0
    for seq in seqs:
        if seq in seen:
            repeated += 1
            continue
        seen.add(seq)
        if seq < highest:
            disordered += 1
        highest = max(highest, seq)
    reached = min(highest, final)
    lost = reached - sum(1 for seq in seen if 1 <= seq <= reached)
    return Check(len(seqs), lost, repeated, disordered, final - reached, reconnects)


def parse(frame: bytes) -> tuple[int, float] | None:
    """A job event frame's seq and ``t``; None for the rest (the retry
    advice, keep-alives, ``resources``). A frame whose id is not its data's
    seq is an error."""
    if not frame.startswith(b"id: "):
        return None
    head, _, data = frame.partition(b"\ndata: ")
    seq = int(head[4:])
    if not data.startswith(b'{"seq":%d,"t":' % seq):
        raise ValueError(f"frame id {seq} does not match its data: {data[:60]!r}")
    return seq, float(data.split(b',"t":', 1)[1].split(b",", 1)[0])


async def follow(client, url: str, reader: Reader, go: asyncio.Event, join_within: float, until: float,
                 got: Received, opened: list, errors: list) -> None:
    """One browser on a job page: the stream from the first event
    (``?since=0``), reconnected after ``Last-Event-ID`` as ``EventSource``
    does, until it has event ``final``."""
    import httpx

    rng = random.Random()
    if reader.late:
        await go.wait()
        await asyncio.sleep(rng.uniform(0, join_within))
    first = True
    while got.last_id < reader.final and time.time() < until:
        headers = {"Last-Event-ID": str(got.last_id)} if got.last_id else {}
        cut_at = time.monotonic() + rng.uniform(0.2, 2.0) if reader.drops else float("inf")
        try:
            async with client.stream("GET", f"{url}/jobs/{reader.job}/events?since=0", headers=headers) as response:
                if response.status_code != 200:
                    errors.append(f"stream refused: {response.status_code}")
                    await asyncio.sleep(1)
                    continue
                if first:
                    first = False
                    got.joined = time.time()
                    opened.append(got.joined)
                else:
                    got.reconnects += 1
                await _read(response, reader, cut_at, until, got)
        except httpx.HTTPError as exc:
            errors.append(f"stream dropped: {type(exc).__name__}")


async def _read(response, reader: Reader, cut_at: float, until: float, got: Received) -> None:
    """Take frames until the last event, the moment to cut the connection,
    or the deadline (only whole frames count, as in a browser)."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        *frames, buffer = (buffer + chunk).split(b"\n\n")
        now = time.time()
        for frame in frames:
            if event := parse(frame):
                got.add(event[0], event[1], now)
        if got.last_id >= reader.final or time.monotonic() > cut_at or now > until:
            break


async def xread(redis_url: str, stream: str, reader: Reader, until: float, got: Received, opened: list) -> None:
    """The baseline's reader: a bare ``XREAD`` loop on the job's stream from
    its start, taking each entry's seq and ``t`` as the SSE reader does."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    position, last = "0-0", 0
    got.joined = time.time()
    opened.append(got.joined)
    try:
        while last < reader.final and time.time() < until:
            reply = await client.xread({stream: position}, block=1000, count=500)
            now = time.time()
            for _, entries in reply:
                for entry_id, fields in entries:
                    position = entry_id
                    seq = int(fields[b"seq"])
                    if seq == last + 1:  # the bus may carry an event twice: the first one counts
                        got.add(seq, float(fields[b"event"].split(b',"t":', 1)[1].split(b",", 1)[0]), now)
                        last = seq
    finally:
        await client.aclose()


def run(kind: str, target: str, readers: list[Reader], join_within: float, until: float,
        ready, go, results) -> None:
    """A client process: open its readers (the late ones after ``go``), set
    ``ready`` once the others are open, and put the verdicts, the delays
    and the errors in ``results`` when all are done or at ``until``."""

    async def main() -> None:
        import httpx

        opened: list[float] = []
        errors: list[str] = []
        started = asyncio.Event()
        gots = [Received() for _ in readers]
        clients = {}
        if kind == "sse":
            clients = {cookie: httpx.AsyncClient(cookies={"sessionid": cookie}, limits=httpx.Limits(max_connections=None),
                                                 timeout=httpx.Timeout(PAGE_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS))
                       for cookie in {r.cookie for r in readers}}
            tasks = [asyncio.create_task(follow(clients[r.cookie], target, r, started, join_within, until, got, opened,
                                                errors)) for r, got in zip(readers, gots, strict=True)]
        else:
            from jobs.bus import job_stream

            tasks = [asyncio.create_task(xread(target, job_stream(r.job), r, until, got, opened))
                     for r, got in zip(readers, gots, strict=True)]
        early = sum(not r.late for r in readers)
        while len(opened) < early and time.time() < until:
            await asyncio.sleep(0.05)
        ready.set()
        await asyncio.to_thread(go.wait, max(0.0, until - time.time()))
        started.set()
        done, late = await asyncio.wait(tasks, timeout=max(0.0, until - time.time()) + 5)
        for task in late:
            task.cancel()
        errors += [f"reader failed: {task.exception()!r}" for task in done if task.exception()]
        for client in clients.values():
            await client.aclose()
        results.put(([check(got.seqs, r.final, got.reconnects) for r, got in zip(readers, gots, strict=True)],
                     array("d", (d for got in gots for d in got.delays)),
                     max((got.last_arrival for got in gots), default=0.0), errors))

    asyncio.run(main())
