"""Reading a job's ``log.txt``: new lines as they come, or the last few,
as users see them (``shownpaths``: no server paths)."""

from __future__ import annotations

import os
from pathlib import Path

from trainer.linetail import LineTail

from .shownpaths import shown

TAIL_BYTES = 64 * 1024


class LogTail(LineTail):
    """The complete lines a log file gained since the last read, as text."""

    def read_lines(self) -> list[str]:
        return shown(self.read().decode("utf-8", "replace"), self.path.parent).splitlines()


def tail_lines(path: Path, count: int) -> list[str]:
    """The last ``count`` lines, reading at most the file's last 64 KiB."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            block = handle.read()
    except FileNotFoundError:
        return []
    lines = shown(block.decode("utf-8", "replace"), path.parent).splitlines()
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line read is probably cut
    return lines[-count:]
