"""Every stream on one job shares one reader of its events in a web process
(``jobs/feeds.py``), and each still gets every event once, in order, wherever
it starts."""

import asyncio

import redis

from accounts.models import ApiToken
from jobs import eventseek, feeds, streamslots
from jobs.events import publish
from tests.jobtools import submit_sleep
from tests.processes import wait_for
from tests.sseclient import SSEClient

STREAMS = 8


def test_streams_on_one_job_read_its_redis_stream_once(alice, web, redis_server, settings):
    job = submit_sleep(alice)  # no worker: it stays queued, the test publishes
    viewers = []
    for index in range(2):  # two users, so the per-user cap is not what is tested
        user = type(alice).objects.create_user(f"viewer{index}")
        auth = {"Authorization": f"Token {ApiToken.issue(user, 't')[1]}"}
        viewers += [SSEClient(f"{web.url}/api/jobs/{job.pk}/events", auth) for _ in range(STREAMS // 2)]
    wait_for(lambda: all(viewer.of() for viewer in viewers), what="every stream's history")
    client = redis.Redis.from_url(redis_server.url)
    name = f"{settings.REDIS_PREFIX}:{web.pid}"

    def readers() -> int:
        return sum(1 for entry in client.client_list() if entry["name"] == name and entry["cmd"] == "xread")

    for index in range(20):
        publish(job, "note", {"index": index})
    wait_for(lambda: all(len([e for e in viewer.of() if e["data"]["kind"] == "note"]) == 20 for viewer in viewers),
             what="every note in every stream")
    assert readers() == 1
    for viewer in viewers:
        seqs = [e["data"]["seq"] for e in viewer.of()]
        assert seqs == list(range(1, seqs[-1] + 1))
        viewer.close()


def test_a_stream_further_behind_than_the_feed_holds_gets_every_event_once(alice):
    job = submit_sleep(alice)
    first = eventseek.last_seq(job.folder)
    total = first + 3 * feeds.KEEP_EVENTS

    def publish_all() -> None:
        for index in range(total - first):
            publish(job, "note", {"index": index})

    async def follow(after: int, count: int, started: asyncio.Event | None = None) -> list[int]:
        stream = feeds.follow(job.pk, job.folder, after)
        seqs: list[int] = []
        async for chunk in stream:
            if started:
                started.set()
            seqs += [int(line[4:]) for line in chunk.split("\n") if line.startswith("id: ")]
            if seqs and seqs[-1] >= count:
                break
        await stream.aclose()
        return seqs

    async def main() -> tuple[list[int], list[int]]:
        started = asyncio.Event()
        live = asyncio.create_task(follow(first, total, started))  # joins first: the feed holds what follows
        await started.wait()
        await asyncio.to_thread(publish_all)
        late = await asyncio.wait_for(follow(0, total), timeout=30)  # behind the frames the feed still holds
        return await asyncio.wait_for(live, timeout=30), late

    live, late = asyncio.run(main())
    assert live == list(range(first + 1, total + 1))
    assert late == list(range(1, total + 1))


def test_closing_a_stream_lets_go_of_its_jobs_feed_at_once(alice):
    job = submit_sleep(alice)

    async def main() -> tuple[bool, bool]:
        slot = streamslots.take(alice.pk, 1)
        relayed = streamslots.holding(slot, feeds.follow(job.pk, job.folder, 0))
        await anext(relayed)
        key = (id(asyncio.get_running_loop()), job.pk)
        followed = key in feeds._feeds  # the module's own record of the feeds it runs
        await relayed.aclose()
        return followed, key in feeds._feeds

    followed, still = asyncio.run(main())
    assert followed and not still
    assert streamslots.open_streams(alice.pk) == 0
