"""Reading a job's ``log.txt``: new lines as they come, or the last few."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_BYTES = 64 * 1024


class LogTail:
    """The complete lines a log file gained since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def read_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                block = handle.read()
        except FileNotFoundError:
            return []
        complete = block.rfind(b"\n") + 1
        self.offset += complete
        return block[:complete].decode("utf-8", "replace").splitlines()


def tail_lines(path: Path, count: int) -> list[str]:
    """The last ``count`` lines, reading at most the file's last 64 KiB."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            block = handle.read()
    except FileNotFoundError:
        return []
    lines = block.decode("utf-8", "replace").splitlines()
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line read is probably cut
    return lines[-count:]
