"""Does the web process hold up with 200 browsers watching a training job
and 20 page loads a second?

A throwaway stack (its own Redis, SQLite, a real worker) and the web server
started with the launcher's own command line (what ``make run`` serves: one
uvicorn process). A running job's folder gets the events a training run
writes, as the trainer writes them: ``train``, ``progress`` and ``perf``
appended together every ``--report`` seconds (the trainer's REPORT_SECONDS,
0.5), and the worker relays them to Redis as it relays a trainer's. The job
itself is the test suite's ``sleep`` kind, so no CPU goes to training: on a
GPU machine the trainer's work is on the GPU. Two client processes on
loopback (asyncio; pages with httpx, streams read as raw HTTP/1.1, which
costs this client far less per event):

- ``--streams`` browsers, each with its own connection, open the job's page
  and follow its stream (``/jobs/<id>/events``, from where the page says,
  with a signed-in session) for the whole run; an
  event's delay is its arrival minus its ``t`` (the time it was appended to
  the file), so it covers the worker's relay, Redis and the web process;
- page loads at a fixed ``--rate`` (an open loop: each starts on schedule,
  however long the others take) for ``--seconds``, round robin over the home
  page, the job's page, a finished job's page and the resources page.

The sessions belong to ``--users`` users, so each holds streams / users live
streams, under the per-user cap (``SSE_STREAMS_PER_USER``, 20 by default).

Baseline, in the same run first: the same page loads and one stream, without
the crowd. Errors: a page that is not 200 or does not answer in 10 s, a
stream refused or dropped (it reconnects with ``Last-Event-ID``, as a
browser does), and any event a stream missed or got twice.
Bounded: every loop has a count and a deadline, all on loopback, and the
stack is stopped at the end.

    .venv/bin/python bench/load.py [--streams 200] [--rate 20] [--seconds 60] [--users 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from stack import Stack, machine, percentile

PAGE_TIMEOUT_SECONDS = 10
CONNECT_SECONDS = 60           # for every stream to be open
STREAM_READ_SECONDS = 30      # a stream silent this long is dropped
DRAIN_SECONDS = 3              # after the last page load, for the last events to arrive


@dataclass
class Target:
    url: str
    job: int
    pages: list[str]
    cookies: list[str]             # one session per user


@dataclass
class StreamResult:
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (event written, delay)
    seqs: list[list[int]] = field(default_factory=list)                # per stream, in arrival order
    errors: list[str] = field(default_factory=list)


def _client(cookie: str, read_timeout: float) -> object:
    import httpx

    # Idle connections are dropped before uvicorn's keep-alive (5 s) closes them
    # under a request, a race a browser retries on and this client would count.
    return httpx.AsyncClient(cookies={"sessionid": cookie},
                             limits=httpx.Limits(max_connections=None, keepalive_expiry=2),
                             timeout=httpx.Timeout(PAGE_TIMEOUT_SECONDS, read=read_timeout))


@dataclass
class Browser:
    """One browser's stream: the seqs it received, and the last event id to
    resume after."""

    seqs: list[int] = field(default_factory=list)
    last_id: str | None = None


async def _follow(target: Target, cookie: str, stop: asyncio.Event, opened: list, result: StreamResult) -> None:
    """One browser on the job's page: follow its stream until ``stop``,
    reconnecting after ``Last-Event-ID`` like EventSource."""
    browser = Browser()
    result.seqs.append(browser.seqs)
    counted = False

    def on_open() -> None:
        nonlocal counted
        if not counted:
            counted = True
            opened.append(time.time())

    async with _client(cookie, read_timeout=30) as client:
        browser.last_id = await _open_page(client, f"{target.url}/jobs/{target.job}/", result)
    while not stop.is_set():
        try:
            if await _stream(target, cookie, browser, stop, result, on_open) and not stop.is_set():
                result.errors.append("stream ended before the run did")
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError) as exc:
            result.errors.append(f"stream dropped: {type(exc).__name__}")
        if not stop.is_set():
            await asyncio.sleep(1)


async def _stream(target: Target, cookie: str, browser: Browser, stop: asyncio.Event, result: StreamResult,
                  on_open) -> bool:
    """One connection to the job's stream, read as raw HTTP/1.1 (a chunked
    body) on asyncio's own streams. The one process that reads every stream
    spent about 150 µs per stream per report in httpx: 500 streams put up to
    75 ms of this client's own queue into the delays it measured. False
    when the stream was refused."""
    url = urlsplit(target.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        head = [f"GET /jobs/{target.job}/events HTTP/1.1", f"Host: {url.netloc}", f"Cookie: sessionid={cookie}",
                "Accept: text/event-stream"]
        if browser.last_id:
            head.append(f"Last-Event-ID: {browser.last_id}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PAGE_TIMEOUT_SECONDS)
        status = int(answer.split(b" ", 2)[1])
        if status != 200:
            result.errors.append(f"stream refused: {status}")
            return False
        if b"transfer-encoding: chunked" not in answer.lower():
            raise ValueError("the stream is not chunked")
        on_open()
        pending = b""
        while not stop.is_set():
            size = int(await asyncio.wait_for(reader.readuntil(b"\r\n"), STREAM_READ_SECONDS), 16)
            if size == 0:
                return True
            pending += (await reader.readexactly(size + 2))[:-2]
            arrived = time.time()
            *frames, pending = pending.split(b"\n\n")
            for frame in frames:
                _take(frame.decode(), arrived, browser, result)
        return True
    finally:
        writer.close()


def _take(frame: str, arrived: float, browser: Browser, result: StreamResult) -> None:
    """Note one SSE frame: its id to resume after and, for a job event, its seq and delay."""
    data, event_id = None, None
    for line in frame.split("\n"):
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
    if data is None:
        return
    browser.last_id = event_id or browser.last_id  # taken when the event is, as EventSource does
    event = json.loads(data)
    if "seq" in event:  # a job event (resources events carry none)
        browser.seqs.append(event["seq"])
        result.arrivals.append((event["t"], arrived - event["t"]))


async def _open_page(client, url: str, result: StreamResult) -> str | None:
    """Load the job's page as a browser does before it opens the stream; the
    page says where the stream starts (``?since=``)."""
    import httpx

    try:
        page = await client.get(url)
    except httpx.HTTPError as exc:
        result.errors.append(f"job page {type(exc).__name__}")
        return None
    found = re.search(r"/events\?since=(\d+)", page.text)
    if page.status_code != 200 or not found:
        result.errors.append(f"job page {page.status_code}")
        return None
    return found.group(1)


def run_streams(target: Target, count: int, until: float, ready, stop_at, results) -> None:
    """A process of ``count`` browsers; sets ``ready`` when all are open and
    stops at the time put in ``stop_at`` (or at ``until``, whichever is first)."""

    async def main() -> None:
        result, opened, stop = StreamResult(), [], asyncio.Event()
        tasks = [asyncio.create_task(_follow(target, target.cookies[i % len(target.cookies)], stop, opened, result))
                 for i in range(count)]
        deadline = time.monotonic() + CONNECT_SECONDS
        while len(opened) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        ready.set()
        end = await asyncio.to_thread(_stop_time, stop_at, until)
        await asyncio.sleep(max(0.0, end - time.time()))
        stop.set()
        _, late = await asyncio.wait(tasks, timeout=5)
        for task in late:
            task.cancel()
        if len(opened) < count:
            result.errors.append(f"{count - len(opened)} streams never opened")
        results.put(result)

    asyncio.run(main())


def _stop_time(stop_at, until: float) -> float:
    """The time put in ``stop_at``, or ``until`` if none comes before it."""
    try:
        return min(stop_at.get(timeout=max(1.0, until - time.time())), until)
    except queue.Empty:
        return until


async def _load(client, url: str, samples: list, errors: list) -> None:
    import httpx

    started = time.perf_counter()
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        errors.append(f"page {type(exc).__name__}")
        return
    samples.append(time.perf_counter() - started)
    if response.status_code != 200:
        errors.append(f"page {response.status_code}")


def run_pages(target: Target, rate: float, seconds: float, results, done) -> None:
    """Page loads at ``rate`` a second for ``seconds``, each on schedule; then
    waits for ``done`` (so that its CPU time can still be read)."""

    async def main() -> None:
        samples: list[float] = []
        errors: list[str] = []
        clients = [_client(cookie, read_timeout=PAGE_TIMEOUT_SECONDS) for cookie in target.cookies]
        tasks = []
        began = time.time()
        start = time.monotonic()
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            url = target.url + target.pages[i % len(target.pages)]
            tasks.append(asyncio.create_task(_load(clients[i % len(clients)], url, samples, errors)))
        await asyncio.wait(tasks, timeout=PAGE_TIMEOUT_SECONDS + 5)
        for client in clients:
            await client.aclose()
        results.put((samples, errors, began, time.time()))
        await asyncio.to_thread(done.wait, 60)

    asyncio.run(main())


class Trainer(threading.Thread):
    """Appends a training run's periodic report to a job's event file, with
    the trainer's own event kinds and fields, until stopped."""

    def __init__(self, folder, every: float) -> None:
        super().__init__(daemon=True)
        self.folder, self.every = folder, every
        self.stopped = threading.Event()

    def run(self) -> None:
        from trainer import eventkinds, eventlog

        step = 0
        while not self.stopped.wait(self.every):
            step += 50
            epoch, loss = step / 1000, 2.3 / (1 + step / 500)
            eventlog.append(self.folder, eventkinds.TRAIN,
                            eventkinds.train(step, epoch, loss, 0.01, 128, 25_600.0, 0.02))
            eventlog.append(self.folder, eventkinds.PROGRESS, {"progress": min(epoch / 30, 1.0), "epoch": epoch,
                                                               "loss": loss})
            eventlog.append(self.folder, eventkinds.PERF,
                            eventkinds.perf(25_600.0, 0.02, 5.0, 2.3e6, 0.31, "cuda:0", 1.5))


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Phase:
    name: str
    pages: list[float]
    delays: list[float]
    errors: list[str]
    load: str
    web_cpu: float       # cores the web process used, on average, while the pages loaded
    streams_cpu: float   # cores the client process that reads every stream used
    pages_cpu: float     # cores the page loading client used


