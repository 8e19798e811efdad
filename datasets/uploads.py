"""Uploads stream to a temporary file on disk and stop at UPLOAD_MAX_BYTES,
whatever the client claims its size is.

A temporary upload file is removed when its request ends, but not when its
web process is killed (SIGKILL, the OOM killer) while writing it. So each one
is locked (``flock``) by the process writing it for as long as it is open,
and a web process at start removes the files of ``FILE_UPLOAD_TEMP_DIR`` that
nobody holds: a dead process's locks are gone with it, while a live one's,
in another web process on this machine or another that shares DATA_DIR,
keep its files. A file younger than ``STALE_AFTER_SECONDS`` is left too: its
writer may not have locked it yet.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, JsonResponse
from django.template.defaultfilters import filesizeformat

from web.api import error

STALE_AFTER_SECONDS = 10


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        self.received = 0
        super().new_file(*args, **kwargs)
        fcntl.flock(self.file.fileno(), fcntl.LOCK_EX)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            self.file.close()
            self.request.upload_too_large = True
            raise StopUpload(connection_reset=False)
        return super().receive_data_chunk(raw_data, start)


def too_large_message() -> str:
    return f"The upload is larger than the limit of {filesizeformat(settings.UPLOAD_MAX_BYTES)} (UPLOAD_MAX_BYTES)."


def refusal(request: HttpRequest) -> JsonResponse | None:
    """The 413 answer to a request whose upload is over the limit: by its
    announced length, or cut short by the handler above; None otherwise."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.UPLOAD_MAX_BYTES + 1024 * 1024 or getattr(request, "upload_too_large", False):
        return error(too_large_message(), 413, errors={"archive": [too_large_message()]})
    return None


def remove_stale_uploads(folder: Path) -> None:
    """Remove the files in ``folder`` that no live process is writing."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat().st_mtime > time.time() - STALE_AFTER_SECONDS:
                continue
            with open(entry.path, "rb") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(entry.path)
        except (BlockingIOError, FileNotFoundError):
            continue
