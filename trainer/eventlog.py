"""The job event log: ``events.jsonl`` in a job folder, one JSON object a line.

Every event has a sequence number (``seq``, from 1, no gaps), a wall-clock
time (``t``, seconds since the epoch), a ``kind`` and a ``data`` object. The
file is the record; the worker forwards new lines to the live bus. Several
processes may append (the job itself, its worker, the web app), so appends
take an exclusive ``flock`` and number the event under it.
"""

import fcntl
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from .jobfiles import EVENTS as FILENAME
from .linetail import LineTail


def _last_seq(handle: Any) -> int:
    """Read the sequence number of the file's last line, scanning back from the end."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return 0
    chunk = min(end, 4096)
    while True:
        handle.seek(end - chunk)
        tail = handle.read(chunk)
        lines = tail.rstrip(b"\n").split(b"\n")
        if len(lines) > 1 or chunk == end:
            return int(json.loads(lines[-1])["seq"])
        chunk = min(end, chunk * 4)


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None: JSON has no word
    for them, and the browser's JSON.parse refuses Python's."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def append(job_dir: Path | str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """Append one event and return it, numbered. Non-finite numbers (a
    diverged loss) are recorded as null. A write that fails (a full disk)
    raises and leaves the file as it was: a half-written line would break
    every later read."""
    path = Path(job_dir) / FILENAME
    with open(path, "a+b", buffering=0) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            event = {"seq": _last_seq(handle) + 1, "t": time.time(), "kind": kind, "data": finite(data)}
            end = handle.seek(0, os.SEEK_END)
            _write_whole(handle, json.dumps(event, separators=(",", ":")).encode() + b"\n", end)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return event


def _write_whole(handle: Any, line: bytes, end: int) -> None:
    """Write ``line`` at the file's ``end``, or cut the file back to ``end``."""
    try:
        written = 0
        while written < len(line):
            written += handle.write(line[written:])
    except OSError:
        os.ftruncate(handle.fileno(), end)
        raise


class Reader:
    """Reads a job's events incrementally: each ``read()`` returns the complete
    lines added since the last call, without re-reading the file."""

    def __init__(self, job_dir: Path | str, after_seq: int = 0) -> None:
        self.tail = LineTail(Path(job_dir) / FILENAME)
        self.after_seq = after_seq

    def read(self) -> list[dict[str, Any]]:
        events = []
        for line in self.tail.lines():
            event = json.loads(line)
            if event["seq"] > self.after_seq:
                events.append(event)
        if events:
            self.after_seq = events[-1]["seq"]
        return events


def read_all(job_dir: Path | str, after_seq: int = 0) -> list[dict[str, Any]]:
    return Reader(job_dir, after_seq).read()
