"""Django's ASGI handler with request bodies spooled to ``FILE_UPLOAD_TEMP_DIR``.

Django's own handler reads every request body into a ``SpooledTemporaryFile``
in the system's temporary folder before any view runs (and before the upload
handlers, which honour ``FILE_UPLOAD_TEMP_DIR``). An archive of many GiB
would land there first, on a disk the app does not watch and that is often
small (or memory, as a tmpfs). Here the body goes to ``DATA_DIR/uploads``
instead; the rest is Django's code as it is.
"""

from __future__ import annotations

import tempfile
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler


class DataDirASGIHandler(ASGIHandler):
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
