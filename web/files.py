"""Files served under ASGI without Django's sync-iterator warning.

A ``FileResponse`` streams its file with a synchronous iterator, which
Django's ASGI handler drains in a thread after warning "StreamingHttpResponse
must consume synchronous iterators". Here the same file is read in a worker
thread chunk by chunk and handed over as an asynchronous iterator, so a large
download neither blocks the event loop nor warns.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware


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
