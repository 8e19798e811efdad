"""A full disk told apart from other failures, and said in words a user acts
on. The trainer, the dataset build and the worker use it; it imports neither
torch nor Django.

A job that meets a full disk fails with this message rather than a
traceback; what it already kept (the last checkpoint, an uploaded archive)
stays, so that it can be resumed once space is freed.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# Below this much free space a job that failed without a word of its own is
# taken to have failed for lack of it (its error could not be written).
NEARLY_FULL_BYTES = 16 * 2**20


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a write refused for lack of space."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def free_bytes(folder: Path | str) -> int:
    return shutil.disk_usage(folder).free


def is_nearly_full(folder: Path | str) -> bool:
    return free_bytes(folder) < NEARLY_FULL_BYTES


def full_message(folder: Path | str) -> str:
    """The job's error when the disk under ``folder`` (the app's data) filled up."""
    free_mb = free_bytes(folder) / 2**20
    return f"The disk holding the app's data is full: {free_mb:.0f} MB free; free space and resume."
