"""Reading only the part of a job's ``events.jsonl`` that is needed: where
the events after a given ``seq`` begin, the last ``seq``, the last few
events. Each scans back from the end of the file, so it reads about as much
as there is to return, however long the job has run (a reconnecting stream
asks for the few events it missed; a page needs only where to start).

Only complete lines count: the last line may be still being written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainer import eventlog

CHUNK_BYTES = 64 * 1024


def _backwards(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(offset just past its line, event) for each complete line, last first."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        position = handle.seek(0, os.SEEK_END)
        head = b""  # read but not yet split: it may start inside a line
        trailing = True  # the piece after the last newline: empty, or a line still being written
        while position > 0:
            step = min(CHUNK_BYTES, position)
            position -= step
            handle.seek(position)
            head = handle.read(step) + head
            cut = 0 if position == 0 else head.find(b"\n") + 1
            if cut == 0 and position > 0:
                continue  # no line starts in what was read yet
            lines = head[cut:].split(b"\n")
            end = position + len(head)
            for line in reversed(lines):
                start = end - len(line)
                if not trailing and line.strip():
                    yield start + len(line) + 1, json.loads(line)
                trailing = False
                end = start - 1
            head = head[:cut]


def offset_after(folder: Path, seq: int) -> int:
    """The byte offset in the folder's event file where the events after ``seq`` begin."""
    for offset, event in _backwards(folder / eventlog.FILENAME):
        if event["seq"] <= seq:
            return offset
    return 0


def reader_after(folder: Path, seq: int) -> eventlog.Reader:
    """A reader of the events after ``seq``, starting where they begin."""
    reader = eventlog.Reader(folder, seq)
    reader.tail.offset = offset_after(folder, seq)
    return reader


def last_seq(folder: Path) -> int:
    return next((event["seq"] for _, event in _backwards(folder / eventlog.FILENAME)), 0)


def tail(folder: Path, count: int) -> list[dict[str, Any]]:
    """The last ``count`` events, oldest first."""
    found = []
    for _, event in _backwards(folder / eventlog.FILENAME):
        if len(found) == count:
            break
        found.append(event)
    return found[::-1]