def phase(target: Target, web_pid: int, streams: int, rate: float, seconds: float, written) -> Phase:
    """Open ``streams`` streams, then load pages at ``rate`` for ``seconds``;
    return the page latencies, the delays of the events written meanwhile
    and every error, including events a stream missed."""
    context = multiprocessing.get_context("spawn")
    ready, stop_at, stream_results, page_results = context.Event(), context.Queue(), context.Queue(), context.Queue()
    done = context.Event()
    until = time.time() + CONNECT_SECONDS + seconds + DRAIN_SECONDS + 30
    followers = context.Process(target=run_streams, args=(target, streams, until, ready, stop_at, stream_results))
    followers.start()
    ready.wait(CONNECT_SECONDS + 10)
    time.sleep(1)
    loader = context.Process(target=run_pages, args=(target, rate, seconds, page_results, done))
    loader.start()
    pids = (web_pid, followers.pid, loader.pid)
    before = [cpu_seconds(pid) for pid in pids]
    pages, errors, start, end = page_results.get(timeout=seconds + PAGE_TIMEOUT_SECONDS + 60)
    used = [(cpu_seconds(pid) - b) / (end - start) for pid, b in zip(pids, before, strict=True)]
    done.set()
    load = open("/proc/loadavg").read().split()[0]
    stop_at.put(end + DRAIN_SECONDS)
    result: StreamResult = stream_results.get(timeout=DRAIN_SECONDS + 60)
    loader.join(10)
    followers.join(10)
    if end - start > seconds * 1.1 + PAGE_TIMEOUT_SECONDS:
        errors.append(f"the page loads took {end - start:.1f} s, not {seconds:g} s")
    due = [seq for seq, t in written() if start <= t <= end]
    errors += result.errors + _missed(result.seqs, due)
    delays = [delay for t, delay in result.arrivals if start <= t <= end]
    return Phase("", pages, delays, errors, load, used[0], used[1], used[2])


