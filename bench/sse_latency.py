"""How long from ``publish`` to the event arriving in a browser's stream,
with 100 streams open at once?

Opens N Server-Sent Events streams on one job (a separate process, asyncio)
against the real ASGI web server, publishes events from this process with
``jobs.publish.publish`` (file + Redis stream), and takes each event's arrival
time in each stream. The baseline, in the same run: N plain Redis clients
blocked on XREAD on the same stream, i.e. the bus without the web app.
Prints p50 and p95 and the ratio app / plain.

    .venv/bin/python bench/sse_latency.py [--clients 100] [--events 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time

from stack import Stack, report


async def _sse_client(url: str, headers: dict, count: int, arrivals: list, opened: list) -> None:
    import httpx

    async with (httpx.AsyncClient(timeout=httpx.Timeout(10, read=120)) as client,
                client.stream("GET", url, headers=headers) as response):
        opened.append(1)
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event.get("kind") == "bench":
                    arrivals.append(time.time() - event["data"]["sent"])
                    if event["data"]["i"] == count - 1:
                        return


async def _redis_client(url: str, stream: str, count: int, arrivals: list, opened: list) -> None:
    import redis.asyncio as aioredis

    from jobs.bus import decode

    client = aioredis.Redis.from_url(url)
    position = "$"
    opened.append(1)
    while True:
        reply = await client.xread({stream: position}, block=5000, count=100)
        for _, entries in reply:
            for entry_id, fields in entries:
                position = entry_id
                _, event = decode(fields)
                if event["kind"] == "bench":
                    arrivals.append(time.time() - event["data"]["sent"])
                    if event["data"]["i"] == count - 1:
                        await client.aclose()
                        return


def run_clients(kind: str, target: dict, clients: int, count: int, ready, results) -> None:
    async def main():
        arrivals: list[float] = []
        opened: list[int] = []
        if kind == "sse":
            tasks = [_sse_client(target["url"], target["headers"], count, arrivals, opened) for _ in range(clients)]
        else:
            tasks = [_redis_client(target["url"], target["stream"], count, arrivals, opened) for _ in range(clients)]
        running = [asyncio.create_task(t) for t in tasks]
        while len(opened) < clients:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        ready.set()
        await asyncio.wait_for(asyncio.gather(*running), timeout=120)
        results.put(arrivals)

    asyncio.run(main())


def measure(kind: str, target: dict, job, clients: int, count: int, gap: float) -> list[float]:
    from jobs.publish import publish

    context = multiprocessing.get_context("spawn")
    ready, results = context.Event(), context.Queue()
    process = context.Process(target=run_clients, args=(kind, target, clients, count, ready, results))
    process.start()
    if not ready.wait(60):
        raise SystemExit(f"{kind}: the clients did not connect")
    for i in range(count):
        publish(job, "bench", {"i": i, "sent": time.time()})
        time.sleep(gap)
    arrivals = results.get(timeout=120)
    process.join(10)
    if len(arrivals) != clients * count:
        raise SystemExit(f"{kind}: {len(arrivals)} arrivals, expected {clients * count}")
    return arrivals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between published events")
    args = parser.parse_args()
    stack = Stack()
    try:
        from accounts.models import ApiToken
        from jobs import bus, services

        owner = stack.user()
        _, key = ApiToken.issue(owner, "bench")
        job = services.submit(owner, "sleep", "bench", {"steps": 0}, {"device": "cpu", "count": 1})
        web = stack.start_web()
        sse = measure("sse", {"url": f"{web.url}/api/jobs/{job.pk}/events", "headers": {"Authorization": f"Token {key}"}},
                      job, args.clients, args.events, args.gap)
        plain = measure("redis", {"url": stack.redis.url, "stream": bus.job_stream(job.pk)},
                        job, args.clients, args.events, args.gap)
    finally:
        stack.close()
    report(f"clients: {args.clients}, events: {args.events}, {args.gap * 1000:.0f} ms apart",
           "app: publish -> SSE client", sse, "plain: publish -> Redis XREAD client", plain)


if __name__ == "__main__":
    main()
