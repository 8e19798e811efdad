"""Uploads, from their arrival to the job folder that keeps them.

They stream to a temporary file on disk and stop at UPLOAD_MAX_BYTES,
whatever the client claims its size is.

A temporary upload file is removed when its request ends, but not when its
web process is killed (SIGKILL, the OOM killer) while writing it. So each one
is locked (``flock``) by the process writing it for as long as it is open,
and a web process at start removes the files of ``FILE_UPLOAD_TEMP_DIR`` that
nobody holds: a dead process's locks are gone with it, while a live one's,
in another web process on this machine or another that shares DATA_DIR,
keep its files. A file younger than ``STALE_AFTER_SECONDS`` is left too: its
writer may not have locked it yet.

A job made of an upload keeps it in its folder, as the record of its input.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, JsonResponse
from django.template.defaultfilters import filesizeformat

from web.api import error

from .models import Job

STALE_AFTER_SECONDS = 10
# The mode of the job folder's other files, whatever the umask.
MODE = 0o644


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


def keep(upload: UploadedFile, target: Path) -> None:
    """Move ``upload`` to ``target`` (or write it there, if it is still in
    memory) with the mode of the rest of the job's data: Django spools a
    large upload to a temporary file of mode 0600, which a move keeps."""
    if hasattr(upload, "temporary_file_path"):
        shutil.move(upload.temporary_file_path(), target)
    else:
        with open(target, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
    os.chmod(target, MODE)


def keep_in_job(job: Job, kept: dict[str, tuple[str, UploadedFile | str]]) -> None:
    """Keep each upload (or typed text) in the new job's folder and name it in
    the job's params: ``kept`` maps a key of ``params["source"]`` to the path in
    the folder and what goes there. The params are saved, so a clone takes the
    files along."""
    for key, (name, content) in kept.items():
        target = job.folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8", errors="surrogateescape")
        else:
            keep(content, target)
        job.params["source"][key] = str(target)
    Job.objects.filter(pk=job.pk).update(params=job.params)