def _missed(per_stream: list[list[int]], due: list[int]) -> list[str]:
    """An error for each event written in the window that a stream missed or got twice."""
    problems = []
    for seqs in per_stream:
        got = [s for s in seqs if due and due[0] <= s <= due[-1]]
        problems += ["event arrived twice"] * (len(got) - len(set(got)))
        problems += ["event missed"] * len(set(due) - set(got))
    return problems


def summary(errors: list[str]) -> str:
    if not errors:
        return "none"
    counts: dict[str, int] = {}
    for error in errors:
        counts[error] = counts.get(error, 0) + 1
    return ", ".join(f"{n} × {error}" for error, n in sorted(counts.items(), key=lambda item: -item[1]))


def show(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:34s} no samples"
    return (f"{name:34s} p50 {percentile(values, 50) * 1000:7.1f} ms   p95 {percentile(values, 95) * 1000:7.1f} ms"
            f"   max {max(values) * 1000:7.1f} ms   n {len(values)}")


def ratio(load: list[float], quiet: list[float], p: float) -> str:
    if not load or not quiet:
        return "n/a"
    return f"{percentile(load, p) / percentile(quiet, p):.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200, help="browsers following the job's stream")
    parser.add_argument("--rate", type=float, default=20, help="page loads a second")
    parser.add_argument("--seconds", type=float, default=60, help="how long the page loads go on")
    parser.add_argument("--baseline-seconds", type=float, default=10)
    parser.add_argument("--users", type=int, default=20, help="the streams and page loads are spread over these")
    parser.add_argument("--report", type=float, default=0.5, help="seconds between the training reports")
    parser.add_argument("--history", type=int, default=30, help="finished jobs listed on the home page")
    args = parser.parse_args()
    if args.streams > args.users * int(os.environ.get("SSE_STREAMS_PER_USER", "20")):
        parser.error("more streams than the users may hold (SSE_STREAMS_PER_USER each): raise --users")
    stack = Stack()
    try:
        from django.contrib.auth.models import User
        from django.test import Client

        from jobs import services
        from jobs.models import Job, Status
        from tests.processes import wait_for
        from trainer import eventlog

        stack.start_worker()
        users = [User.objects.create_user(f"viewer{i}", password="bench-password-1") for i in range(args.users)]
        for i in range(args.history):
            services.submit(users[i % len(users)], "sleep", f"finished {i}", {"steps": 1, "step_seconds": 0},
                            {"device": "cpu", "count": 1}, group=f"group {i % 5}")
        wait_for(lambda: not Job.objects.exclude(status=Status.DONE).exists(), timeout=30 + args.history * 3,
                 what="the finished jobs")
        finished = [f"/jobs/{job.pk}/" for job in Job.objects.all()[:1]]
        job = services.submit(users[0], "sleep", "watched", {"steps": 1, "step_seconds": 3600},
                              {"device": "cpu", "count": 1})
        wait_for(lambda: Job.objects.get(pk=job.pk).status == Status.RUNNING, timeout=30, what="the job to run")
        web = stack.start_launched_web()
        cookies = []
        for user in users:
            client = Client()
            client.force_login(user)
            cookies.append(client.cookies["sessionid"].value)
        target = Target(web.url, job.pk, ["/", f"/jobs/{job.pk}/", *finished, "/resources/"], cookies)

        def written() -> list[tuple[int, float]]:
            return [(event["seq"], event["t"]) for event in eventlog.read_all(job.folder)]

        print(f"machine: {machine()}")
        print(f"web process pid {web.pid}; load average before: {open('/proc/loadavg').read().split()[0]}", flush=True)
        trainer = Trainer(job.folder, args.report)
        trainer.start()
        quiet = phase(target, web.pid, 1, args.rate, args.baseline_seconds, written)
        loaded = phase(target, web.pid, args.streams, args.rate, args.seconds, written)
        trainer.stopped.set()
        services.abort(Job.objects.get(pk=job.pk), users[0])
    finally:
        stack.close()
    print(f"training reports (3 events) every {args.report * 1000:.0f} ms; page loads {args.rate:g}/s over {target.pages} "
          f"(job page: the watched one; {args.history} finished jobs listed); {args.users} users")
    for name, run, streams, seconds in (("baseline", quiet, 1, args.baseline_seconds),
                                        ("load", loaded, args.streams, args.seconds)):
        print(f"{name}: {streams} streams, {seconds:g} s, load average (1 min) at the end {run.load}; "
              f"CPU: web process {run.web_cpu:.2f} cores, stream client {run.streams_cpu:.2f}, page client "
              f"{run.pages_cpu:.2f}")
        print("  " + show("page load", run.pages))
        print("  " + show("event delay (append -> client)", run.delays))
        print(f"  errors: {summary(run.errors)}")
    print(f"ratio load/baseline: page p50 {ratio(loaded.pages, quiet.pages, 50)}, p95 {ratio(loaded.pages, quiet.pages, 95)}; "
          f"event delay p50 {ratio(loaded.delays, quiet.delays, 50)}, p95 {ratio(loaded.delays, quiet.delays, 95)}")
    page_p95 = percentile(loaded.pages, 95) if loaded.pages else float("inf")
    delay_p95 = percentile(loaded.delays, 95) if loaded.delays else float("inf")
    met = not loaded.errors and not quiet.errors and page_p95 < 0.3 and delay_p95 < 0.5
    print(f"aims (no errors, page p95 < 300 ms, event delay p95 < 500 ms): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
