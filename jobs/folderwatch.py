"""Wait until a job writes to its folder or its process ends, without polling.

A runner relays a job's events and log as the job writes them. It used to
wake every 20 ms to look, which cost the worker a few hundredths of a core
for each running job, however quiet; on a 2-core machine that stole time
from the job's own compute threads (an evaluation measured up to 10%
slower than a plain loop, ``bench/classify_latency.py``), and an event
still waited 10 ms on average for the next look. ``FolderWatch`` blocks on
Linux's inotify for the folder and a pidfd for the process instead: the
runner wakes when something is written or the process ends, and sleeps
otherwise.

Where either cannot be had (not Linux, or the user's inotify instances,
``fs.inotify.max_user_instances``, all taken), ``wait`` sleeps the polling
interval instead and the runner looks as it did before: slower to notice
and costlier, never blind. A warning in the worker's log says so.

inotify sees only what this machine writes: a folder shared with other
machines (a job over several nodes) needs a timeout short enough for the
other machines' writes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import select
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

# linux/inotify.h: a file in the folder written, closed after writing,
# created or moved in (events.jsonl made, a log replaced).
IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
WATCHED = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
READ_BYTES = 64 * 1024


def _inotify(folder: Path) -> int:
    """A non-blocking inotify descriptor watching ``folder``; OSError when none can be had."""
    if not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, "inotify is Linux's")
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1 failed")
    if libc.inotify_add_watch(fd, os.fsencode(folder), WATCHED) < 0:
        error = ctypes.get_errno()
        os.close(fd)
        raise OSError(error, f"inotify_add_watch failed for {folder}")
    return fd


class FolderWatch:
    """``wait(timeout)`` returns when a file in ``folder`` is written, the
    process ``pid`` ends, or ``timeout`` seconds pass, whichever is first,
    but never sooner than ``min_gap`` seconds after the previous return: a
    job writing without pause is relayed in batches, not a wake-up a write."""

    def __init__(self, folder: Path, pid: int, min_gap: float, poll_seconds: float) -> None:
        self.min_gap, self.poll_seconds = min_gap, poll_seconds
        self.last_return = 0.0
        self._fds: list[int] = []
        try:
            self._fds.append(_inotify(folder))
            self._fds.append(os.pidfd_open(pid))
        except (OSError, AttributeError) as exc:  # AttributeError: os.pidfd_open is Linux's
            log.warning("watching %s by polling every %s s: %s", folder.name, poll_seconds, exc)
            self.close()

    @property
    def notified(self) -> bool:
        """Whether waits are woken by the kernel (False: they poll)."""
        return bool(self._fds)

    def wait(self, timeout: float) -> None:
        gap = self.min_gap - (time.monotonic() - self.last_return)
        if gap > 0:
            time.sleep(gap)
            timeout -= gap
        if not self._fds:
            time.sleep(max(0.0, min(timeout, self.poll_seconds)))
        elif timeout > 0:
            select.select(self._fds, [], [], timeout)
        self._drain()
        self.last_return = time.monotonic()

    def _drain(self) -> None:
        """Read the queued notifications: which file does not matter, the
        runner reads every file it relays from where it left off."""
        if not self._fds:
            return
        with contextlib.suppress(BlockingIOError):
            while os.read(self._fds[0], READ_BYTES):
                pass

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def __enter__(self) -> FolderWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
