"""Files served under ASGI without Django's sync-iterator warning, and
downloads made while they are sent (``streamed_from_writer``).

A ``FileResponse`` streams its file with a synchronous iterator, which
Django's ASGI handler drains in a thread after warning "StreamingHttpResponse
must consume synchronous iterators". Here the same file is read in a worker
thread chunk by chunk and handed over as an asynchronous iterator, so a large
download neither blocks the event loop nor warns.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any

from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header
from whitenoise.middleware import WhiteNoiseMiddleware

WRITTEN_CHUNK = 256 * 1024  # bytes of a written download passed on at a time


async def _chunks(handle: Any, size: int) -> AsyncIterator[bytes]:
    try:
        while chunk := await asyncio.to_thread(handle.read, size):
            yield chunk
    finally:
        handle.close()


def streamed_asynchronously(request: HttpRequest, response: FileResponse) -> FileResponse:
    """The response, its file read through an asynchronous iterator when the
    request came through ASGI (a WSGI server or the test client reads the
    plain one)."""
    handle = getattr(response, "file_to_stream", None)
    if handle is not None and isinstance(request, ASGIRequest):
        response.streaming_content = _chunks(handle, response.block_size)
    return response


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, its files streamed asynchronously. STATIC_ROOT exists only
    where ``collectstatic`` ran (the Docker image); elsewhere the files are
    found where they lie (WHITENOISE_USE_FINDERS), and its absence is no
    reason to warn."""

    def add_files(self, root: str, prefix: str = "") -> None:
        if os.path.isdir(root):
            super().add_files(root, prefix)

    @staticmethod
    def serve(static_file: Any, request: Any) -> FileResponse:
        return streamed_asynchronously(request, WhiteNoiseMiddleware.serve(static_file, request))


def _piped(write: Callable[[IO[bytes]], None]) -> tuple[IO[bytes], Callable[[], None]]:
    """``write(out)`` started in a thread, writing into a pipe: the pipe's
    reading end, and a check that re-raises what the writer raised (to call
    at the end of the stream). A reader that closes its end early stops the
    writer (BrokenPipeError, not reported)."""
    read_fd, write_fd = os.pipe()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            with open(write_fd, "wb") as out:
                write(out)
        except BrokenPipeError:
            pass
        except BaseException as exc:  # handed to the reader, which fails the response
            failed.append(exc)

    thread = threading.Thread(target=run, name="streamed-writer", daemon=True)
    thread.start()

    def check() -> None:
        thread.join()
        if failed:
            raise failed[0]

    return open(read_fd, "rb"), check


def _written_chunks(write: Callable[[IO[bytes]], None]) -> Iterator[bytes]:
    reader, check = _piped(write)
    with reader:
        while chunk := reader.read(WRITTEN_CHUNK):
            yield chunk
    check()


async def _written_chunks_async(write: Callable[[IO[bytes]], None]) -> AsyncIterator[bytes]:
    reader, check = _piped(write)
    try:
        while chunk := await asyncio.to_thread(reader.read, WRITTEN_CHUNK):
            yield chunk
    finally:
        reader.close()
    await asyncio.to_thread(check)


def streamed_from_writer(request: HttpRequest, write: Callable[[IO[bytes]], None], content_type: str,
                         filename: str) -> StreamingHttpResponse:
    """A download of what ``write(out)`` writes to a non-seekable stream,
    run in a thread once the response is read, its output passed on through
    a pipe a chunk at a time (memory holds a chunk, not the file): read
    asynchronously under ASGI, as a plain iterator otherwise. A writer that
    fails cuts the response off (the client sees a failed download, not a
    short file): its error is raised from the response's iterator, for the
    server to log."""
    chunks = _written_chunks_async(write) if isinstance(request, ASGIRequest) else _written_chunks(write)
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
