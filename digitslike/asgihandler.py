"""Django's ASGI handler with request bodies spooled to ``FILE_UPLOAD_TEMP_DIR``
and the middleware chain run as one synchronous call.

Django's own handler reads every request body into a ``SpooledTemporaryFile``
in the system's temporary folder before any view runs (and before the upload
handlers, which honour ``FILE_UPLOAD_TEMP_DIR``). An archive of many GiB
would land there first, on a disk the app does not watch and that is often
small (or memory, as a tmpfs). Here the body goes to ``DATA_DIR/uploads``
instead.

Django's handler builds its chain asynchronous from the view outwards, and
turns to synchronous at the first middleware that can only be that
(WhiteNoise's, ours for refusals): each such turn, each ``process_request``
or ``process_response`` of an async-mode ``MiddlewareMixin``, and a
synchronous view each cross between the event loop and the request's
thread. Nearly every view here is synchronous, so the chain is built
synchronous and called once in the request's thread: one crossing in, one
out (measured: a 404 through the API 7.0 ms before, 6.5 ms after; see
docs/benchmarks.md, "Using a model"). The asynchronous views (the event
streams) are called from there with ``async_to_sync``, as Django's
synchronous handler calls them; their responses stream on the event loop.

And the request's thread is one kept from an earlier request
(``RequestThreads``): Django's handler gives every request a new one,
started on its first synchronous call and joined at its end, which took
about 1.5 ms of every request here.

At most ``RUNNING_REQUESTS`` requests run their synchronous code at once;
the others wait their turn on the event loop. With a thread each and no
bound, 500 browsers opening a job's page together (``bench/load.py``) had
500 threads contending for the interpreter with the event loop that
serves every stream: the pages and the streams timed out, and their
retries kept it so.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler

# Threads kept for later requests; beyond this many idle ones (after a burst
# of event streams, each holding its thread while it streams) they end.
IDLE_REQUEST_THREADS = 16
# Requests whose synchronous code runs at once; the rest wait on the loop.
RUNNING_REQUESTS = 16


class RequestThreads:
    """Single-thread executors, each running one request's synchronous
    code at a time (what ``ThreadSensitiveContext`` asks of an executor),
    kept between requests."""

    def __init__(self, keep: int = IDLE_REQUEST_THREADS) -> None:
        self.keep = keep
        self.idle: list[ThreadPoolExecutor] = []
        self.lock = threading.Lock()

    def take(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.keep:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


class DataDirASGIHandler(ASGIHandler):
    def __init__(self, running: int = RUNNING_REQUESTS) -> None:
        super().__init__()
        self.threads = RequestThreads()
        self.running = running
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())

    def turns(self) -> asyncio.Semaphore:
        """The running loop's semaphore (a semaphore belongs to one loop)."""
        loop = asyncio.get_running_loop()
        if loop not in self._turns:
            self._turns[loop] = asyncio.Semaphore(self.running)
        return self._turns[loop]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # as Django's own handler
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self.threads.give_back(executor)

    async def read_body(self, receive: Any) -> tempfile.SpooledTemporaryFile:
        body_file = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b",
                                                  dir=settings.FILE_UPLOAD_TEMP_DIR)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                body_file.close()
                raise RequestAborted()
            if "body" in message:
                body_file.write(message["body"])
            if not message.get("more_body", False):
                break
        body_file.seek(0)
        return body_file

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

        async def in_turn(request: Any) -> Any:
            async with self.turns():
                return await chain(request)

        self._middleware_chain = in_turn
