"""The project's ASGI handler: a request's synchronous code runs on a
thread kept from an earlier request, no more idle threads are kept
than ``IDLE_REQUEST_THREADS``, and no more requests run at once than
``RUNNING_REQUESTS``."""

from __future__ import annotations

import asyncio

import pytest

from digitslike.asgihandler import DataDirASGIHandler
from tests.digitslike import slowurls


def _scope(path: str) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"localhost")], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80)}


async def _request(handler: DataDirASGIHandler, path: str, go: asyncio.Event | None = None) -> int:
    """The status of a GET of ``path``; its body is sent once ``go`` is set."""
    sent: list[dict] = []
    received = asyncio.Event()

    async def receive() -> dict:
        if received.is_set():  # after the body: a client that stays connected
            await asyncio.Event().wait()
        if go is not None:
            await go.wait()
        received.set()
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await handler(_scope(path), receive, send)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_requests_one_after_another_run_on_one_kept_thread():
    handler = DataDirASGIHandler()

    async def three() -> list[int]:
        return [await _request(handler, "/api/me") for _ in range(3)]

    assert asyncio.run(three()) == [401, 401, 401]  # the API's answer without a user: the view ran
    [executor] = handler.threads.idle
    assert len(executor._threads) == 1


def test_threads_beyond_the_idle_limit_end_and_those_within_it_are_kept():
    handler = DataDirASGIHandler()
    handler.threads.keep = 2

    async def together(count: int) -> list[int]:
        go = asyncio.Event()
        requests = [asyncio.create_task(_request(handler, "/api/me", go)) for _ in range(count)]
        await asyncio.sleep(0.05)  # each has taken its thread and waits for its body
        go.set()
        return await asyncio.gather(*requests)

    assert asyncio.run(together(2)) == [401, 401]
    kept = list(handler.threads.idle)
    assert len(kept) == 2
    assert asyncio.run(together(3)) == [401, 401, 401]  # the two kept threads and a new one
    assert len(handler.threads.idle) == 2
    assert not any(executor._shutdown for executor in handler.threads.idle)
    ended = [executor for executor in kept if executor not in handler.threads.idle]
    assert len(ended) <= 1 and all(executor._shutdown for executor in ended)  # the one given back third ended


@pytest.mark.parametrize("bound, most", [(2, 2), (6, 6)], ids=["six-requests-two-at-once", "six-within-the-bound"])
def test_no_more_requests_run_their_synchronous_code_at_once_than_the_bound(settings, bound, most):
    """Six requests at once to a view that takes 0.2 s: with room for two,
    two run at a time and the others wait their turn; with room for six,
    all six run together."""
    settings.ROOT_URLCONF = "tests.digitslike.slowurls"
    slowurls.running.update(now=0, most=0)
    handler = DataDirASGIHandler(running=bound)

    async def together() -> list[int]:
        return await asyncio.gather(*(_request(handler, "/slow") for _ in range(6)))

    assert asyncio.run(together()) == [200] * 6
    assert slowurls.running["most"] == most
