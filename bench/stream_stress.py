"""Does every job page stream get every event exactly once, in order, under
stress?

A throwaway stack (its own Redis and SQLite) and the web server started
with the launcher's own command line (what ``make run`` serves: one uvicorn
process), all on 127.0.0.1. By default 4 jobs get 5,000 events each and 200
streams follow them (50 a job): 1,000,000 deliveries. Meanwhile:

- a CPU hog: one busy-loop process per core, started here and stopped at
  the end (or at the deadline, whichever is first);
- adversarial writers (``bench/stress_writers.py``): 3 processes append to
  every job's ``events.jsonl`` at once, one with ``publish`` (a fresh
  ``Forwarder`` per event, as the web process does), two with a
  long-lived ``Forwarder`` each (as the worker relays) that sleep a random
  moment (up to ``--max-delay``) after half of their appends before
  forwarding: the bus carries events two or three times, late, and the
  forwarders' copies out of order relative to each other;
- 1 stream in 10 disconnects at random moments (every 0.2 to 2 s) and
  reconnects with ``Last-Event-ID``, as ``EventSource`` does; 1 in 4 joins
  a random moment in the first seconds of writing, so starts on history.

Every stream reads from the first event (``?since=0``) until it has the
job's last one, and is checked: lost, repeated and out-of-order events must
all be 0 (the exit status is 1 otherwise). Event delay: arrival minus the
event's ``t`` (its append to the file); streams that fall behind the
writers read in batches, so the delay includes their backlog.

Baseline, in the same run first: the same number of events (one plain
``publish`` writer, no hog) read by as many bare Redis ``XREAD`` loops on
the jobs' streams, the bus without the web app: it is the ceiling of the
delivery rate on this machine, and the ratio says what the web server,
HTTP, the checks and the hog cost against it.

Bounded: every reader, writer and hog stops at ``--seconds`` per phase at
the latest, and the stack is stopped at the end.

    .venv/bin/python bench/stream_stress.py [--jobs 4] [--events 5000] [--streams 200] [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time
from collections import Counter
from dataclasses import dataclass

from stack import Stack, machine, percentile
from stress_streams import Check, Reader, run
from stress_writers import JobRef, hog, write

WRITERS = ("publish", "late", "late")
JOIN_WITHIN_SECONDS = 3.0      # late streams join within this of the writers' start
CONNECT_SECONDS = 60           # for the early streams to open


@dataclass
class Phase:
    checks: list[Check]
    delays: list[float]
    duration: float
    errors: list[str]

    @property
    def deliveries(self) -> int:
        return sum(c.received for c in self.checks)

    @property
    def rate(self) -> float:
        return self.deliveries / self.duration if self.duration > 0 else 0.0

    def total(self, name: str) -> int:
        return sum(getattr(c, name) for c in self.checks)


def plans(jobs: list[JobRef], todo: dict[int, int], writers: int, rng: random.Random) -> list[list[JobRef]]:
    """Each writer's share of the events each job is still to get, the jobs
    interleaved at random."""
    shares: list[list[JobRef]] = [[] for _ in range(writers)]
    for job in jobs:
        for n in range(todo[job.pk]):
            shares[n % writers].append(job)
    for plan in shares:
        rng.shuffle(plan)
    return shares


def phase(kind: str, target: str, readers: list[Reader], writers: list[tuple[str, list[JobRef]]], max_delay: float,
          hogs: int, seconds: float, client_processes: int) -> Phase:
    """Start the hog, the readers (the early ones open before any event is
    written) and the writers; return the readers' verdicts once all have
    every event or the deadline has passed."""
    context = multiprocessing.get_context("spawn")
    until = time.time() + seconds
    go, results = context.Event(), context.Queue()
    hogging = [context.Process(target=hog, args=(until,)) for _ in range(hogs)]
    clients = [(context.Process(target=run, args=(kind, target, readers[i::client_processes], JOIN_WITHIN_SECONDS,
                                                  until, ready, go, results)), ready)
               for i, ready in enumerate(context.Event() for _ in range(client_processes))]
    writing = [(context.Process(target=write, args=(role, seed, plan, max_delay, ready, go, until)), ready)
               for seed, ((role, plan), ready) in enumerate(zip(writers, (context.Event() for _ in writers), strict=True))]
    try:
        for process in [*hogging, *(p for p, _ in clients + writing)]:
            process.start()
        for _, ready in clients + writing:
            if not ready.wait(max(1.0, min(CONNECT_SECONDS, until - time.time()))):
                raise SystemExit(f"{kind}: the readers or writers did not get ready")
        began = time.time()
        go.set()
        checks, delays, last, errors = [], [], began, []
        for _ in clients:
            got_checks, got_delays, got_last, got_errors = results.get(timeout=max(1.0, until - time.time()) + 60)
            checks += got_checks
            delays += got_delays
            last, errors = max(last, got_last), errors + got_errors
        return Phase(checks, delays, last - began, errors)
    finally:
        for process in hogging:
            process.terminate()
        for process in [*hogging, *(p for p, _ in clients + writing)]:
            process.join(10)
            if process.is_alive():
                process.terminate()
                process.join(5)


def readers(jobs: list[JobRef], finals: dict[int, int], streams: int, cookies: list[str], dropping: int,
            late: int) -> list[Reader]:
    """``streams`` readers spread over the jobs and the users' sessions;
    every ``dropping``-th reconnects at random, every ``late``-th joins late.
    The reconnecting ones go to different users: the per-user cap counts a
    dropped connection until the server has noticed it went."""
    return [Reader(job.pk, finals[job.pk], cookies[(i + i // len(cookies)) % len(cookies)],
                   drops=dropping > 0 and i % dropping == 0, late=late > 0 and i % late == late - 1)
            for i, job in ((i, jobs[i % len(jobs)]) for i in range(streams))]


def show(name: str, run: Phase, events: int, streams: int) -> str:
    delay = (f"event delay p50 {percentile(run.delays, 50) * 1000:,.0f} ms, p95 {percentile(run.delays, 95) * 1000:,.0f} ms, "
             f"max {max(run.delays) * 1000:,.0f} ms") if run.delays else "no events"
    return (f"{name}: events {events:,}, streams {streams}, deliveries {run.deliveries:,}, duration {run.duration:.1f} s, "
            f"deliveries/s {run.rate:,.0f}, {delay}; lost {run.total('lost')}, repeated {run.total('repeated')}, "
            f"out of order {run.total('disordered')}; not reached by the deadline {run.total('unreached')}; "
            f"reconnects {run.total('reconnects')}; "
            f"errors: {summary(run.errors)}")


def summary(errors: list[str]) -> str:
    return ", ".join(f"{n} x {error}" for error, n in Counter(errors).most_common()) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--events", type=int, default=5000, help="each job's events (its first, Queued, included)")
    parser.add_argument("--streams", type=int, default=200, help="streams, spread over the jobs")
    parser.add_argument("--users", type=int, default=20, help="the streams' sessions belong to these users")
    parser.add_argument("--dropping", type=int, default=10, help="1 stream in this many reconnects at random (0: none)")
    parser.add_argument("--late", type=int, default=4, help="1 stream in this many joins after the writing began (0: none)")
    parser.add_argument("--max-delay", type=float, default=0.02, help="longest sleep between a late writer's append and forward")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1, help="busy-loop processes (one per core)")
    parser.add_argument("--clients", type=int, default=2, help="client processes the streams are spread over")
    parser.add_argument("--seconds", type=float, default=240, help="the most each phase may take")
    parser.add_argument("--quick", action="store_true", help="2 jobs x 200 events, 20 streams: 4,000 deliveries")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.events, args.streams, args.users, args.dropping, args.seconds = 2, 200, 20, 2, 5, 60
    if args.streams > args.users * int(os.environ.get("SSE_STREAMS_PER_USER", "20")):
        parser.error("more streams than the users may hold (SSE_STREAMS_PER_USER each): raise --users")
    rng = random.Random()
    stack = Stack()
    try:
        from django.contrib.auth.models import User
        from django.test import Client

        from jobs import eventseek, services
        from tests.processes import wait_for

        users = [User.objects.create_user(f"viewer{i}", password="bench-password-1") for i in range(args.users)]
        cookies = []
        for user in users:
            client = Client()
            client.force_login(user)
            cookies.append(client.cookies["sessionid"].value)

        def jobs(name: str) -> tuple[list[JobRef], dict[int, int]]:
            """The jobs, and the events each is still to get (submitting
            wrote its first)."""
            made = [services.submit(users[0], "sleep", f"{name} {i}", {"steps": 1, "step_seconds": 0},
                                    {"device": "cpu", "count": 1}) for i in range(args.jobs)]
            refs = [JobRef(job.pk, job.folder) for job in made]
            wait_for(lambda: all(eventseek.last_seq(job.folder) for job in refs), what="the jobs' first events")
            return refs, {job.pk: args.events - eventseek.last_seq(job.folder) for job in refs}

        plain_jobs, plain_todo = jobs("baseline")
        stress_jobs, stress_todo = jobs("stressed")
        finals = {job.pk: args.events for job in plain_jobs + stress_jobs}
        web = stack.start_launched_web()
        print(f"machine: {machine()}")
        print(f"load average before: {open('/proc/loadavg').read().split()[0]}", flush=True)
        plain = phase("xread", stack.redis.url, readers(plain_jobs, finals, args.streams, cookies, 0, 0),
                      [("publish", plan) for plan in plans(plain_jobs, plain_todo, 1, rng)], 0.0, 0, args.seconds,
                      args.clients)
        followers = readers(stress_jobs, finals, args.streams, cookies, args.dropping, args.late)
        stressed = phase("sse", web.url, followers,
                         list(zip(WRITERS, plans(stress_jobs, stress_todo, len(WRITERS), rng), strict=True)),
                         args.max_delay, args.hogs, args.seconds, args.clients)
        load = open("/proc/loadavg").read().split()[0]
    finally:
        stack.close()
    events = args.jobs * args.events
    print(f"set-up: {args.jobs} jobs x {args.events:,} events, {args.streams} streams ({args.streams // args.jobs} a job; "
          f"{sum(r.drops for r in followers)} reconnect at random, {sum(r.late for r in followers)} join late), "
          f"writers {', '.join(WRITERS)} (late: forwards up to "
          f"{args.max_delay * 1000:.0f} ms after appending), CPU hog {args.hogs} busy-loop processes; "
          f"load average (1 min) at the end {load}")
    print(show("baseline (bare Redis XREAD, one plain writer, no hog)", plain, events, args.streams))
    print(show("stressed (web server, SSE)", stressed, events, args.streams))
    if plain.rate and stressed.delays and plain.delays:
        print(f"ratio stressed/baseline: deliveries/s {stressed.rate / plain.rate:.2f}x, "
              f"event delay p50 {percentile(stressed.delays, 50) / percentile(plain.delays, 50):.1f}x")
    sound = all(not any(run.total(name) for name in ("lost", "repeated", "disordered", "unreached"))
                for run in (plain, stressed))
    print(f"every stream got every event once, in order: {'yes' if sound else 'NO'}")
    raise SystemExit(0 if sound and not plain.errors and not stressed.errors else 1)


if __name__ == "__main__":
    main()
